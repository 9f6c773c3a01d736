#include "agent/runner/outbox.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "agent/runner/job_log.h"
#include "agent/runner/sample_batch.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::agent {

void Outbox::Keep(const v1::SpooledJob& record) {
  absl::Status spooled = spool_.Write(record);
  if (spooled.ok()) return;
  spdlog::error("cannot spool the result (keeping it in memory only): {} {}",
                std::string(spooled.message()), JobLogIds(record.assignment()));
  absl::MutexLock lock(&mu_);
  unspooled_[record.assignment().lease_id()] = record;
}

void Outbox::Queue(const std::string& lease_id) {
  {
    absl::MutexLock lock(&mu_);
    queue_.push_back(lease_id);
  }
  NotifyQueued();
}

bool Outbox::Requeue(const std::string& lease_id) {
  bool held = false;
  {
    absl::MutexLock lock(&mu_);
    held = unspooled_.count(lease_id) > 0;
  }
  if (!held && !spool_.Read(lease_id).ok()) return false;
  {
    absl::MutexLock lock(&mu_);
    queue_.push_back(lease_id);
  }
  NotifyQueued();
  return true;
}

size_t Outbox::QueueAllForResend() {
  std::vector<v1::SpooledJob> spooled = spool_.LoadAll();
  size_t queued = 0;
  {
    absl::MutexLock lock(&mu_);
    std::set<std::string> resend;
    for (const v1::SpooledJob& job : spooled) resend.insert(job.assignment().lease_id());
    for (const auto& [lease, record] : unspooled_) resend.insert(lease);
    queue_.assign(resend.begin(), resend.end());
    queued = queue_.size();
  }
  NotifyQueued();
  return queued;
}

bool Outbox::HasQueued() const {
  absl::MutexLock lock(&mu_);
  return !queue_.empty();
}

std::optional<v1::SpooledJob> Outbox::PopNext() {
  std::string lease;
  {
    absl::MutexLock lock(&mu_);
    if (queue_.empty()) return std::nullopt;
    lease = queue_.front();
    queue_.pop_front();
    if (auto it = unspooled_.find(lease); it != unspooled_.end()) return it->second;
  }
  absl::StatusOr<v1::SpooledJob> read = spool_.Read(lease);
  if (read.ok()) return *std::move(read);
  if (!absl::IsNotFound(read.status())) {  // NOT_FOUND: acked meanwhile
    spdlog::error("cannot resend lease={}: {}", lease, std::string(read.status().message()));
  }
  return std::nullopt;
}

std::vector<v1::SpooledLease> Outbox::Summaries() const {
  std::vector<v1::SpooledLease> summaries = Spool::Summarize(spool_.LoadAll());
  std::set<std::string> spooled_ids;
  for (const v1::SpooledLease& lease : summaries) spooled_ids.insert(lease.lease_id());
  absl::MutexLock lock(&mu_);
  for (const auto& [lease, record] : unspooled_) {
    if (spooled_ids.count(lease) == 0) summaries.push_back(Spool::Summarize({record})[0]);
  }
  return summaries;
}

void Outbox::OnSampleAck(const v1::SampleAck& ack) {
  if (ack.rejected()) {
    Drop(ack.lease_id(), absl::StrCat("samples rejected: ", ack.reason()));
  } else {
    spdlog::debug("samples through seq {} stored lease={}", ack.through_seq(), ack.lease_id());
  }
}

void Outbox::OnCompletionAck(const v1::CompletionAck& ack) {
  Drop(ack.lease_id(), ack.rejected() ? absl::StrCat("completion rejected: ", ack.reason())
                                      : std::string("completion acked"));
}

Outbox::Backlog Outbox::Pending() const {
  Backlog backlog;
  backlog.spooled = spool_.LoadAll().size();
  absl::MutexLock lock(&mu_);
  backlog.in_memory = unspooled_.size();
  backlog.queued = queue_.size();
  return backlog;
}

void Outbox::Drop(const std::string& lease_id, const std::string& why) {
  absl::Status removed = spool_.Remove(lease_id);
  {
    absl::MutexLock lock(&mu_);
    unspooled_.erase(lease_id);
    queue_.erase(std::remove(queue_.begin(), queue_.end(), lease_id), queue_.end());
  }
  if (removed.ok()) {
    spdlog::info("{}; spool dropped lease={}", why, lease_id);
  } else {
    spdlog::error("{}; cannot delete spool: {} lease={}", why, std::string(removed.message()),
                  lease_id);
  }
}

void Outbox::NotifyQueued() const {
  if (on_queued_) on_queued_();
}

bool WriteRecord(const v1::SpooledJob& record, bool share_origin,
                 const std::function<bool(const v1::AgentMessage&)>& write) {
  const v1::JobAssignment& a = record.assignment();
  for (int from = 0; from < record.samples_size(); from += kSamplesPerBatch) {
    v1::AgentMessage message;
    v1::SampleBatch* batch = message.mutable_samples();
    batch->set_lease_id(a.lease_id());
    batch->set_job_id(a.job_id());
    int to = std::min(record.samples_size(), from + kSamplesPerBatch);
    for (int i = from; i < to; ++i) *batch->add_samples() = record.samples(i);
    if (share_origin) ShareOrigin(*batch);
    if (!write(message)) return false;
  }
  v1::AgentMessage message;
  *message.mutable_complete() = record.complete();
  if (!write(message)) return false;
  spdlog::info("sent {} sample(s) and completion {} {}", record.samples_size(),
               JobStatusName(record.complete().status()), JobLogIds(a));
  return true;
}

}  // namespace tlbfleet::agent
