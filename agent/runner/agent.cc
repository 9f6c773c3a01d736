#include "agent/runner/agent.h"

#include <algorithm>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "agent/kernel/ceiling_control.h"
#include "agent/kernel/ceiling_health.h"
#include "agent/kernel/flush_profile.h"
#include "agent/kernel/host_info.h"
#include "agent/kernel/monitor.h"
#include "agent/kernel/mounts.h"
#include "agent/runner/agent_id.h"
#include "agent/runner/assignment_check.h"
#include "agent/runner/build_runner.h"
#include "agent/runner/connection.h"
#include "agent/runner/git_query.h"
#include "agent/runner/job_ceiling.h"
#include "agent/runner/job_log.h"
#include "agent/runner/outbox.h"
#include "agent/runner/paths.h"
#include "agent/runner/reboot_flow.h"
#include "agent/runner/spool.h"
#include "agent/runner/state_lock.h"
#include "spdlog/spdlog.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::agent {
namespace {

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

ConnectionOptions ConnectionOptionsOf(const AgentOptions& options, const std::string& agent_id) {
  ConnectionOptions c;
  c.controller = options.controller;
  c.agent_id = agent_id;
  c.token = options.token;
  c.tls = options.tls;
  c.initial_backoff_seconds = options.initial_backoff_seconds;
  c.max_backoff_seconds = options.max_backoff_seconds;
  c.default_heartbeat_seconds = options.default_heartbeat_seconds;
  c.welcome_timeout_seconds = options.welcome_timeout_seconds;
  return c;
}

RebootOptions RebootOptionsOf(const AgentOptions& options) {
  RebootOptions r;
  r.command = options.reboot_command;
  r.grace_seconds = options.reboot_grace_seconds;
  r.kernel.command = options.kernel_install_command;
  r.kernel.staging_dir = options.kernel_staging_dir;
  r.kernel.state_dir = options.state_dir;
  r.kernel.artifact_source = options.artifact_source;
  r.kernel.machine_arch = MachineArch();
  return r;
}

}  // namespace

// The agent's own concerns: the state machine, the host as the controller last heard of it,
// and the job (one at a time, in its own thread). It composes the units that do the rest:
// the outbox (results until acked), the connection (the stream) and the reboot flow.
//
// Locks, in the order they may be taken: mu_ below, then the connection's or the reboot
// flow's, then the outbox's. The connection and the reboot flow call back into the agent
// only without their own locks held.
class Agent::Impl final : private ConnectionDelegate {
 public:
  Impl(AgentOptions options, std::string agent_id, Spool spool, StateDirLock lock,
       BootEntries boot_entries)
      : options_(std::move(options)),
        agent_id_(std::move(agent_id)),
        lock_(std::move(lock)),
        boot_entries_(std::move(boot_entries)),
        outbox_(std::move(spool)),
        connection_(ConnectionOptionsOf(options_, agent_id_), outbox_, *this),
        reboot_flow_(RebootOptionsOf(options_), boot_entries_, outbox_,
                     [this](const std::string& text) { SendNote(text); }) {
    policy_.workloads = options_.workloads;
    policy_.peer_networks = options_.peer_networks;
    if (!options_.kernel_sources.empty()) {
      BuildRunnerOptions build;
      build.staging_dir = options_.kernel_staging_dir;
      build.builder = options_.builder;
      build.log_flush_interval = absl::Seconds(options_.build_log_flush_seconds);
      build.timeout = options_.kernel_build_timeout;
      build_runner_ = std::make_unique<BuildRunner>(
          options_.kernel_sources, build, options_.upload_artifact,
          [this](const v1::AgentMessage& message) { connection_.Send(message); });
    }
    git_queries_ = std::make_unique<GitQueryWorkers>(
        [this](const v1::GitQuery& query) {
          v1::GitAnswer answer = AnswerGitQuery(options_.kernel_sources, query);
          if (!answer.error().empty()) {
            spdlog::warn("git question {} about source {}: {}", query.query_id(), query.source(),
                         answer.error());
          }
          return answer;
        },
        // Best effort: the controller asks again when it times out.
        [this](const v1::AgentMessage& message) { connection_.Send(message); });
  }

  ~Impl() {
    git_queries_.reset();  // its workers send on the connection
    std::unique_ptr<Job> job;
    {
      absl::MutexLock lock(&mu_);
      job = std::move(job_);
      if (job != nullptr && !job->done) job->cancel->Cancel("agent destroyed");
    }
    if (job != nullptr && job->thread.joinable()) job->thread.join();
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
      status.job_running = JobRunningLocked();
      status.last_exit_status = last_exit_status_;
      if (host_.ceiling_degraded())
        status.ceiling_degraded_reason = host_.ceiling_degraded_reason();
    }
    status.connected = connection_.connected();
    status.reconnects = connection_.reconnects();
    Spool::Usage usage = outbox_.Usage();
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

  // ConnectionDelegate: called on the connection's threads, without its locks.
  absl::StatusOr<v1::Hello> MakeHello() override;
  std::optional<v1::Heartbeat> MakeHeartbeat() override;
  void OnConnectionChanged() override;
  void OnAssignment(const v1::JobAssignment& assignment) override;
  void OnCancel(const v1::CancelJob& cancel) override;
  void OnReboot(const v1::RebootRequest& request) override;
  void OnBuild(const v1::BuildTask& task) override;
  void OnCancelBuild(const v1::CancelBuild& cancel) override;
  void OnGitQuery(const v1::GitQuery& query) override;

  // A note to the controller that belongs to no lease (a failed reboot).
  void SendNote(const std::string& text);
  void JobThread(Job* job, const HostContext& host);
  // Keeps `record` in the outbox and queues it; marks `job` (if any) done in the same step,
  // so a controller that reacts to the completion finds the agent idle.
  void FinishJob(const v1::SpooledJob& record, Job* job);
  // True when the degraded-ceiling marker (ceiling_health.h) disagrees with the HostInfo the
  // controller has; the agent then reconnects, so its Hello carries the current state.
  bool CeilingHealthChanged();
  void UpdateStateLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool JobRunningLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return job_ != nullptr && !job_->done;
  }

  const AgentOptions options_;
  const std::string agent_id_;
  const StateDirLock lock_;  // held for the agent's life: one agent per state directory
  const BootEntries boot_entries_;
  AssignmentPolicy policy_;  // fixed after construction

  mutable absl::Mutex mu_;
  // --- guarded by mu_ ---
  State state_ ABSL_GUARDED_BY(mu_) = State::kRecovering;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  v1::HostInfo host_ ABSL_GUARDED_BY(mu_);  // as the last Hello sent it
  std::unique_ptr<Job> job_ ABSL_GUARDED_BY(mu_);
  std::optional<int> last_exit_status_ ABSL_GUARDED_BY(mu_);  // AgentStatus

  // The units, destroyed first and in this reverse order: the reboot flow's thread may still
  // send a note on the connection, and the connection listens to the outbox.
  Outbox outbox_;
  Connection connection_;
  RebootFlow reboot_flow_;
  // Null when the agent has no kernel sources. Destroyed first: its build thread sends on
  // the connection.
  std::unique_ptr<BuildRunner> build_runner_;
  // Git questions (a fetch may take minutes: not on the stream's reader), on a bounded set
  // of threads (git_query.h). Destroyed first of all: its workers send on the connection.
  std::unique_ptr<GitQueryWorkers> git_queries_;
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
  State next = stopping_                  ? State::kStopping
               : !connection_.connected() ? State::kConnecting
               : JobRunningLocked()       ? State::kRunning
                                          : State::kIdle;
  if (next == state_) return;
  std::string lease = JobRunningLocked() ? job_->assignment.lease_id() : "";
  spdlog::info("state {} -> {}{}{}", StateName(state_), StateName(next),
               lease.empty() ? "" : " lease=", lease);
  state_ = next;
}

absl::Status Agent::Impl::Run() {
  connection_.Run();
  std::unique_ptr<Job> job;
  {
    absl::MutexLock lock(&mu_);
    UpdateStateLocked();
    job = std::move(job_);
  }
  if (job != nullptr && job->thread.joinable()) job->thread.join();
  spdlog::info("stopped; {} lease(s) left in the spool for the next start",
               outbox_.Pending().spooled);
  return absl::OkStatus();
}

void Agent::Impl::Shutdown(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  stopping_ = true;
  spdlog::info("shutting down: {}", reason);
  if (JobRunningLocked()) {
    spdlog::info("killing workload {} {}", job_->assignment.benchmark(),
                 JobLogIds(job_->assignment));
    job_->abandoned = true;
    job_->cancel->Cancel(absl::StrCat("agent shutting down (", reason, ")"));
  }
  connection_.Stop();
  reboot_flow_.Stop();
  if (build_runner_ != nullptr) build_runner_->CancelRunning("agent shutting down");
  UpdateStateLocked();
}

void Agent::Impl::OnConnectionChanged() {
  // Builds are not spooled: one whose stream is gone ends, and the controller gives the task
  // out again (build_runner.h).
  if (build_runner_ != nullptr && !connection_.connected()) {
    build_runner_->CancelRunning("lost the stream to the controller");
  }
  absl::MutexLock lock(&mu_);
  UpdateStateLocked();
}

absl::StatusOr<v1::Hello> Agent::Impl::MakeHello() {
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
  host->set_arch(MachineArch());
  const builder::BuilderInfo as_builder = options_.kernel_sources.Describe();
  for (const builder::BuilderInfo::Source& source : as_builder.sources) {
    v1::KernelSourceInfo* info = host->add_kernel_sources();
    info->set_name(source.name);
    info->set_arch(source.arch);
    for (const std::string& config : as_builder.configs) info->add_configs(config);
  }
  host->set_can_install_kernels(!options_.kernel_install_command.empty());

  v1::Hello hello;
  *hello.mutable_host() = *host;
  if (!options_.kernel_sources.empty()) hello.add_capabilities("builder");
  for (const std::string& w : options_.workloads) hello.add_capabilities("workload:" + w);
  for (const std::string& m : MonitorNames()) hello.add_capabilities("monitor:" + m);
  absl::MutexLock lock(&mu_);
  host_ = *std::move(host);
  if (JobRunningLocked()) hello.set_running_lease_id(job_->assignment.lease_id());
  return hello;
}

std::optional<v1::Heartbeat> Agent::Impl::MakeHeartbeat() {
  v1::Heartbeat heartbeat;
  {
    absl::MutexLock lock(&mu_);
    heartbeat.set_state(JobRunningLocked()         ? v1::AGENT_STATE_RUNNING
                        : reboot_flow_.rebooting() ? v1::AGENT_STATE_REBOOTING
                                                   : v1::AGENT_STATE_IDLE);
    if (JobRunningLocked()) heartbeat.set_lease_id(job_->assignment.lease_id());
  }
  if (CeilingHealthChanged()) return std::nullopt;  // an operator cleared it, say
  return heartbeat;
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
                 a.arm(), param, a.iteration(), a.ceiling(), a.timeout_seconds(), peer,
                 JobLogIds(a));
  }
  if (!paths::ValidLeaseId(a.lease_id())) {
    // Cannot be spooled under that name; answer at once.
    std::string error =
        absl::StrCat("lease id ", Shown(a.lease_id()), " is not usable by the agent");
    spdlog::error("{} {}", error, JobLogIds(a));
    v1::AgentMessage message;
    *message.mutable_complete() = FailedRecord(a, error).complete();
    connection_.Send(message);
    return;
  }
  std::optional<v1::SpooledJob> refusal;
  std::unique_ptr<Job> previous;
  {
    absl::MutexLock lock(&mu_);
    if (JobRunningLocked() && job_->assignment.lease_id() == a.lease_id()) {
      spdlog::info("lease already running; ignoring the repeated assignment {}", JobLogIds(a));
      return;
    }
    if (outbox_.Requeue(a.lease_id())) {
      spdlog::info("lease already finished; resending its result {}", JobLogIds(a));
      return;
    }
    if (!checked.ok()) {
      refusal = FailedRecord(a, absl::StrCat("assignment refused: ", checked.message()));
    } else if (stopping_) {
      refusal = RefusedRecord(a, "agent is shutting down");
    } else if (reboot_flow_.rebooting()) {
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
    spdlog::warn("refusing: {} {}", refusal->complete().error(), JobLogIds(a));
    FinishJob(*refusal, nullptr);
  }
}

void Agent::Impl::OnCancel(const v1::CancelJob& cancel) {
  absl::MutexLock lock(&mu_);
  if (JobRunningLocked() && job_->assignment.lease_id() == cancel.lease_id()) {
    spdlog::info("cancelling workload {} ({}) {}", job_->assignment.benchmark(), cancel.reason(),
                 JobLogIds(job_->assignment));
    job_->cancel->Cancel(absl::StrCat("cancelled by the controller: ", cancel.reason()));
  } else {
    spdlog::info("cancel of lease={} ignored: not running", cancel.lease_id());
  }
}

void Agent::Impl::OnReboot(const v1::RebootRequest& request) {
  std::string running_lease;
  std::string boot_id;
  {
    absl::MutexLock lock(&mu_);
    if (JobRunningLocked()) running_lease = job_->assignment.lease_id();
    boot_id = host_.boot_id();
  }
  reboot_flow_.OnRequest(request, running_lease, boot_id);
}

void Agent::Impl::OnBuild(const v1::BuildTask& task) {
  if (build_runner_ == nullptr) {
    spdlog::warn("build task {} ignored: this agent has no --kernel-sources", task.task_id());
    v1::AgentMessage message;
    v1::BuildComplete* complete = message.mutable_build_complete();
    complete->set_task_id(task.task_id());
    complete->set_status(v1::BUILD_STATUS_BAD_REVISION);
    complete->set_reason("source: this agent has no --kernel-sources");
    connection_.Send(message);
    return;
  }
  build_runner_->OnTask(task);
}

void Agent::Impl::OnCancelBuild(const v1::CancelBuild& cancel) {
  if (build_runner_ != nullptr) build_runner_->OnCancel(cancel);
}

void Agent::Impl::OnGitQuery(const v1::GitQuery& query) { git_queries_->Submit(query); }

void Agent::Impl::SendNote(const std::string& text) {
  v1::AgentMessage message;
  message.mutable_progress()->set_message(text);
  connection_.Send(message);  // best effort, as the notes of jobs are
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
    connection_.Send(message);  // best effort: a note, not a result
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
          record.complete().elapsed_seconds(), JobLogIds(job->assignment));
      job->done = true;
      UpdateStateLocked();
      return;
    }
  }
  if (CeilingHealthChanged()) {
    // The restore failed: the controller must learn that this host takes no ceiling jobs
    // before it learns that the host is free. The record is resent after the next Welcome.
    spdlog::error("the flush ceiling is degraded; reconnecting to report it {}",
                  JobLogIds(job->assignment));
    connection_.Reconnect();
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
  spdlog::info("job finished {} samples={} elapsed={:.2f}s{}{} {}", JobStatusName(c.status()),
               c.sample_count(), c.elapsed_seconds(),
               c.error().empty() ? "" : " error: ", c.error(), JobLogIds(a));
  outbox_.Keep(record);
  absl::MutexLock lock(&mu_);
  if (job != nullptr) job->done = true;
  outbox_.Queue(a.lease_id());
  UpdateStateLocked();
}

// --- Agent -----------------------------------------------------------------------------------

Agent::Agent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Agent::~Agent() = default;

absl::StatusOr<std::unique_ptr<Agent>> Agent::Create(AgentOptions options) {
  if (options.controller.empty()) return absl::InvalidArgumentError("no controller address");
  if (options.state_dir.empty()) return absl::InvalidArgumentError("no state directory");
  if (options.sysroot == nullptr) return absl::InvalidArgumentError("no sysroot");
  if (options.kernel_staging_dir.empty())
    options.kernel_staging_dir = options.state_dir + "/kernels";
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
