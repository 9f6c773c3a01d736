#include "controller/api/controller.h"

#include <fnmatch.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/workloads/workload.h"
#include "common/status_macros.h"
#include "common/version.h"
#include "controller/report/adaptive.h"
#include "controller/report/compare.h"
#include "controller/report/comparison.h"
#include "controller/report/render.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/run_spec.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::api {

namespace {

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

v1::ControllerMessage Wrap(v1::SampleAck ack) {
  v1::ControllerMessage m;
  *m.mutable_sample_ack() = std::move(ack);
  return m;
}

v1::ControllerMessage Wrap(v1::CompletionAck ack) {
  v1::ControllerMessage m;
  *m.mutable_completion_ack() = std::move(ack);
  return m;
}

v1::ControllerMessage Cancel(const std::string& lease_id, const std::string& reason) {
  v1::ControllerMessage m;
  m.mutable_cancel()->set_lease_id(lease_id);
  m.mutable_cancel()->set_reason(reason);
  return m;
}

// Expands a host-dependent run's slot for `host`; errors name the host.
store::Store::SlotExpander SlotExpanderFor(const std::string& run_id, const v1::HostInfo& host) {
  return [&run_id, &host](const v1::RunSpec& spec) -> absl::StatusOr<scheduler::SlotExpansion> {
    absl::StatusOr<scheduler::SlotExpansion> e =
        scheduler::ExpandSlotForHost(spec, scheduler::TopologyOf(host));
    if (e.ok()) {
      spdlog::info("run={} host={} ncpus={}: sweep {} ({} jobs per slot)", run_id, host.hostname(),
                   scheduler::TopologyOf(host).cpus, e->basis, e->jobs.size());
      return e;
    }
    return absl::Status(e.status().code(), absl::StrCat("host ", host.hostname(), ": ",
                                                        std::string(e.status().message())));
  };
}

}  // namespace

HostFit FitHost(const v1::RunSpec& spec, const v1::HostInfo& host, std::string* why) {
  auto fail = [&](std::string reason, HostFit fit = HostFit::kSelectorMismatch) {
    if (why != nullptr) *why = std::move(reason);
    return fit;
  };
  const v1::HostSelector& sel = spec.hosts();
  for (const auto& [key, value] : sel.labels()) {
    auto it = host.labels().find(key);
    if (it == host.labels().end() || it->second != value) {
      return fail(absl::StrCat("label ", key, "=", value, " not set"));
    }
  }
  if (!sel.microarch().empty()) {
    std::string have = absl::AsciiStrToLower(host.cpu().microarch());
    bool any = std::any_of(sel.microarch().begin(), sel.microarch().end(),
                           [&](const std::string& m) { return absl::AsciiStrToLower(m) == have; });
    if (!any) return fail(absl::StrCat("microarch ", host.cpu().microarch(), " not selected"));
  }
  if (!sel.names().empty() &&
      std::find(sel.names().begin(), sel.names().end(), host.hostname()) == sel.names().end()) {
    return fail(absl::StrCat("hostname ", host.hostname(), " not selected"));
  }
  const v1::CpuInfo& cpu = host.cpu();
  if (sel.has_pcid() && sel.pcid() != cpu.pcid()) {
    return fail(cpu.pcid() ? "CPU has PCID, the run selects hosts without"
                           : "CPU lacks PCID (or the agent could not read CPUID)");
  }
  if (sel.has_invpcid() && sel.invpcid() != cpu.invpcid()) {
    return fail(cpu.invpcid() ? "CPU has INVPCID, the run selects hosts without"
                              : "CPU lacks INVPCID (or the agent could not read CPUID)");
  }
  // An agent that could not read the TLB sizes reports 0, which no minimum accepts.
  if (sel.min_dtlb_entries() > 0 && cpu.dtlb_4k_entries() < sel.min_dtlb_entries()) {
    return fail(absl::StrCat("dTLB has ", cpu.dtlb_4k_entries(), " 4K entries, fewer than ",
                             sel.min_dtlb_entries()));
  }
  if (!sel.kernel_release().empty() &&
      ::fnmatch(sel.kernel_release().c_str(), host.kernel_release().c_str(), 0) != 0) {
    return fail(
        absl::StrCat("kernel ", host.kernel_release(), " does not match ", sel.kernel_release()));
  }
  bool needs_ceiling = std::any_of(spec.arms().begin(), spec.arms().end(),
                                   [](const v1::ArmSpec& arm) { return !arm.ceiling().empty(); });
  if (needs_ceiling && !host.ceiling().writable()) {
    return fail(
        absl::StrCat("host ", host.hostname(), " cannot write the flush ceiling: ",
                     host.ceiling().reason().empty() ? "unknown reason" : host.ceiling().reason()),
        HostFit::kCeilingUnwritable);
  }
  if (store::RunNeedsReboots(spec) && !host.can_reboot()) {
    return fail(absl::StrCat("host ", host.hostname(), " cannot reboot (its agent has no",
                             " --reboot-command) and the run needs more than one boot"),
                HostFit::kCannotReboot);
  }
  return HostFit::kFits;
}

Controller::Controller(store::Store& store, ControllerOptions options, Clock clock)
    : store_(store), options_(options), clock_(clock ? std::move(clock) : Clock(SystemNowMs)) {}

Controller::~Controller() { Stop(); }

void Controller::Start() {
  ticker_ = std::thread([this] {
    absl::MutexLock lock(&mu_);
    while (!stopping_) {
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(options_.tick_ms));
      if (stopping_) break;
      mu_.Unlock();
      Tick();
      mu_.Lock();
    }
  });
}

void Controller::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (ticker_.joinable()) ticker_.join();
}

Controller::Session* Controller::FindSessionLocked(AgentChannel* channel) {
  for (auto& [id, session] : sessions_) {
    if (session.channel == channel) return &session;
  }
  return nullptr;
}

absl::Status Controller::Register(AgentChannel* channel, const v1::Hello& hello) {
  if (hello.protocol_version() != v1::PROTOCOL_VERSION_1) {
    return absl::FailedPreconditionError(absl::StrCat("unsupported protocol version ",
                                                      hello.protocol_version(),
                                                      "; this controller speaks version 1"));
  }
  if (hello.agent_id().empty()) return absl::InvalidArgumentError("hello.agent_id: empty");
  TLB_RETURN_IF_ERROR(store_.UpsertHost(hello.agent_id(), hello.host(), Now()));

  absl::MutexLock lock(&mu_);
  auto [it, inserted] = sessions_.try_emplace(hello.agent_id());
  if (!inserted) {
    spdlog::warn("agent={} host={} reconnected from {}; dropping its previous stream",
                 hello.agent_id(), hello.host().hostname(), channel->Peer());
  }
  Session& session = it->second;
  session = Session{};
  session.channel = channel;
  session.agent_id = hello.agent_id();
  session.host = hello.host();
  if (auto asked = reboot_requests_.find(hello.agent_id()); asked != reboot_requests_.end()) {
    if (asked->second.boot_id != hello.host().boot_id()) {
      spdlog::info("agent={} host={} rebooted: boot {} -> {}", hello.agent_id(),
                   hello.host().hostname(), asked->second.boot_id, hello.host().boot_id());
      reboot_requests_.erase(asked);
    } else {
      spdlog::warn("agent={} host={} reconnected on boot {}, which it was asked to leave",
                   hello.agent_id(), hello.host().hostname(), hello.host().boot_id());
    }
  }
  spdlog::info("agent={} host={} connected from {} boot={} microarch={} cpus={} ceiling={}",
               session.agent_id, session.host.hostname(), channel->Peer(), session.host.boot_id(),
               session.host.cpu().microarch(), session.host.logical_cpus(),
               session.host.ceiling().has_value() ? absl::StrCat(session.host.ceiling().value())
                                                  : session.host.ceiling().reason());
  v1::ControllerMessage welcome;
  welcome.mutable_welcome()->set_controller_version(kVersion);
  welcome.mutable_welcome()->set_heartbeat_seconds(
      static_cast<uint32_t>(std::max<int64_t>(1, options_.heartbeat_ms / 1000)));
  welcome.mutable_welcome()->set_lease_seconds(
      static_cast<uint32_t>(std::max<int64_t>(1, options_.lease_ms / 1000)));
  channel->Send(welcome);
  // The agent becomes dispatchable with its first heartbeat, after it has replayed its spool.
  return absl::OkStatus();
}

void Controller::Unregister(AgentChannel* channel) {
  absl::MutexLock lock(&mu_);
  Session* session = FindSessionLocked(channel);
  if (session == nullptr) return;
  spdlog::info("agent={} host={} disconnected{}", session->agent_id, session->host.hostname(),
               session->lease_id.empty() ? ""
                                         : absl::StrCat(" while holding lease ", session->lease_id,
                                                        " (re-queued if it does not return)"));
  if (!session->lease_id.empty()) ReleasePeerLocked(session->lease_id);  // netperf peer
  sessions_.erase(session->agent_id);
}

void Controller::OnMessage(AgentChannel* channel, const v1::AgentMessage& message) {
  absl::MutexLock lock(&mu_);
  Session* session = FindSessionLocked(channel);
  if (session == nullptr) return;  // a stream that was replaced by a newer one
  switch (message.body_case()) {
    case v1::AgentMessage::kHeartbeat:
      HandleHeartbeatLocked(*session, message.heartbeat());
      break;
    case v1::AgentMessage::kSamples:
      HandleSamplesLocked(*session, message.samples());
      break;
    case v1::AgentMessage::kComplete:
      HandleCompleteLocked(*session, message.complete());
      break;
    case v1::AgentMessage::kProgress:
      if (session->rebooting && message.progress().lease_id().empty()) {
        // The agent could not carry out the reboot (its command failed): say so on the run.
        spdlog::warn("agent={} host={}: {}", session->agent_id, session->host.hostname(),
                     message.progress().message());
        const std::string run_id = session->reboot_run_id;
        session->rebooting = false;
        FailRunLocked(run_id, absl::StrCat("host ", session->host.hostname(),
                                           " could not reboot: ", message.progress().message()));
        break;
      }
      spdlog::debug("agent={} lease={} progress: {}", session->agent_id,
                    message.progress().lease_id(), message.progress().message());
      break;
    case v1::AgentMessage::kHello:
      spdlog::warn("agent={} sent a second Hello; ignored", session->agent_id);
      break;
    case v1::AgentMessage::BODY_NOT_SET:
      break;
  }
}

void Controller::HandleHeartbeatLocked(Session& session, const v1::Heartbeat& heartbeat) {
  if (heartbeat.state() == v1::AGENT_STATE_RUNNING && !heartbeat.lease_id().empty()) {
    absl::StatusOr<bool> held =
        store_.RenewLease(heartbeat.lease_id(), session.agent_id, Now(), options_.lease_ms);
    if (!held.ok()) {
      spdlog::error("agent={} renew lease {}: {}", session.agent_id, heartbeat.lease_id(),
                    held.status().ToString());
      return;
    }
    session.idle = false;
    session.lease_id = heartbeat.lease_id();
    if (!*held) {
      // The lease expired or was cancelled: stop the agent wasting its time on it.
      spdlog::warn("agent={} runs lease {} that it no longer holds; cancelling it",
                   session.agent_id, heartbeat.lease_id());
      session.channel->Send(Cancel(heartbeat.lease_id(), "lease no longer held"));
    }
    return;
  }
  if (heartbeat.state() == v1::AGENT_STATE_IDLE) {
    // An idle heartbeat can cross an assignment on the wire. The host stays busy until it
    // completes the lease or the lease expires (which also covers a lost assignment).
    if (!session.lease_id.empty()) return;
    // Likewise a reboot request: the host is going down, or will say why it cannot.
    if (session.rebooting) return;
    session.idle = true;
    session.lease_id.clear();
    DispatchLocked(session);
  }
}

void Controller::HandleSamplesLocked(Session& session, const v1::SampleBatch& batch) {
  v1::SampleAck ack;
  ack.set_lease_id(batch.lease_id());
  absl::StatusOr<store::IngestResult> result = store_.IngestSamples(session.agent_id, batch);
  if (!result.ok()) {
    // Not acked: the agent keeps the samples in its spool and resends after reconnecting.
    spdlog::error("agent={} lease={} storing {} samples failed: {}", session.agent_id,
                  batch.lease_id(), batch.samples_size(), result.status().ToString());
    return;
  }
  if (result->rejected) {
    spdlog::warn("agent={} lease={} job={}: rejected {} samples: {}", session.agent_id,
                 batch.lease_id(), batch.job_id(), batch.samples_size(), result->reason);
    ack.set_rejected(true);
    ack.set_reason(result->reason);
  } else {
    ack.set_through_seq(result->through_seq);
    spdlog::debug("agent={} lease={} stored {} of {} samples", session.agent_id, batch.lease_id(),
                  result->stored, batch.samples_size());
    (void)store_.RenewLease(batch.lease_id(), session.agent_id, Now(), options_.lease_ms);
  }
  session.channel->Send(Wrap(std::move(ack)));
}

void Controller::HandleCompleteLocked(Session& session, const v1::JobComplete& complete) {
  ReleasePeerLocked(complete.lease_id());  // netperf peer: the client is done with it
  v1::CompletionAck ack;
  ack.set_lease_id(complete.lease_id());
  absl::StatusOr<store::CompletionResult> result =
      store_.CompleteJob(session.agent_id, complete, Now());
  if (!result.ok()) {
    spdlog::error("agent={} lease={} completion failed: {}", session.agent_id, complete.lease_id(),
                  result.status().ToString());
    return;
  }
  if (result->rejected) {
    spdlog::warn("agent={} lease={} job={}: completion rejected: {}", session.agent_id,
                 complete.lease_id(), complete.job_id(), result->reason);
    ack.set_rejected(true);
    ack.set_reason(result->reason);
  } else {
    spdlog::info("agent={} host={} run={} job={} lease={} {} ({} samples, {:.1f} s){}",
                 session.agent_id, session.host.hostname(), result->run_id, complete.job_id(),
                 complete.lease_id(), v1::JobStatus_Name(complete.status()),
                 complete.sample_count(), complete.elapsed_seconds(),
                 complete.error().empty() ? "" : absl::StrCat(": ", complete.error()));
    if (result->run_finished) {
      spdlog::info("run={} finished: {}", result->run_id, v1::RunState_Name(result->run_state));
    }
  }
  session.channel->Send(Wrap(std::move(ack)));
  if (session.lease_id == complete.lease_id()) {
    session.lease_id.clear();
    session.idle = true;
  }
  DispatchLocked(session);
}

void Controller::DispatchLocked(Session& session) {
  if (!session.idle || session.rebooting || stopping_) return;
  if (peers_.Serving(session.agent_id)) return;  // netperf peer of another host's job
  absl::StatusOr<std::vector<store::ActiveRun>> runs = store_.ActiveRuns();
  if (!runs.ok()) {
    spdlog::error("dispatch: listing runs failed: {}", runs.status().ToString());
    return;
  }
  // The oldest run that has work for this host but not on its current boot. The host
  // reboots for it only when no run has work for the current boot.
  std::string reboot_run_id;
  std::string reboot_why;
  for (const store::ActiveRun& run : *runs) {
    if (!HostMatches(run.spec, session.host)) continue;
    // netperf peer: a run that may need one is taken only with one at hand.
    std::optional<PeerCandidate> peer;
    if (RunNeedsPeer(run.spec)) {
      peer = ChoosePeerLocked(session, run.run_id);
      if (!peer) continue;
    }
    std::string why;
    absl::StatusOr<std::optional<v1::JobAssignment>> job = store_.LeaseNextJob(
        run.run_id, session.agent_id, Now(), options_.lease_ms,
        SlotExpanderFor(run.run_id, session.host), session.host.boot_id(), &why);
    if (!job.ok()) {
      spdlog::error("dispatch run={} to agent={}: {}", run.run_id, session.agent_id,
                    job.status().ToString());
      continue;
    }
    if (!job->has_value()) {
      if (!why.empty() && reboot_run_id.empty()) {
        reboot_run_id = run.run_id;
        reboot_why = why;
      }
      continue;
    }
    v1::JobAssignment& a = **job;
    AssignPeerLocked(peer, a);  // netperf peer
    spdlog::info("run={} job={} lease={} -> host={} agent={} (arm {}, {}={}, iteration {})",
                 a.run_id(), a.job_id(), a.lease_id(), session.host.hostname(), session.agent_id,
                 a.arm(), a.param_name().empty() ? "param" : a.param_name(), a.param_value(),
                 a.iteration());
    session.idle = false;
    session.lease_id = a.lease_id();
    v1::ControllerMessage message;
    *message.mutable_assignment() = a;
    session.channel->Send(message);
    return;
  }
  if (!reboot_run_id.empty()) RequestRebootLocked(session, reboot_run_id, reboot_why);
}

void Controller::RequestRebootLocked(Session& session, const std::string& run_id,
                                     const std::string& why) {
  RebootRequestRecord& record = reboot_requests_[session.agent_id];
  if (record.boot_id == session.host.boot_id()) {
    ++record.times;
  } else {
    record = RebootRequestRecord{session.host.boot_id(), run_id, 0};
  }
  // One request may be lost to a crash or a restart of the agent; a second one that finds
  // the host on the same boot means the reboot does not work.
  if (record.times >= 2) {
    reboot_requests_.erase(session.agent_id);
    FailRunLocked(run_id, absl::StrCat("host ", session.host.hostname(),
                                       " did not reboot: ", "it came back on boot ",
                                       session.host.boot_id(), " after two reboot requests"));
    return;
  }
  spdlog::info("agent={} host={}: asking for a reboot ({})", session.agent_id,
               session.host.hostname(), why);
  session.idle = false;
  session.rebooting = true;
  session.reboot_run_id = run_id;
  session.reboot_deadline_ms = Now() + options_.reboot_timeout_ms;
  v1::ControllerMessage message;
  message.mutable_reboot()->set_reason(why);
  message.mutable_reboot()->set_boot_id(session.host.boot_id());
  session.channel->Send(message);
}

void Controller::FailRunLocked(const std::string& run_id, const std::string& error) {
  spdlog::warn("run={} failed: {}", run_id, error);
  if (absl::Status s = store_.FailRun(run_id, error, Now()); !s.ok()) {
    spdlog::error("run={} failing: {}", run_id, s.ToString());
  }
}

void Controller::CheckRebootsLocked() {
  for (auto& [id, session] : sessions_) {
    if (!session.rebooting || Now() < session.reboot_deadline_ms) continue;
    session.rebooting = false;
    reboot_requests_.erase(session.agent_id);
    FailRunLocked(
        session.reboot_run_id,
        absl::StrCat("host ", session.host.hostname(), " did not reboot within ",
                     options_.reboot_timeout_ms / 1000,
                     " s of the request; it is still connected on boot ", session.host.boot_id()));
    session.idle = true;
  }
}

void Controller::DecideAdaptiveRuns() {
  absl::StatusOr<std::vector<store::ActiveRun>> runs = store_.AdaptiveRunsAwaitingDecision();
  if (!runs.ok()) {
    spdlog::error("adaptive runs: {}", runs.status().ToString());
    return;
  }
  for (const store::ActiveRun& run : *runs) {
    absl::StatusOr<v1::Run> stored = store_.GetRun(run.run_id);
    absl::StatusOr<std::vector<v1::Sample>> samples = store_.GetSamples(run.run_id);
    if (!stored.ok() || !samples.ok()) {
      spdlog::error("run={} adaptive decision: {}", run.run_id,
                    (stored.ok() ? samples.status() : stored.status()).ToString());
      continue;
    }
    std::vector<std::string> metrics(run.spec.adaptive().metrics().begin(),
                                     run.spec.adaptive().metrics().end());
    if (metrics.empty()) {
      const workloads::Workload* workload = workloads::Registry::Get().Find(run.spec.benchmark());
      if (workload != nullptr) metrics.emplace_back(workload->PrimaryMetric());
    }
    report::CompareOptions options;
    for (const v1::ArmSpec& arm : run.spec.arms()) options.arm_order.push_back(arm.name());
    absl::StatusOr<report::Comparison> comparison =
        report::Compare(report::ObservationsFromSamples(*samples), options);
    report::AdaptiveDecision decision;
    if (comparison.ok()) {
      decision = report::DecideAdaptive(
          run.spec.adaptive(), metrics, *comparison,
          report::AdaptivePlan{stored->iterations_per_boot(), stored->boots()});
    } else {
      decision.reason = absl::StrCat("stopped: the comparison failed: ",
                                     std::string(comparison.status().message()));
    }
    absl::Status s;
    if (decision.action == report::AdaptiveDecision::Action::kStop) {
      spdlog::info("run={} adaptive: {}", run.run_id, decision.reason);
      s = store_.FinishAdaptiveRun(run.run_id, decision.reason, Now());
    } else {
      spdlog::info("run={} adaptive round {}: {}", run.run_id, stored->adaptive_rounds() + 1,
                   decision.reason);
      store::RunExtension extension;
      extension.add_boot = decision.action == report::AdaptiveDecision::Action::kAddBoot;
      extension.iterations_per_boot = decision.iterations_per_boot;
      extension.note = decision.reason;
      s = store_.ExtendRun(run.run_id, extension, Now());
    }
    if (!s.ok()) spdlog::error("run={} adaptive decision: {}", run.run_id, s.ToString());
  }
}

void Controller::DispatchAllLocked() {
  absl::StatusOr<std::vector<store::ActiveRun>> runs = store_.ActiveRuns();
  if (runs.ok()) FailUnrunnableRunsLocked(*runs);
  for (auto& [id, session] : sessions_) DispatchLocked(session);
}

void Controller::FailUnrunnableRunsLocked(const std::vector<store::ActiveRun>& runs) {
  for (const store::ActiveRun& run : runs) {
    bool any_fits = false;
    std::vector<std::string> ceiling_reasons;
    std::vector<std::string> reboot_reasons;
    for (const auto& [id, session] : sessions_) {
      std::string why;
      HostFit fit = FitHost(run.spec, session.host, &why);
      if (fit == HostFit::kFits) any_fits = true;
      if (fit == HostFit::kCeilingUnwritable) ceiling_reasons.push_back(why);
      if (fit == HostFit::kCannotReboot) reboot_reasons.push_back(why);
    }
    // Only hosts that were selected and refused for the ceiling or for rebooting count as
    // proof: with no such host connected the run waits, as any run does for a matching host.
    if (any_fits || (ceiling_reasons.empty() && reboot_reasons.empty())) continue;
    std::string error =
        ceiling_reasons.empty()
            ? absl::StrCat("the run needs up to ",
                           std::max(run.spec.boots(), run.spec.adaptive().boots().max()),
                           " boots per arm, but no selected", " host can reboot (",
                           absl::StrJoin(reboot_reasons, "; "), ")")
            : absl::StrCat("an arm sets the flush ceiling, but no selected host can apply it (",
                           absl::StrJoin(ceiling_reasons, "; "), ")");
    spdlog::warn("run={} failed: {}", run.run_id, error);
    if (absl::Status s = store_.FailRun(run.run_id, error, Now()); !s.ok()) {
      spdlog::error("run={} failing: {}", run.run_id, s.ToString());
    }
  }
}

void Controller::Tick() {
  absl::StatusOr<std::vector<store::ExpiredLease>> expired =
      store_.ExpireLeases(Now(), options_.max_attempts);
  // Outside mu_: the bootstrap behind a decision takes milliseconds to seconds.
  DecideAdaptiveRuns();
  absl::MutexLock lock(&mu_);
  CheckRebootsLocked();
  if (!expired.ok()) {
    spdlog::error("lease expiry failed: {}", expired.status().ToString());
  } else {
    for (const store::ExpiredLease& e : *expired) {
      spdlog::warn("run={} job={} lease={} expired (agent={} silent for {} ms): {}", e.run_id,
                   e.job_id, e.lease_id, e.agent_id, options_.lease_ms,
                   e.requeued ? "re-queued" : "too many attempts, run failed");
      ReleasePeerLocked(e.lease_id);  // netperf peer
      auto it = sessions_.find(e.agent_id);
      if (it != sessions_.end() && it->second.lease_id == e.lease_id) {
        it->second.channel->Send(Cancel(e.lease_id, "lease expired"));
        it->second.lease_id.clear();
      }
    }
  }
  DispatchAllLocked();
}

// --- netperf peers (peers.h) -------------------------------------------------------------

std::optional<PeerCandidate> Controller::ChoosePeerLocked(const Session& client,
                                                          const std::string& run_id) {
  std::vector<PeerCandidate> candidates;
  for (const auto& [id, s] : sessions_) {
    candidates.push_back({id, s.host.hostname(), s.host.netserver(), s.idle && s.lease_id.empty(),
                          peers_.Serving(id)});
  }
  std::optional<PeerCandidate> peer = ChoosePeer(candidates, client.agent_id);
  if (!peer && !AnyPeerAdvertises(candidates, client.agent_id) &&
      peerless_runs_logged_.insert(run_id).second) {
    spdlog::warn(
        "run={} needs a netperf peer (server: peer), but no connected host other than host={} "
        "advertises a netserver (tlbfleet-agent --netserver-listen); it waits for one",
        run_id, client.host.hostname());
  }
  return peer;
}

void Controller::AssignPeerLocked(const std::optional<PeerCandidate>& peer, v1::JobAssignment& a) {
  if (!peer || !JobNeedsPeer(a.params())) return;
  if (absl::Status s = ApplyPeer(*peer, &a); !s.ok()) {
    // ChoosePeer takes only usable addresses, so this is a bug; the agent then fails the job
    // with the reason that `server: peer` was not resolved.
    spdlog::error("run={} job={} lease={}: {}", a.run_id(), a.job_id(), a.lease_id(), s.ToString());
    return;
  }
  peers_.Reserve(a.lease_id(), peer->agent_id);
  spdlog::info("run={} job={} lease={}: netperf peer host={} agent={} netserver={} reserved",
               a.run_id(), a.job_id(), a.lease_id(), peer->hostname, peer->agent_id,
               peer->netserver);
}

void Controller::ReleasePeerLocked(const std::string& lease_id) {
  std::optional<std::string> peer = peers_.Release(lease_id);
  if (!peer) return;
  spdlog::info("lease={} ended: netperf peer agent={} released", lease_id, *peer);
  auto it = sessions_.find(*peer);
  if (it != sessions_.end()) DispatchLocked(it->second);
}

// --- user API -----------------------------------------------------------------------------

absl::StatusOr<v1::SubmitRunResponse> Controller::Submit(const std::string& spec_yaml,
                                                         const std::string& source) {
  TLB_ASSIGN_OR_RETURN(v1::RunSpec spec,
                       scheduler::ParseRunSpec(spec_yaml, source.empty() ? "spec" : source));
  std::vector<scheduler::JobPlan> jobs;
  std::string run_id;
  if (scheduler::SweepDependsOnHost(spec.sweep())) {
    // The sweep is known only once a host takes a slot: LeaseNextJob expands it then.
    TLB_ASSIGN_OR_RETURN(run_id, store_.CreateDeferredRun(spec, spec_yaml, Now()));
  } else {
    jobs = scheduler::ExpandRun(spec);
    TLB_ASSIGN_OR_RETURN(run_id, store_.CreateRun(spec, spec_yaml, jobs, Now()));
  }
  spdlog::info(
      "run={} submitted: {} ({}, {} arms, {})", run_id, spec.name(), spec.benchmark(),
      spec.arms_size(),
      jobs.empty() ? std::string("jobs expanded per host") : absl::StrCat(jobs.size(), " jobs"));
  v1::SubmitRunResponse response;
  response.set_run_id(run_id);
  response.set_jobs(static_cast<uint32_t>(jobs.size()));
  absl::MutexLock lock(&mu_);
  DispatchAllLocked();
  return response;
}

absl::StatusOr<v1::Run> Controller::GetRun(const std::string& run_id) {
  return store_.GetRun(run_id);
}

absl::StatusOr<v1::ListRunsResponse> Controller::ListRuns(uint32_t limit) {
  TLB_ASSIGN_OR_RETURN(std::vector<v1::Run> runs, store_.ListRuns(limit));
  v1::ListRunsResponse response;
  for (v1::Run& run : runs) *response.add_runs() = std::move(run);
  return response;
}

absl::StatusOr<v1::Run> Controller::CancelRun(const std::string& run_id) {
  TLB_ASSIGN_OR_RETURN(auto running, store_.CancelRun(run_id, Now()));
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [agent_id, lease_id] : running) {
      auto it = sessions_.find(agent_id);
      if (it != sessions_.end()) it->second.channel->Send(Cancel(lease_id, "run cancelled"));
    }
  }
  spdlog::info("run={} cancelled by user ({} running jobs told to stop)", run_id, running.size());
  return store_.GetRun(run_id);
}

absl::StatusOr<v1::ListHostsResponse> Controller::ListHosts() {
  TLB_ASSIGN_OR_RETURN(std::vector<store::StoredHost> hosts, store_.ListHosts());
  v1::ListHostsResponse response;
  absl::MutexLock lock(&mu_);
  for (store::StoredHost& h : hosts) {
    v1::Host* out = response.add_hosts();
    out->set_agent_id(h.agent_id);
    *out->mutable_info() = std::move(h.info);
    out->set_last_seen_unix(h.last_seen_ms / 1000);
    auto it = sessions_.find(h.agent_id);
    if (it != sessions_.end()) {
      out->set_connected(true);
      out->set_current_lease(it->second.lease_id);
    }
  }
  return response;
}

absl::StatusOr<v1::GetResultsResponse> Controller::GetResults(const std::string& run_id) {
  TLB_ASSIGN_OR_RETURN(std::vector<v1::Sample> samples, store_.GetSamples(run_id));
  v1::GetResultsResponse response;
  for (v1::Sample& s : samples) *response.add_samples() = std::move(s);
  return response;
}

absl::StatusOr<v1::CompareResponse> Controller::Compare(const std::string& run_id,
                                                        const std::string& baseline) {
  TLB_ASSIGN_OR_RETURN(v1::Run run, store_.GetRun(run_id));
  std::vector<std::string> arms;
  for (const v1::ArmSpec& arm : run.spec().arms()) arms.push_back(arm.name());
  if (!baseline.empty()) {
    auto it = std::find(arms.begin(), arms.end(), baseline);
    if (it == arms.end()) {
      return absl::InvalidArgumentError(absl::StrCat("baseline: run ", run_id,
                                                     " has no arm named \"", baseline,
                                                     "\" (arms: ", absl::StrJoin(arms, ", "), ")"));
    }
    std::rotate(arms.begin(), it, it + 1);
  }
  TLB_ASSIGN_OR_RETURN(std::vector<v1::Sample> samples, store_.GetSamples(run_id));
  TLB_ASSIGN_OR_RETURN(v1::Report report, report::BuildReport(samples, arms));
  report.set_run_id(run_id);
  report.set_title(absl::StrCat(run.spec().benchmark(), " — run ", run_id, " (", run.spec().name(),
                                "), ", v1::RunState_Name(run.state())));
  v1::CompareResponse response;
  // The text is the full comparison (tests, verdicts, boot-level notes), the same code the
  // CLI runs for JSON/CSV and offline CSV; the plain table stands in until there are samples.
  report::CompareOptions options;
  options.arm_order = arms;
  absl::StatusOr<report::Comparison> full =
      report::Compare(report::ObservationsFromSamples(samples), options);
  response.set_text(full.ok() && !full->groups.empty()
                        ? report::RenderComparisonText(*full, report.title())
                        : report::RenderText(report));
  *response.mutable_report() = std::move(report);
  return response;
}

}  // namespace tlbfleet::api
