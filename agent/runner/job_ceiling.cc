#include "agent/runner/job_ceiling.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/kernel/ceiling.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::agent {
namespace {

constexpr int64_t kUnreadable = -1;

std::string CeilingText(int64_t v) { return v == kUnreadable ? "unreadable" : absl::StrCat(v); }

// Degraded states whose marker could not be written, by marker path: for the life of this
// process, which is at most this boot's.
struct UnwrittenMarker {
  CeilingDegraded degraded;
  std::string journal;
};
absl::Mutex unwritten_mu;
std::map<std::string, UnwrittenMarker>& Unwritten() ABSL_EXCLUSIVE_LOCKS_REQUIRED(unwritten_mu) {
  static auto* markers = new std::map<std::string, UnwrittenMarker>;
  return *markers;
}

}  // namespace

std::optional<CeilingDegraded> ReadJobCeilingDegraded(const std::string& marker,
                                                      const std::string& journal,
                                                      const std::string& boot_id) {
  if (std::optional<CeilingDegraded> on_disk = ReadCeilingDegraded(marker, boot_id)) {
    return on_disk;
  }
  absl::MutexLock lock(&unwritten_mu);
  auto it = Unwritten().find(marker);
  if (it == Unwritten().end()) return std::nullopt;
  if (it->second.degraded.boot_id != boot_id) return std::nullopt;  // a reboot reset it
  // The journal goes once the ceiling is known good again (the operator's word); an
  // unreadable one means nothing of the sort.
  if (!it->second.journal.empty() &&
      absl::IsNotFound(ReadCeilingJournal(it->second.journal).status())) {
    Unwritten().erase(it);
    return std::nullopt;
  }
  return it->second.degraded;
}

JobCeiling::JobCeiling(JobCeilingOptions options)
    : options_(std::move(options)),
      changer_(*options_.sysroot, options_.journal, options_.boot_id) {}

JobCeiling::~JobCeiling() {
  if (begun_ && !ended_) {
    Outcome o = End();
    if (!o.error.empty()) spdlog::error("{} {}", o.error, options_.ids);
  }
  StopWatcher();
}

absl::Status JobCeiling::Begin(std::string_view spec_text) {
  const std::string spec(spec_text);
  const Sysroot& sysroot = *options_.sysroot;
  if (spec.empty()) {
    // Observe only. Without a readable ceiling there is nothing to claim or to protect.
    absl::StatusOr<int64_t> now = ReadCeiling(sysroot);
    if (!now.ok()) return absl::OkStatus();
    absl::StatusOr<std::unique_ptr<CeilingLock>> lock = CeilingLock::Acquire(
        sysroot, CeilingLock::Mode::kShared, options_.journal, options_.boot_id);
    if (absl::IsUnavailable(lock.status())) {
      return absl::UnavailableError(
          absl::StrCat("cannot measure under a known flush ceiling: ", lock.status().message()));
    }
    if (lock.ok()) {
      lock_ = *std::move(lock);
    } else {
      spdlog::warn("observing the flush ceiling without the host lock: {} {}",
                   std::string(lock.status().message()), options_.ids);
    }
    // Read again under the lock: a holder that just released it may have changed it.
    now = ReadCeiling(sysroot);
    if (!now.ok()) return absl::OkStatus();
    expected_ = *now;
  } else {
    absl::StatusOr<CeilingSpec> parsed = ParseCeilingSpec(spec);
    if (!parsed.ok()) return parsed.status();
    if (!options_.degraded_marker.empty()) {
      if (std::optional<CeilingDegraded> d = ReadJobCeilingDegraded(
              options_.degraded_marker, options_.journal, options_.boot_id)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "ceiling ", spec, " requested but this host's flush ceiling is degraded (", d->reason,
            "); it takes no ceiling jobs until a reboot or `tlbfleet-agent ceiling-known-good "
            "--value N`"));
      }
    }
    v1::CeilingInfo probe = ProbeCeiling(sysroot);
    if (!probe.writable() || !probe.readable()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "ceiling ", spec,
          " requested but the flush ceiling is not writable on this host: ", probe.reason()));
    }
    absl::StatusOr<std::unique_ptr<CeilingLock>> lock = CeilingLock::Acquire(
        sysroot, CeilingLock::Mode::kExclusive, options_.journal, options_.boot_id);
    if (!lock.ok()) {
      return absl::Status(lock.status().code(), absl::StrCat("cannot set the flush ceiling to ",
                                                             spec, ": ", lock.status().message()));
    }
    lock_ = *std::move(lock);
    absl::StatusOr<int64_t> applied = changer_.Apply(spec);
    if (!applied.ok()) {
      absl::Status restored = changer_.Restore();
      const bool unknown = absl::IsDataLoss(applied.status());
      std::string unmarked;  // why the marker could not be written, for the job's error
      if ((unknown || !restored.ok()) && !options_.degraded_marker.empty()) {
        unmarked = MarkDegraded(unknown ? applied.status().message() : restored.message());
      }
      lock_.reset();
      std::string error(applied.status().message());
      if (!restored.ok()) absl::StrAppend(&error, "; ", restored.message());
      if (!unmarked.empty()) absl::StrAppend(&error, "; ", unmarked);
      return absl::Status(applied.status().code(), error);
    }
    applied_ = true;
    expected_ = *applied;
  }
  begun_ = true;
  started_ = absl::Now();
  watcher_ = std::thread([this] { Watch(); });
  return absl::OkStatus();
}

void JobCeiling::Watch() {
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    mu_.Unlock();
    absl::StatusOr<int64_t> now = ReadCeiling(*options_.sysroot);
    int64_t value = now.ok() ? *now : kUnreadable;
    mu_.Lock();
    if (value != *expected_ && !seen_.has_value()) {
      seen_ = value;
      seen_at_ = absl::Now() - started_;
    }
    cv_.WaitWithTimeout(&mu_, options_.poll);
  }
}

void JobCeiling::StopWatcher() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    cv_.SignalAll();
  }
  if (watcher_.joinable()) watcher_.join();
}

std::string JobCeiling::MarkDegraded(absl::string_view why) {
  CeilingDegraded degraded{options_.boot_id, absl::StrCat(why, " (", options_.ids, ")")};
  absl::Status marked =
      MarkCeilingDegraded(options_.degraded_marker, degraded.boot_id, degraded.reason);
  if (marked.ok()) return "";
  // Losing the state would let the next ceiling job measure whatever was left behind.
  spdlog::error(
      "cannot write the degraded-ceiling marker {}: {}; this agent keeps the host degraded in "
      "memory for this boot {}",
      options_.degraded_marker, std::string(marked.message()), options_.ids);
  {
    absl::MutexLock lock(&unwritten_mu);
    Unwritten()[options_.degraded_marker] = UnwrittenMarker{degraded, options_.journal};
  }
  return absl::StrCat("the degraded marker ", options_.degraded_marker, " cannot be written (",
                      marked.message(),
                      "): only this agent process remembers that the host is degraded");
}

JobCeiling::Outcome JobCeiling::End() {
  Outcome out;
  out.applied = applied_;
  if (ended_) return out;
  ended_ = true;
  if (!begun_) {
    lock_.reset();
    return out;
  }
  StopWatcher();
  absl::StatusOr<int64_t> after = ReadCeiling(*options_.sysroot);
  const int64_t after_value = after.ok() ? *after : kUnreadable;
  std::optional<int64_t> seen;
  absl::Duration seen_at;
  {
    absl::MutexLock lock(&mu_);
    seen = seen_;
    seen_at = seen_at_;
  }
  const int64_t expected = *expected_;
  const std::string what = applied_ ? absl::StrCat("set to ", expected)
                                    : absl::StrCat("read as ", expected, " before the workload");
  if (seen.has_value()) {
    out.error = absl::StrFormat(
        "the flush ceiling changed while the workload ran: %s, it read %s %.1f s later and %s "
        "after the workload; the samples cannot say which ceiling they measured",
        what, CeilingText(*seen), absl::ToDoubleSeconds(seen_at), CeilingText(after_value));
  } else if (after_value != expected) {
    out.error = absl::StrCat("the flush ceiling changed while the workload ran: ", what,
                             ", it read ", CeilingText(after_value),
                             " after the workload; the samples cannot say which ceiling they "
                             "measured");
  } else {
    out.observed = true;
  }
  out.ceiling = out.observed || applied_ ? std::optional<int64_t>(expected) : std::nullopt;

  if (applied_) {
    absl::Status restored = changer_.Restore();
    if (!restored.ok()) {
      out.degraded = !options_.degraded_marker.empty();
      const std::string unmarked = out.degraded ? MarkDegraded(restored.message()) : "";
      out.error = absl::StrCat(out.error, out.error.empty() ? "" : "; ", restored.message(),
                               out.degraded ? "; this host takes no ceiling jobs until a "
                                              "reboot or `tlbfleet-agent ceiling-known-good`"
                                            : "",
                               unmarked.empty() ? "" : "; ", unmarked);
    }
  }
  lock_.reset();
  return out;
}

}  // namespace tlbfleet::agent
