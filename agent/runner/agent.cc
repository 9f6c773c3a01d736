#include "agent/runner/agent.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <set>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/kernel/ceiling_control.h"
#include "agent/kernel/ceiling_health.h"
#include "agent/kernel/flush_profile.h"
#include "agent/kernel/host_info.h"
#include "agent/kernel/monitor.h"
#include "agent/kernel/mounts.h"
#include "agent/kernel/reboot.h"
#include "agent/runner/agent_id.h"
#include "agent/runner/assignment_check.h"
#include "agent/runner/backoff.h"
#include "agent/runner/job_ceiling.h"
#include "agent/runner/paths.h"
#include "agent/runner/sample_batch.h"
#include "agent/runner/spool.h"
#include "agent/runner/state_lock.h"
#include "common/grpc_keepalive.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"
#include "tlbfleet/v1/agent.grpc.pb.h"

namespace tlbfleet::agent {
namespace {

using Stream = grpc::ClientReaderWriter<v1::AgentMessage, v1::ControllerMessage>;

// Keeps each SampleBatch far below gRPC's default 4 MiB message limit.
constexpr int kSamplesPerBatch = 1000;

// Escaped: these come from the controller, and a refused assignment is logged too.
std::string Ids(const v1::JobAssignment& a) {
  return absl::StrCat(
      "run=", paths::ValidLeaseId(a.run_id()) ? a.run_id() : Shown(a.run_id()), " job=", a.job_id(),
      " lease=", paths::ValidLeaseId(a.lease_id()) ? a.lease_id() : Shown(a.lease_id()));
}

// "SUCCEEDED" rather than "JOB_STATUS_SUCCEEDED", for log lines.
std::string StatusName(v1::JobStatus status) {
  std::string name = v1::JobStatus_Name(status);
  return name.rfind("JOB_STATUS_", 0) == 0 ? name.substr(11) : name;
}

v1::SpooledJob FailedRecord(const v1::JobAssignment& a, std::string error,
                            v1::JobStatus status = v1::JOB_STATUS_FAILED) {
  v1::SpooledJob record;
  *record.mutable_assignment() = a;
  v1::JobComplete* c = record.mutable_complete();
  c->set_lease_id(a.lease_id());
  c->set_job_id(a.job_id());
  c->set_status(status);
  c->set_error(std::move(error));
  return record;
}

// Not started for a reason of the agent's own (busy, rebooting, stopping): the controller
// re-queues the job instead of failing its run.
v1::SpooledJob RefusedRecord(const v1::JobAssignment& a, std::string why) {
  return FailedRecord(a, std::move(why), v1::JOB_STATUS_REFUSED);
}

}  // namespace

class Agent::Impl {
 public:
  Impl(AgentOptions options, std::string agent_id, Spool spool, StateDirLock lock,
       BootEntries boot_entries)
      : options_(std::move(options)),
        agent_id_(std::move(agent_id)),
        spool_(std::move(spool)),
        lock_(std::move(lock)),
        boot_entries_(std::move(boot_entries)),
        backoff_(options_.initial_backoff_seconds, options_.max_backoff_seconds) {
    policy_.workloads = options_.workloads;
    policy_.peer_networks = options_.peer_networks;
  }

  ~Impl() {
    std::unique_ptr<Job> job;
    {
      absl::MutexLock lock(&mu_);
      job = std::move(job_);
      if (job != nullptr && !job->done) job->cancel->Cancel("agent destroyed");
    }
    if (job != nullptr && job->thread.joinable()) job->thread.join();
    if (reboot_thread_.joinable()) reboot_thread_.join();
  }

  absl::Status Run();
  void Shutdown(const std::string& reason);
  State state() const {
    absl::MutexLock lock(&mu_);
    return state_;
  }
  const std::string& agent_id() const { return agent_id_; }
  AgentStatus status() const {
    AgentStatus status;
    {
      absl::MutexLock lock(&mu_);
      status.connected = connected_;
      status.job_running = JobRunningLocked();
      status.last_exit_status = last_exit_status_;
      status.reconnects = reconnects_;
      if (host_.ceiling_degraded())
        status.ceiling_degraded_reason = host_.ceiling_degraded_reason();
    }
    Spool::Usage usage = spool_.GetUsage();
    status.spool_records = usage.records;
    status.spool_bytes = usage.bytes;
    return status;
  }
  std::string ceiling_degraded_reason() const {
    absl::MutexLock lock(&mu_);
    return host_.ceiling_degraded() ? host_.ceiling_degraded_reason() : "";
  }

 private:
  // The current (or last) job. Owned by job_; its thread is joined before it is replaced.
  struct Job {
    v1::JobAssignment assignment;
    std::unique_ptr<CancelToken> cancel = std::make_unique<CancelToken>();
    std::thread thread;
    bool done = false;       // guarded by mu_
    bool abandoned = false;  // guarded by mu_; killed by Shutdown(): no result to report
  };

  absl::Status RunConnection(bool* welcomed);
  void Handle(const v1::ControllerMessage& message, bool* welcomed);
  void OnWelcome(const v1::Welcome& welcome);
  void OnAssignment(const v1::JobAssignment& assignment);
  void OnCancel(const v1::CancelJob& cancel);
  void OnReboot(const v1::RebootRequest& request);
  // The reboot thread: waits for the spool to drain, selects `boot_entry` (if any), then runs
  // the reboot command.
  void Reboot(const std::string& reason, const std::string& boot_entry);
  // A note to the controller that belongs to no lease (a failed reboot).
  void SendNote(const std::string& text);
  void SenderLoop(grpc::ClientContext* ctx);
  bool Send(const v1::AgentMessage& message);
  // Sends a finished job's samples and completion; `share_origin`: the controller accepts
  // SampleBatch.shared_origin (ShareOrigin).
  bool SendRecord(const v1::SpooledJob& record, bool share_origin);
  void JobThread(Job* job, const HostContext& host);
  // Spools `record` and queues it for sending; marks `job` (if any) done in the same step,
  // so a controller that reacts to the completion finds the agent idle.
  void FinishJob(const v1::SpooledJob& record, Job* job);
  void DropLease(const std::string& lease_id, const std::string& why);
  // True when the degraded-ceiling marker (ceiling_health.h) disagrees with the HostInfo the
  // controller has; the agent then reconnects, so its Hello carries the current state.
  bool CeilingHealthChanged();
  void UpdateStateLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool JobRunningLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return job_ != nullptr && !job_->done;
  }

  const AgentOptions options_;
  const std::string agent_id_;
  const Spool spool_;
  const StateDirLock lock_;  // held for the agent's life: one agent per state directory
  const BootEntries boot_entries_;
  AssignmentPolicy policy_;  // fixed after construction
  Backoff backoff_;          // used by Run() only

  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // signalled on any change below
  // --- guarded by mu_ ---
  State state_ ABSL_GUARDED_BY(mu_) = State::kRecovering;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool connected_ ABSL_GUARDED_BY(mu_) = false;  // Welcome received on the current stream
  bool conn_stop_ ABSL_GUARDED_BY(mu_) = false;  // the current stream is being torn down
  grpc::ClientContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
  unsigned heartbeat_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  bool accepts_shared_origin_ ABSL_GUARDED_BY(mu_) = false;  // the controller's Welcome
  v1::HostInfo host_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Job> job_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> unsent_ ABSL_GUARDED_BY(mu_);  // finished leases to (re)send
  // Records whose spool write failed (disk full?): sent from memory, lost on a crash.
  std::map<std::string, v1::SpooledJob> unspooled_ ABSL_GUARDED_BY(mu_);
  bool rebooting_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<int> last_exit_status_ ABSL_GUARDED_BY(mu_);  // AgentStatus
  uint64_t reconnects_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread reboot_thread_;  // started and joined by the stream reader and the destructor

  // --- guarded by write_mu_: gRPC allows one writer at a time ---
  absl::Mutex write_mu_;
  Stream* stream_ ABSL_GUARDED_BY(write_mu_) = nullptr;
};

const char* Agent::StateName(State state) {
  switch (state) {
    case State::kRecovering:
      return "recovering";
    case State::kConnecting:
      return "connecting";
    case State::kIdle:
      return "idle";
    case State::kRunning:
      return "running";
    case State::kStopping:
      return "stopping";
  }
  return "?";
}

void Agent::Impl::UpdateStateLocked() {
  State next = stopping_            ? State::kStopping
               : !connected_        ? State::kConnecting
               : JobRunningLocked() ? State::kRunning
                                    : State::kIdle;
  if (next == state_) return;
  std::string lease = JobRunningLocked() ? job_->assignment.lease_id() : "";
  spdlog::info("state {} -> {}{}{}", StateName(state_), StateName(next),
               lease.empty() ? "" : " lease=", lease);
  state_ = next;
  cv_.SignalAll();
}

absl::Status Agent::Impl::Run() {
  int attempt = 0;
  bool first_attempt = true;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
      UpdateStateLocked();
      if (!first_attempt) ++reconnects_;
      first_attempt = false;
    }
    ++attempt;
    spdlog::info("connecting to {} (attempt {}) agent={}", options_.controller, attempt, agent_id_);
    bool welcomed = false;
    absl::Status status = RunConnection(&welcomed);
    if (welcomed) {
      backoff_.Reset();
      attempt = 0;
    }
    absl::MutexLock lock(&mu_);
    if (stopping_) break;
    double delay = backoff_.NextDelaySeconds();
    spdlog::warn("{} {}: {}; retrying in {:.2f} s",
                 welcomed ? "lost the stream to" : "cannot connect to", options_.controller,
                 std::string(status.message()), delay);
    absl::Time until = absl::Now() + absl::Seconds(delay);
    while (!stopping_ && absl::Now() < until) cv_.WaitWithDeadline(&mu_, until);
  }

  std::unique_ptr<Job> job;
  {
    absl::MutexLock lock(&mu_);
    UpdateStateLocked();
    job = std::move(job_);
  }
  if (job != nullptr && job->thread.joinable()) job->thread.join();
  spdlog::info("stopped; {} lease(s) left in the spool for the next start",
               spool_.LoadAll().size());
  return absl::OkStatus();
}

void Agent::Impl::Shutdown(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  stopping_ = true;
  spdlog::info("shutting down: {}", reason);
  if (JobRunningLocked()) {
    spdlog::info("killing workload {} {}", job_->assignment.benchmark(), Ids(job_->assignment));
    job_->abandoned = true;
    job_->cancel->Cancel(absl::StrCat("agent shutting down (", reason, ")"));
  }
  if (ctx_ != nullptr) ctx_->TryCancel();
  UpdateStateLocked();
  cv_.SignalAll();
}

absl::Status Agent::Impl::RunConnection(bool* welcomed) {
  // Fresh every time: the ceiling's state (and after a reboot everything) may have changed.
  for (const std::string& e : EnsureKernelMounts(*options_.sysroot).errors) {
    spdlog::warn("{}", e);
  }
  absl::StatusOr<v1::HostInfo> host =
      CollectHostInfo(*options_.sysroot, options_.labels, options_.cpuid);
  if (!host.ok()) return host.status();
  ApplyCeilingHealth(
      ReadJobCeilingDegraded(paths::CeilingDegradedFile(options_.state_dir),
                             paths::CeilingJournalFile(options_.state_dir), host->boot_id()),
      *host);
  host->set_can_reboot(boot_entries_.CanReboot(options_.reboot_command));
  boot_entries_.Describe(&*host);
  host->set_netserver(options_.netserver);
  // A new channel per attempt, so each attempt really dials instead of waiting out gRPC's
  // own reconnect backoff inside an old channel.
  // Keepalive pings notice a half-open stream within kHalfOpenDetectionMs (grpc_keepalive.h).
  grpc::ChannelArguments args;
  SetAgentKeepalive(args);
  absl::StatusOr<std::shared_ptr<grpc::Channel>> made =
      MakeChannel(options_.controller, options_.tls, args);
  if (!made.ok()) return made.status();
  std::shared_ptr<grpc::Channel> channel = *std::move(made);
  std::unique_ptr<v1::AgentService::Stub> stub = v1::AgentService::NewStub(channel);
  grpc::ClientContext ctx;
  if (!options_.token.empty()) ctx.AddMetadata("authorization", "Bearer " + options_.token);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::CancelledError("stopping");
    host_ = *host;
    ctx_ = &ctx;
    conn_stop_ = false;
  }
  std::unique_ptr<Stream> stream = stub->Connect(&ctx);
  {
    absl::MutexLock lock(&write_mu_);
    stream_ = stream.get();
  }

  v1::AgentMessage hello_message;
  v1::Hello* hello = hello_message.mutable_hello();
  hello->set_protocol_version(v1::PROTOCOL_VERSION_1);
  hello->set_agent_id(agent_id_);
  *hello->mutable_host() = *host;
  for (const std::string& w : options_.workloads) hello->add_capabilities("workload:" + w);
  for (const std::string& m : MonitorNames()) hello->add_capabilities("monitor:" + m);
  {
    // Read before the spool is listed: a job that ends in between is then spooled (it is
    // spooled before it counts as done), so each lease is in one list or the other.
    absl::MutexLock lock(&mu_);
    if (JobRunningLocked()) hello->set_running_lease_id(job_->assignment.lease_id());
  }
  std::set<std::string> spooled_ids;
  for (const v1::SpooledLease& lease : Spool::Summarize(spool_.LoadAll())) {
    spooled_ids.insert(lease.lease_id());
    *hello->add_spooled() = lease;
  }
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [lease, record] : unspooled_) {
      if (spooled_ids.count(lease) == 0) *hello->add_spooled() = Spool::Summarize({record})[0];
    }
  }

  std::thread sender;
  if (Send(hello_message)) {
    sender = std::thread([this, &ctx] { SenderLoop(&ctx); });
  }
  v1::ControllerMessage message;
  while (stream->Read(&message)) Handle(message, welcomed);

  {
    absl::MutexLock lock(&mu_);
    conn_stop_ = true;
    connected_ = false;
    ctx_ = nullptr;
    UpdateStateLocked();
    cv_.SignalAll();
  }
  if (sender.joinable()) sender.join();
  {
    absl::MutexLock lock(&write_mu_);
    stream_ = nullptr;
  }
  grpc::Status status = stream->Finish();
  if (status.ok()) return absl::UnavailableError("the controller closed the stream");
  return absl::UnavailableError(
      absl::StrCat(status.error_message(), " (grpc code ", status.error_code(), ")"));
}

bool Agent::Impl::Send(const v1::AgentMessage& message) {
  absl::MutexLock lock(&write_mu_);
  return stream_ != nullptr && stream_->Write(message);
}

bool Agent::Impl::SendRecord(const v1::SpooledJob& record, bool share_origin) {
  const v1::JobAssignment& a = record.assignment();
  for (int from = 0; from < record.samples_size(); from += kSamplesPerBatch) {
    v1::AgentMessage message;
    v1::SampleBatch* batch = message.mutable_samples();
    batch->set_lease_id(a.lease_id());
    batch->set_job_id(a.job_id());
    int to = std::min(record.samples_size(), from + kSamplesPerBatch);
    for (int i = from; i < to; ++i) *batch->add_samples() = record.samples(i);
    if (share_origin) ShareOrigin(*batch);
    if (!Send(message)) return false;
  }
  v1::AgentMessage message;
  *message.mutable_complete() = record.complete();
  if (!Send(message)) return false;
  spdlog::info("sent {} sample(s) and completion {} {}", record.samples_size(),
               StatusName(record.complete().status()), Ids(a));
  return true;
}

// Per stream: waits for Welcome, then sends heartbeats and queued results. Ends when the
// stream is torn down; a failed write cancels the stream so the reader ends too.
void Agent::Impl::SenderLoop(grpc::ClientContext* ctx) {
  const absl::Time welcome_deadline = absl::Now() + absl::Seconds(options_.welcome_timeout_seconds);
  absl::Time next_heartbeat = absl::InfinitePast();
  absl::MutexLock lock(&mu_);
  while (!conn_stop_) {
    if (!connected_) {
      if (absl::Now() >= welcome_deadline) {
        spdlog::warn("no Welcome from {} within {} s; dropping the stream", options_.controller,
                     options_.welcome_timeout_seconds);
        ctx->TryCancel();
        return;
      }
      cv_.WaitWithDeadline(&mu_, welcome_deadline);
      continue;
    }
    bool ok = true;
    // The first heartbeat makes the controller dispatch to this agent, so the spool is
    // replayed before it; later heartbeats interleave with resends.
    const bool replaying = next_heartbeat == absl::InfinitePast() && !unsent_.empty();
    if (absl::Now() >= next_heartbeat && !replaying) {
      v1::AgentMessage message;
      v1::Heartbeat* heartbeat = message.mutable_heartbeat();
      heartbeat->set_state(JobRunningLocked() ? v1::AGENT_STATE_RUNNING
                           : rebooting_       ? v1::AGENT_STATE_REBOOTING
                                              : v1::AGENT_STATE_IDLE);
      if (JobRunningLocked()) heartbeat->set_lease_id(job_->assignment.lease_id());
      next_heartbeat = absl::Now() + absl::Seconds(heartbeat_seconds_);
      mu_.Unlock();
      if (CeilingHealthChanged()) {  // an operator cleared it: say so in a fresh Hello
        ctx->TryCancel();
        mu_.Lock();
        return;
      }
      ok = Send(message);
      mu_.Lock();
    } else if (!unsent_.empty()) {
      std::string lease = unsent_.front();
      unsent_.pop_front();
      std::optional<v1::SpooledJob> record;
      if (auto it = unspooled_.find(lease); it != unspooled_.end()) record = it->second;
      const bool share_origin = accepts_shared_origin_;
      mu_.Unlock();
      if (!record.has_value()) {
        absl::StatusOr<v1::SpooledJob> read = spool_.Read(lease);
        if (read.ok()) {
          record = *std::move(read);
        } else if (!absl::IsNotFound(read.status())) {  // NOT_FOUND: acked meanwhile
          spdlog::error("cannot resend lease={}: {}", lease, std::string(read.status().message()));
        }
      }
      if (record.has_value()) ok = SendRecord(*record, share_origin);
      mu_.Lock();
    } else {
      cv_.WaitWithDeadline(&mu_, next_heartbeat);
    }
    if (!ok) {
      spdlog::warn("write to {} failed; dropping the stream", options_.controller);
      ctx->TryCancel();
      return;
    }
  }
}

void Agent::Impl::Handle(const v1::ControllerMessage& message, bool* welcomed) {
  switch (message.body_case()) {
    case v1::ControllerMessage::kWelcome:
      *welcomed = true;
      OnWelcome(message.welcome());
      break;
    case v1::ControllerMessage::kReject:
      spdlog::warn("controller {} rejected this agent: {}", options_.controller,
                   message.reject().reason());
      break;
    case v1::ControllerMessage::kAssignment:
      OnAssignment(message.assignment());
      break;
    case v1::ControllerMessage::kSampleAck: {
      const v1::SampleAck& ack = message.sample_ack();
      if (ack.rejected()) {
        DropLease(ack.lease_id(), absl::StrCat("samples rejected: ", ack.reason()));
      } else {
        spdlog::debug("samples through seq {} stored lease={}", ack.through_seq(), ack.lease_id());
      }
      break;
    }
    case v1::ControllerMessage::kCompletionAck: {
      const v1::CompletionAck& ack = message.completion_ack();
      DropLease(ack.lease_id(), ack.rejected() ? absl::StrCat("completion rejected: ", ack.reason())
                                               : std::string("completion acked"));
      break;
    }
    case v1::ControllerMessage::kCancel:
      OnCancel(message.cancel());
      break;
    case v1::ControllerMessage::kReboot:
      OnReboot(message.reboot());
      break;
    case v1::ControllerMessage::BODY_NOT_SET:
      spdlog::warn("ignoring an empty message from {}", options_.controller);
      break;
  }
}

void Agent::Impl::OnWelcome(const v1::Welcome& welcome) {
  std::vector<v1::SpooledJob> spooled = spool_.LoadAll();
  absl::MutexLock lock(&mu_);
  connected_ = true;
  heartbeat_seconds_ = welcome.heartbeat_seconds() > 0 ? welcome.heartbeat_seconds()
                                                       : options_.default_heartbeat_seconds;
  accepts_shared_origin_ = welcome.accepts_shared_origin();
  std::set<std::string> resend;
  for (const v1::SpooledJob& job : spooled) resend.insert(job.assignment().lease_id());
  for (const auto& [lease, record] : unspooled_) resend.insert(lease);
  unsent_.assign(resend.begin(), resend.end());
  spdlog::info(
      "welcomed by controller {} version {} (heartbeat {} s, lease {} s); "
      "resending {} finished lease(s)",
      options_.controller, welcome.controller_version(), heartbeat_seconds_,
      welcome.lease_seconds(), unsent_.size());
  UpdateStateLocked();
  cv_.SignalAll();
}

void Agent::Impl::OnAssignment(const v1::JobAssignment& a) {
  // Checked before anything else, even before it is logged: its strings come from the wire.
  const absl::Status checked =
      options_.check_assignments ? CheckAssignment(a, policy_) : absl::OkStatus();
  if (checked.ok()) {
    std::string param =
        a.param_name().empty() ? "" : absl::StrCat(" ", a.param_name(), "=", a.param_value());
    // A netperf job the controller gave a peer: which netserver it dials.
    std::string peer;
    if (!a.peer_host().empty()) {
      auto server = a.params().find("server");
      auto port = a.params().find("port");
      peer = absl::StrCat(" peer=", a.peer_host(), " (",
                          server == a.params().end() ? "?" : server->second, " port ",
                          port == a.params().end() ? "?" : port->second, ")");
    }
    spdlog::info("assignment {} arm={}{} iteration={} ceiling='{}' timeout={}s{} {}", a.benchmark(),
                 a.arm(), param, a.iteration(), a.ceiling(), a.timeout_seconds(), peer, Ids(a));
  }
  if (!paths::ValidLeaseId(a.lease_id())) {
    // Cannot be spooled under that name; answer at once.
    std::string error =
        absl::StrCat("lease id ", Shown(a.lease_id()), " is not usable by the agent");
    spdlog::error("{} {}", error, Ids(a));
    v1::AgentMessage message;
    *message.mutable_complete() = FailedRecord(a, error).complete();
    Send(message);
    return;
  }
  std::optional<v1::SpooledJob> refusal;
  std::unique_ptr<Job> previous;
  {
    absl::MutexLock lock(&mu_);
    if (JobRunningLocked() && job_->assignment.lease_id() == a.lease_id()) {
      spdlog::info("lease already running; ignoring the repeated assignment {}", Ids(a));
      return;
    }
    if (unspooled_.count(a.lease_id()) > 0 || spool_.Read(a.lease_id()).ok()) {
      spdlog::info("lease already finished; resending its result {}", Ids(a));
      unsent_.push_back(a.lease_id());
      cv_.SignalAll();
      return;
    }
    if (!checked.ok()) {
      refusal = FailedRecord(a, absl::StrCat("assignment refused: ", checked.message()));
    } else if (stopping_) {
      refusal = RefusedRecord(a, "agent is shutting down");
    } else if (rebooting_) {
      refusal = RefusedRecord(a, "agent is rebooting");
    } else if (JobRunningLocked()) {
      refusal =
          RefusedRecord(a, absl::StrCat("agent is busy with lease ", job_->assignment.lease_id()));
    } else if (!options_.workloads.empty() &&
               std::find(options_.workloads.begin(), options_.workloads.end(), a.benchmark()) ==
                   options_.workloads.end()) {
      refusal = FailedRecord(
          a, absl::StrCat("workload '", a.benchmark(), "' is not in this agent's catalogue (",
                          absl::StrJoin(options_.workloads, ", "), ")"));
    } else if (std::optional<std::string> wrong_boot = boot_entries_.CheckJob(a, host_)) {
      refusal = FailedRecord(a, *wrong_boot);
    } else {
      previous = std::move(job_);
      job_ = std::make_unique<Job>();
      job_->assignment = a;
      job_->thread = std::thread(&Impl::JobThread, this, job_.get(), HostContext{agent_id_, host_});
      UpdateStateLocked();
    }
  }
  if (previous != nullptr && previous->thread.joinable()) previous->thread.join();
  if (refusal.has_value()) {
    spdlog::warn("refusing: {} {}", refusal->complete().error(), Ids(a));
    FinishJob(*refusal, nullptr);
  }
}

void Agent::Impl::OnCancel(const v1::CancelJob& cancel) {
  absl::MutexLock lock(&mu_);
  if (JobRunningLocked() && job_->assignment.lease_id() == cancel.lease_id()) {
    spdlog::info("cancelling workload {} ({}) {}", job_->assignment.benchmark(), cancel.reason(),
                 Ids(job_->assignment));
    job_->cancel->Cancel(absl::StrCat("cancelled by the controller: ", cancel.reason()));
  } else {
    spdlog::info("cancel of lease={} ignored: not running", cancel.lease_id());
  }
}

void Agent::Impl::SendNote(const std::string& text) {
  v1::AgentMessage message;
  message.mutable_progress()->set_message(text);
  Send(message);
}

void Agent::Impl::OnReboot(const v1::RebootRequest& request) {
  if (absl::Status s = boot_entries_.CheckRebootable(request.boot_entry(), options_.reboot_command);
      !s.ok()) {
    spdlog::warn("controller asked for a reboot ({}), but {}", request.reason(),
                 std::string(s.message()));
    SendNote(std::string(s.message()));
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (rebooting_) return;
    if (JobRunningLocked()) {
      spdlog::warn("reboot request ignored: lease {} is running", job_->assignment.lease_id());
      return;
    }
    if (!request.boot_id().empty() && request.boot_id() != host_.boot_id()) {
      spdlog::info("reboot request for boot {} ignored: this is boot {}", request.boot_id(),
                   host_.boot_id());
      return;
    }
    rebooting_ = true;
  }
  if (reboot_thread_.joinable()) reboot_thread_.join();  // a previous, failed attempt
  reboot_thread_ = std::thread(&Impl::Reboot, this, request.reason(), request.boot_entry());
}

void Agent::Impl::Reboot(const std::string& reason, const std::string& boot_entry) {
  // Results not yet acked would survive on a disk spool, but not in a tmpfs (a microVM's
  // initramfs): give the controller time to ack them first.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  size_t pending = 0;
  {
    absl::MutexLock lock(&mu_);
    for (;;) {
      pending = spool_.LoadAll().size() + unspooled_.size();
      if ((pending == 0 && unsent_.empty()) || stopping_ || absl::Now() >= deadline) break;
      cv_.WaitWithTimeout(&mu_, absl::Milliseconds(200));
    }
    if (stopping_) {
      rebooting_ = false;
      return;
    }
  }
  if (pending > 0) {
    spdlog::warn("rebooting with {} result(s) not yet acknowledged; they stay in the spool",
                 pending);
  }
  std::string command = options_.reboot_command;
  absl::Status started = absl::OkStatus();
  if (!boot_entry.empty()) {
    std::string boot_id;
    {
      absl::MutexLock lock(&mu_);
      boot_id = host_.boot_id();
    }
    absl::StatusOr<std::string> selected =
        boot_entries_.Select(boot_entry, boot_id, options_.reboot_command);
    if (selected.ok()) {
      command = *selected;
      spdlog::info("next boot: entry {}", boot_entry);
    } else {
      started = selected.status();
    }
  }
  if (started.ok()) {
    spdlog::info("rebooting ({}) with: {}", reason, command);
    spdlog::default_logger()->flush();
    started = StartReboot(command);
  }
  if (started.ok()) {
    // The host is going down; if it has not after the grace period, the command lied.
    absl::MutexLock lock(&mu_);
    const absl::Time gone_by = absl::Now() + absl::Seconds(options_.reboot_grace_seconds);
    while (!stopping_ && absl::Now() < gone_by) cv_.WaitWithDeadline(&mu_, gone_by);
    if (stopping_) return;
    started = absl::DeadlineExceededError(
        absl::StrCat("the reboot command succeeded but the host was still up ",
                     options_.reboot_grace_seconds, " s later"));
  }
  spdlog::error("reboot failed: {}", started.ToString());
  SendNote(absl::StrCat("reboot failed: ", std::string(started.message())));
  absl::MutexLock lock(&mu_);
  rebooting_ = false;
}

void Agent::Impl::JobThread(Job* job, const HostContext& host) {
  JobOptions options;
  options.sysroot = options_.sysroot;
  options.argv_for = options_.argv_for;
  options.ceiling_journal = paths::CeilingJournalFile(options_.state_dir);
  options.ceiling_degraded = paths::CeilingDegradedFile(options_.state_dir);
  const std::string lease = job->assignment.lease_id();
  options.progress = [this, lease](const std::string& text) {
    v1::AgentMessage message;
    message.mutable_progress()->set_lease_id(lease);
    message.mutable_progress()->set_message(text);
    Send(message);  // best effort: a note, not a result
  };
  options.on_child_exit = [this](const ChildResult& result) {
    int status = result.outcome == ChildResult::Outcome::kExited ? result.exit_code
                 : result.signal > 0                             ? 128 + result.signal
                                                                 : -1;
    absl::MutexLock lock(&mu_);
    last_exit_status_ = status;
  };
  v1::SpooledJob record = RunJob(job->assignment, host, options, job->cancel.get());
  {
    // A job cut short because the agent stops is not a result: nothing is spooled, and
    // the controller re-queues the job when the lease expires.
    absl::MutexLock lock(&mu_);
    if (job->abandoned) {
      spdlog::info(
          "job abandoned by shutdown after {:.2f}s; the controller re-queues it when "
          "its lease expires {}",
          record.complete().elapsed_seconds(), Ids(job->assignment));
      job->done = true;
      UpdateStateLocked();
      return;
    }
  }
  if (CeilingHealthChanged()) {
    // The restore failed: the controller must learn that this host takes no ceiling jobs
    // before it learns that the host is free. The record is resent after the next Welcome.
    spdlog::error("the flush ceiling is degraded; reconnecting to report it {}",
                  Ids(job->assignment));
    absl::MutexLock lock(&mu_);
    if (ctx_ != nullptr) ctx_->TryCancel();
  }
  FinishJob(record, job);
}

bool Agent::Impl::CeilingHealthChanged() {
  std::string boot_id;
  bool degraded = false;
  {
    absl::MutexLock lock(&mu_);
    boot_id = host_.boot_id();
    degraded = host_.ceiling_degraded();
  }
  if (boot_id.empty()) return false;
  // Also a degraded state whose marker could not be written (job_ceiling.h).
  return ReadJobCeilingDegraded(paths::CeilingDegradedFile(options_.state_dir),
                                paths::CeilingJournalFile(options_.state_dir), boot_id)
             .has_value() != degraded;
}

void Agent::Impl::FinishJob(const v1::SpooledJob& record, Job* job) {
  const v1::JobAssignment& a = record.assignment();
  const v1::JobComplete& c = record.complete();
  spdlog::info("job finished {} samples={} elapsed={:.2f}s{}{} {}", StatusName(c.status()),
               c.sample_count(), c.elapsed_seconds(),
               c.error().empty() ? "" : " error: ", c.error(), Ids(a));
  absl::Status spooled = spool_.Write(record);
  if (!spooled.ok()) {
    spdlog::error("cannot spool the result (keeping it in memory only): {} {}",
                  std::string(spooled.message()), Ids(a));
  }
  absl::MutexLock lock(&mu_);
  if (!spooled.ok()) unspooled_[a.lease_id()] = record;
  if (job != nullptr) job->done = true;
  unsent_.push_back(a.lease_id());
  UpdateStateLocked();
  cv_.SignalAll();
}

void Agent::Impl::DropLease(const std::string& lease_id, const std::string& why) {
  absl::Status removed = spool_.Remove(lease_id);
  absl::MutexLock lock(&mu_);
  unspooled_.erase(lease_id);
  unsent_.erase(std::remove(unsent_.begin(), unsent_.end(), lease_id), unsent_.end());
  if (removed.ok()) {
    spdlog::info("{}; spool dropped lease={}", why, lease_id);
  } else {
    spdlog::error("{}; cannot delete spool: {} lease={}", why, std::string(removed.message()),
                  lease_id);
  }
}

// --- Agent -----------------------------------------------------------------------------------

Agent::Agent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Agent::~Agent() = default;

absl::StatusOr<std::unique_ptr<Agent>> Agent::Create(AgentOptions options) {
  if (options.controller.empty()) return absl::InvalidArgumentError("no controller address");
  if (options.state_dir.empty()) return absl::InvalidArgumentError("no state directory");
  if (options.sysroot == nullptr) return absl::InvalidArgumentError("no sysroot");
  // Before anything in the directory is read or written.
  absl::StatusOr<StateDirLock> lock = StateDirLock::Acquire(options.state_dir);
  if (!lock.ok()) return lock.status();
  absl::StatusOr<std::string> id = LoadOrCreateAgentId(options.state_dir);
  if (!id.ok()) return id.status();
  absl::StatusOr<Spool> spool = Spool::Open(options.state_dir);
  if (!spool.ok()) return spool.status();
  MountReport mounts = EnsureKernelMounts(*options.sysroot);
  for (const std::string& m : mounts.mounted) spdlog::info("mounted {}", m);
  for (const std::string& e : mounts.errors) spdlog::warn("{}", e);
  if (options.sysroot->root().empty()) {
    // A crashed agent's flush_profile recording would otherwise stay in tracefs.
    if (int n = CleanStaleTraceInstances(); n > 0) {
      spdlog::info("removed {} stale tracefs instance(s) of a previous agent", n);
    }
  }
  absl::StatusOr<std::string> boot_id =
      options.sysroot->ReadTrimmed("/proc/sys/kernel/random/boot_id");
  if (!boot_id.ok()) return boot_id.status();
  CeilingRecovery recovery =
      RecoverCeiling(*options.sysroot, paths::CeilingJournalFile(options.state_dir), *boot_id);
  if (recovery.outcome == CeilingRecovery::Outcome::kRestoreFailed ||
      recovery.outcome == CeilingRecovery::Outcome::kCorrupt) {
    spdlog::error(
        "ceiling recovery: {}; this host takes no ceiling jobs until a reboot or "
        "`tlbfleet-agent ceiling-known-good`",
        recovery.detail);
    absl::Status marked = MarkCeilingDegraded(paths::CeilingDegradedFile(options.state_dir),
                                              *boot_id, recovery.detail);
    if (!marked.ok()) return marked;
  } else {
    spdlog::info("ceiling recovery: {}", recovery.detail);
  }
  absl::StatusOr<BootEntries> boot_entries =
      BootEntries::Load(options.boot_entries, options.state_dir, *options.sysroot);
  if (!boot_entries.ok()) return boot_entries.status();
  if (!boot_entries->empty()) {
    spdlog::info(
        "boot entries: this boot is {}{}",
        boot_entries->current().empty() ? "no entry" : boot_entries->current(),
        boot_entries->error().empty() ? "" : absl::StrCat(" (", boot_entries->error(), ")"));
  }
  std::vector<std::string> corrupt;
  std::vector<v1::SpooledJob> spooled = spool->LoadAll(&corrupt);
  for (const std::string& reason : corrupt) spdlog::error("corrupt spool record: {}", reason);
  spdlog::info("agent {} recovering from {}: {} finished lease(s) in the spool, {} corrupt", *id,
               options.state_dir, spooled.size(), corrupt.size());
  return std::unique_ptr<Agent>(new Agent(std::make_unique<Impl>(
      std::move(options), *id, *std::move(spool), *std::move(lock), *std::move(boot_entries))));
}

absl::Status Agent::Run() { return impl_->Run(); }
void Agent::Shutdown(const std::string& reason) { impl_->Shutdown(reason); }
Agent::State Agent::state() const { return impl_->state(); }
AgentStatus Agent::status() const { return impl_->status(); }
const std::string& Agent::agent_id() const { return impl_->agent_id(); }
std::string Agent::ceiling_degraded_reason() const { return impl_->ceiling_degraded_reason(); }

}  // namespace tlbfleet::agent
