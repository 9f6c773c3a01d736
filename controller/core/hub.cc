// The hub: lifecycle, agent streams, the ticker. Dispatch and reboots are in hub_dispatch.cc;
// what the run service asks of it (FleetState) at the end of this file.

#include "controller/core/hub.h"

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/version.h"
#include "controller/scheduler/host_lost.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::core {

namespace {

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

bool Terminal(v1::RunState state) {
  return state == v1::RUN_STATE_SUCCEEDED || state == v1::RUN_STATE_FAILED ||
         state == v1::RUN_STATE_CANCELLED;
}

// The status an observer hears for a job that ended as `state` after the agent said
// `reported`.
v1::JobStatus FinishedStatus(v1::JobState state, v1::JobStatus reported) {
  switch (state) {
    case v1::JOB_STATE_SUCCEEDED:
      return v1::JOB_STATUS_SUCCEEDED;
    case v1::JOB_STATE_CANCELLED:
      return v1::JOB_STATUS_CANCELLED;
    default:
      return reported == v1::JOB_STATUS_TIMED_OUT ? v1::JOB_STATUS_TIMED_OUT
                                                  : v1::JOB_STATUS_FAILED;
  }
}

}  // namespace

Hub::Hub(store::Store& store, ControllerOptions options, const Clock& clock)
    : store_(store),
      options_(options),
      clock_(clock),
      adaptive_(store, clock_, [this](const std::string& run_id) { OnRunExtended(run_id); }),
      reboots_(options.reboot_timeout_ms, options.reboot_return_ms) {
  store_.SetEventSink(
      [this](const std::vector<v1::RunEvent>& events) { PublishRunEvents(events); });
}

Hub::~Hub() {
  Stop();
  store_.SetEventSink(nullptr);
}

int64_t Hub::grace_ms() const {
  return options_.reconnect_grace_ms > 0 ? options_.reconnect_grace_ms : options_.lease_ms + 30'000;
}

void Hub::AddObserver(FleetObserver* observer) { hub_.Add(observer); }

void Hub::Recover() {
  const int64_t now = Now();
  absl::StatusOr<std::vector<store::RebootRecord>> reboots = store_.Reboots();
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> peers =
      store_.PeerReservations();
  absl::StatusOr<std::vector<store::StoredHost>> hosts = store_.ListHosts();
  {
    absl::MutexLock lock(&mu_);
    if (reboots.ok()) {
      reboots_.Restore(*reboots);
      for (const store::RebootRecord& r : *reboots) {
        spdlog::info("agent={} was asked to reboot for run={} (boot {}); waiting for it",
                     r.agent_id, r.run_id, r.boot_id);
      }
    } else {
      spdlog::error("restoring reboot requests failed: {}", reboots.status().ToString());
    }
    if (peers.ok()) {
      peers_.Restore(*peers);
    } else {
      spdlog::error("restoring peer reservations failed: {}", peers.status().ToString());
    }
    if (hosts.ok()) {
      // Away since now: a host counts for "can anyone run this?" while it reconnects.
      for (store::StoredHost& h : *hosts) {
        KnownHost& known = known_hosts_[h.agent_id];
        if (known.connected) continue;
        known.info = std::move(h.info);
        known.away_since_ms = now;
        // Nobody could talk to a controller that was down: silence counts from its start.
        known.last_heard_ms = now;
      }
    }
  }
  // Builds that were building when the controller stopped: their builders ended them with
  // their streams (builds are not spooled), so they are queued again.
  if (absl::StatusOr<std::vector<int64_t>> released =
          store_.ReleaseBuilds("", "the controller restarted during the build", now);
      !released.ok()) {
    spdlog::error("giving back the builds in progress failed: {}", released.status().ToString());
  } else if (!released->empty()) {
    spdlog::info("{} build(s) in progress when the controller stopped are queued again",
                 released->size());
  }
  // Leases that ran out while the controller was down are not judged before the agents had
  // time to come back and report them.
  absl::StatusOr<int64_t> extended = store_.ExtendLeases(now + grace_ms());
  if (extended.ok()) {
    if (*extended > 0) {
      spdlog::info("{} lease(s) extended by {} s for their agents to reconnect and report",
                   *extended, grace_ms() / 1000);
    }
  } else {
    spdlog::error("extending leases after the restart failed: {}", extended.status().ToString());
    absl::MutexLock lock(&mu_);
    store_outage_ = true;
  }
}

void Hub::Start() {
  Recover();
  hub_.Start();
  adaptive_.Start();
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

void Hub::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (ticker_.joinable()) ticker_.join();
  {
    // Callbacks of writes already handed to the store still come; they must find us.
    absl::MutexLock lock(&calls_mu_);
    calls_mu_.Await(absl::Condition(
        +[](int64_t* n) { return *n == 0; }, &calls_in_flight_));
  }
  adaptive_.Stop();
  hub_.Stop();
}

void Hub::BeginCall() {
  absl::MutexLock lock(&calls_mu_);
  ++calls_in_flight_;
}

void Hub::EndCall() {
  absl::MutexLock lock(&calls_mu_);
  --calls_in_flight_;
}

void Hub::PublishRunEvents(const std::vector<v1::RunEvent>& events) {
  for (const v1::RunEvent& event : events) active_runs_.MarkStale(event.run_id());
  if (hub_.empty()) return;
  for (const v1::RunEvent& event : events) {
    hub_.Post([event](FleetObserver& o) { o.OnRunEvent(event); });
    if (event.has_state() && Terminal(event.state().state())) {
      // Loaded on the hub's thread: the sink runs on the store's writer thread.
      hub_.PostTask([this, run_id = event.run_id()](const std::vector<FleetObserver*>& all) {
        absl::StatusOr<v1::Run> run = store_.GetRun(run_id);
        if (!run.ok()) {
          spdlog::error("run={} finished, but reading it failed: {}", run_id,
                        run.status().ToString());
          return;
        }
        for (FleetObserver* o : all) o->OnRunFinished(*run);
      });
    }
  }
}

void Hub::OnRunExtended(const std::string& run_id) {
  Later later;
  {
    absl::MutexLock lock(&mu_);
    work_since_ms_ = Now();
    active_runs_.MarkStale(run_id);
    builds_maybe_queued_ = true;
    DispatchBuildsLocked();
    DispatchAllLocked(later);
  }
  later.Run();
}

// --- agent streams ------------------------------------------------------------------------

absl::Status Hub::Register(AgentChannel* channel, const v1::Hello& hello,
                           const std::string& principal) {
  if (hello.protocol_version() != v1::PROTOCOL_VERSION_1) {
    return absl::FailedPreconditionError(absl::StrCat("unsupported protocol version ",
                                                      hello.protocol_version(),
                                                      "; this controller speaks version 1"));
  }
  const std::string& agent_id = hello.agent_id();
  // What the agent says it can run goes with the host, where host matching reads it.
  v1::HostInfo host = hello.host();
  host.clear_workloads();
  host.clear_monitors();
  for (const std::string& capability : hello.capabilities()) {
    if (absl::StartsWith(capability, "workload:")) host.add_workloads(capability.substr(9));
    if (absl::StartsWith(capability, "monitor:")) host.add_monitors(capability.substr(8));
  }
  if (agent_id.empty()) return absl::InvalidArgumentError("hello.agent_id: empty");
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the controller is stopping");
    if (absl::Status s = sessions_.CheckAdd(agent_id, host); !s.ok()) return s;
  }
  // What the agent holds, judged against what the database gives it, before it gets anything
  // new: a returning agent never holds two leases.
  store::AgentReport report;
  report.running_lease = hello.running_lease_id();
  for (const v1::SpooledLease& lease : hello.spooled()) report.spooled.push_back(lease.lease_id());
  absl::StatusOr<store::Reconciled> reconciled = store_.RegisterAgent(
      agent_id, host, principal, report, Now(), options_.lease_ms, options_.max_attempts);
  if (!reconciled.ok()) {
    if (!store::IsStorageFailure(reconciled.status())) return reconciled.status();
    absl::MutexLock lock(&mu_);
    NoteStoreFailureLocked(reconciled.status());
    return absl::UnavailableError(absl::StrCat("the controller cannot write its database (",
                                               reconciled.status().message(),
                                               "); keep your spool and retry later"));
  }

  Later later;
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Sessions::Added> added =
        sessions_.Add(channel, next_stream_++, agent_id, host, principal);
    if (!added.ok()) return added.status();  // another stream of it registered meanwhile
    Session& session = *added->session;
    session.registered_ms = Now();
    session.last_heard_ms = session.registered_ms;
    if (added->replaced.has_value()) {
      spdlog::warn(
          "agent={} host={} connected from {} on boot {}; its stream from boot {} is "
          "dropped (a host is on one boot at a time)",
          agent_id, host.hostname(), channel->Peer(), host.boot_id(),
          added->replaced->host.boot_id());
      EndSessionLocked(*added->replaced, later);
      ReleaseBuildsOfLocked(*added->replaced, "its builder's stream ended");
    }
    session.lease_id = reconciled->running_lease;
    KnownHost& known = known_hosts_[agent_id];
    known.info = host;
    known.connected = true;
    known.last_heard_ms = session.last_heard_ms;
    for (const store::ExpiredLease& e : reconciled->released) {
      OnLeaseTakenBackLocked(e, "the agent came back without it", later);
    }
    if (!reconciled->running_lease.empty() || !reconciled->renewed.empty()) {
      spdlog::info("agent={} still holds lease(s):{}{} (renewed)", agent_id,
                   reconciled->running_lease.empty()
                       ? ""
                       : absl::StrCat(" running ", reconciled->running_lease),
                   reconciled->renewed.empty()
                       ? ""
                       : absl::StrCat(" finished ", absl::StrJoin(reconciled->renewed, ",")));
    }
    const RebootCoordinator::Return back = reboots_.OnRegister(agent_id, host.boot_id());
    if (back.kind == RebootCoordinator::Return::Kind::kRebooted) {
      spdlog::info("agent={} host={} rebooted: boot {} -> {}", agent_id, host.hostname(),
                   back.from_boot_id, host.boot_id());
      RecordRebootLocked(v1::RebootEvent::KIND_COMPLETED, back.run_id, agent_id, host.hostname(),
                         back.from_boot_id, host.boot_id(), "");
      SaveRebootLocked(agent_id);
      dispatch_needed_ = true;
    } else if (back.kind == RebootCoordinator::Return::Kind::kSameBoot) {
      spdlog::warn("agent={} host={} reconnected on boot {}, which it was asked to leave", agent_id,
                   host.hostname(), host.boot_id());
      SaveRebootLocked(agent_id);
    }
    spdlog::info(
        "agent={} host={} connected from {} boot={} microarch={} cpus={} ceiling={}{}", agent_id,
        host.hostname(), channel->Peer(), host.boot_id(), host.cpu().microarch(),
        host.logical_cpus(),
        host.ceiling().has_value() ? absl::StrCat(host.ceiling().value()) : host.ceiling().reason(),
        principal.empty() ? "" : absl::StrCat(" principal=", principal));
    v1::ControllerMessage welcome;
    welcome.mutable_welcome()->set_controller_version(kVersion);
    welcome.mutable_welcome()->set_heartbeat_seconds(
        static_cast<uint32_t>(std::max<int64_t>(1, options_.heartbeat_ms / 1000)));
    welcome.mutable_welcome()->set_lease_seconds(
        static_cast<uint32_t>(std::max<int64_t>(1, options_.lease_ms / 1000)));
    welcome.mutable_welcome()->set_accepts_shared_origin(true);  // store/results.cc
    channel->Send(welcome);
    if (!host.kernel_sources().empty()) {
      builds_maybe_queued_ = true;
      DispatchBuildsLocked();
    }
    hub_.Post([agent_id, host](FleetObserver& o) { o.OnAgentConnected(agent_id, host); });
    // The agent becomes dispatchable with its first idle heartbeat, after it has replayed its
    // spool.
  }
  later.Run();
  return absl::OkStatus();
}

void Hub::EndSessionLocked(const Session& session, Later& later) {
  if (!session.lease_id.empty()) ReleasePeerLocked(session.lease_id, later);
  peers_.EndLeasing(session.agent_id);
}

void Hub::Unregister(AgentChannel* channel) {
  Later later;
  {
    absl::MutexLock lock(&mu_);
    std::optional<Session> session = sessions_.Remove(channel);
    if (!session.has_value()) return;  // refused, or replaced by a stream from a newer boot
    spdlog::info("agent={} host={} disconnected{}", session->agent_id, session->host.hostname(),
                 session->lease_id.empty()
                     ? ""
                     : absl::StrCat(" while holding lease ", session->lease_id,
                                    " (judged when it returns, or re-queued if it does not)"));
    EndSessionLocked(*session, later);
    // Builds are not spooled: the builder ended its build with its stream.
    ReleaseBuildsOfLocked(*session, "its builder's stream ended");
    reboots_.OnDisconnect(session->agent_id);
    KnownHost& known = known_hosts_[session->agent_id];
    known.connected = false;
    known.away_since_ms = Now();
    known.last_heard_ms = session->last_heard_ms;
    hub_.Post(
        [agent_id = session->agent_id](FleetObserver& o) { o.OnAgentDisconnected(agent_id); });
  }
  later.Run();
}

void Hub::OnMessage(AgentChannel* channel, v1::AgentMessage message) {
  Later later;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    Session* session = sessions_.ByChannel(channel);
    // A stream that was replaced by a newer one, or one being closed after a failed write.
    if (session == nullptr || session->broken) return;
    session->last_heard_ms = Now();
    switch (message.body_case()) {
      case v1::AgentMessage::kHeartbeat:
        HandleHeartbeatLocked(*session, message.heartbeat(), later);
        break;
      case v1::AgentMessage::kSamples:
        // Moved, not copied: a batch is the bulk of what agents send.
        HandleSamplesLocked(*session, std::move(*message.mutable_samples()), later);
        break;
      case v1::AgentMessage::kComplete:
        HandleCompleteLocked(*session, message.complete(), later);
        break;
      case v1::AgentMessage::kProgress:
        HandleProgressLocked(*session, message.progress());
        break;
      case v1::AgentMessage::kBuildProgress:
        HandleBuildProgressLocked(*session, message.build_progress());
        break;
      case v1::AgentMessage::kGitAnswer:
        if (auto q = git_queries_.find(message.git_answer().query_id());
            q != git_queries_.end() && q->second == session->agent_id) {
          git_answers_[q->first] = message.git_answer();
        }
        break;
      case v1::AgentMessage::kBuildComplete:
        HandleBuildCompleteLocked(*session, message.build_complete());
        DispatchBuildsLocked();
        break;
      case v1::AgentMessage::kHello:
        spdlog::warn("agent={} sent a second Hello; ignored", session->agent_id);
        break;
      case v1::AgentMessage::BODY_NOT_SET:
        break;
    }
  }
  later.Run();
}

void Hub::HandleHeartbeatLocked(Session& session, const v1::Heartbeat& heartbeat, Later& later) {
  if (heartbeat.state() == v1::AGENT_STATE_RUNNING && !heartbeat.lease_id().empty()) {
    sessions_.SetIdle(session, false, Now());
    session.rebooting = false;
    // Adopt the agent's lease only if this session holds none (a reconnect). One it holds
    // stays: the agent may name a stale lease, which the store refuses below; taking that
    // one instead would let its rejected completion free the session for a second lease.
    if (session.lease_id.empty()) session.lease_id = heartbeat.lease_id();
    later.Add([this, agent_id = session.agent_id, stream = session.stream,
               lease_id = heartbeat.lease_id(), now = Now()] {
      store_.RenewLeaseAsync(
          lease_id, agent_id, now, options_.lease_ms,
          Tracked<bool>([this, agent_id, stream, lease_id](absl::StatusOr<bool> held) {
            absl::MutexLock lock(&mu_);
            if (!held.ok()) {
              spdlog::error("agent={} renew lease {}: {}", agent_id, lease_id,
                            held.status().ToString());
              NoteStoreFailureLocked(held.status());
              return;
            }
            Session* s = sessions_.FindStream(agent_id, stream);
            if (*held || s == nullptr || s->broken) return;
            // The lease expired or was cancelled: stop the agent wasting its time on it.
            spdlog::warn("agent={} runs lease {} that it no longer holds; cancelling it", agent_id,
                         lease_id);
            s->channel->Send(Cancel(lease_id, "lease no longer held"));
          }));
    });
    return;
  }
  if (heartbeat.state() == v1::AGENT_STATE_REBOOTING) {
    sessions_.SetIdle(session, false, Now());
    if (!session.rebooting) {
      spdlog::info("agent={} host={} says it is rebooting", session.agent_id,
                   session.host.hostname());
    }
    session.rebooting = true;
    if (reboots_.OnRebooting(session.agent_id)) SaveRebootLocked(session.agent_id);
    return;
  }
  if (heartbeat.state() == v1::AGENT_STATE_IDLE) {
    session.rebooting = false;
    // An idle heartbeat can cross an assignment on the wire. The host stays busy until it
    // completes the lease or the lease expires (which also covers a lost assignment).
    if (!session.lease_id.empty()) return;
    // Likewise a reboot request: the host is going down, or will say why it cannot.
    if (reboots_.Pending(session.agent_id)) return;
    if (!session.idle) sessions_.SetIdle(session, true, Now());
    DispatchOneLocked(session, later);
  }
}

void Hub::HandleSamplesLocked(Session& session, v1::SampleBatch&& batch, Later& later) {
  later.Add([this, agent_id = session.agent_id, stream = session.stream, chain = session.chain,
             batch = std::move(batch), renew_until = Now() + options_.lease_ms]() mutable {
    const auto started = std::chrono::steady_clock::now();
    // Read before the batch moves to the store (argument order is unspecified).
    std::string lease_id = batch.lease_id();
    const int64_t job_id = batch.job_id();
    const int n = batch.samples_size();
    store_.IngestSamplesAsync(
        agent_id, std::move(batch), renew_until, chain,
        Tracked<store::IngestResult>([this, agent_id, stream, lease_id = std::move(lease_id),
                                      job_id, n,
                                      started](absl::StatusOr<store::IngestResult> result) {
          v1::SampleBatch summary;
          summary.set_lease_id(lease_id);
          summary.set_job_id(job_id);
          const double seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
          if (!result.ok())
            spdlog::error("agent={} lease={}: {} samples not stored", agent_id, lease_id, n);
          OnStored(agent_id, stream, summary, seconds, std::move(result));
        }));
  });
}

void Hub::OnStored(const std::string& agent_id, uint64_t stream, const v1::SampleBatch& batch,
                   double seconds, absl::StatusOr<store::IngestResult> result) {
  absl::MutexLock lock(&mu_);
  Session* session = sessions_.FindStream(agent_id, stream);
  if (!result.ok()) {
    // Not acked, and nothing after it on this stream is handled: the agent keeps the samples
    // in its spool and resends them (with the completion) after reconnecting.
    spdlog::error("agent={} lease={} storing {}", agent_id, batch.lease_id(),
                  result.status().ToString());
    NoteStoreFailureLocked(result.status());
    if (session != nullptr) BreakStreamLocked(*session, result.status());
    return;
  }
  v1::SampleAck ack;
  ack.set_lease_id(batch.lease_id());
  if (result->rejected) {
    spdlog::warn("agent={} lease={} job={}: rejected samples: {}", agent_id, batch.lease_id(),
                 batch.job_id(), result->reason);
    ack.set_rejected(true);
    ack.set_reason(result->reason);
  } else {
    ack.set_through_seq(result->through_seq);
    spdlog::debug("agent={} lease={} stored {} samples", agent_id, batch.lease_id(),
                  result->stored);
    hub_.Post([stored = result->stored, seconds](FleetObserver& o) {
      o.OnSamplesIngested(stored, seconds);
    });
  }
  if (session != nullptr && !session->broken) session->channel->Send(Wrap(std::move(ack)));
}

void Hub::HandleCompleteLocked(Session& session, const v1::JobComplete& complete, Later& later) {
  ReleasePeerLocked(complete.lease_id(), later);  // the client is done with its peer
  later.Add([this, agent_id = session.agent_id, stream = session.stream, chain = session.chain,
             complete, now = Now()] {
    store_.CompleteJobAsync(
        agent_id, complete, now, options_.max_attempts, chain,
        Tracked<store::CompletionResult>(
            [this, agent_id, stream, complete](absl::StatusOr<store::CompletionResult> result) {
              OnCompleted(agent_id, stream, complete, std::move(result));
            }));
  });
}

void Hub::OnCompleted(const std::string& agent_id, uint64_t stream, const v1::JobComplete& complete,
                      absl::StatusOr<store::CompletionResult> result) {
  Later later;
  {
    absl::MutexLock lock(&mu_);
    Session* session = sessions_.FindStream(agent_id, stream);
    if (!result.ok()) {
      // Not acked: the agent keeps the result and resends it after reconnecting.
      spdlog::error("agent={} lease={} completion failed: {}", agent_id, complete.lease_id(),
                    result.status().ToString());
      NoteStoreFailureLocked(result.status());
      if (session != nullptr) BreakStreamLocked(*session, result.status());
      return;
    }
    v1::CompletionAck ack;
    ack.set_lease_id(complete.lease_id());
    if (result->rejected) {
      spdlog::warn("agent={} lease={} job={}: completion rejected: {}", agent_id,
                   complete.lease_id(), complete.job_id(), result->reason);
      ack.set_rejected(true);
      ack.set_reason(result->reason);
    } else if (result->requeued) {
      spdlog::warn("agent={} lease={} job={}: refused by the agent ({}); {}", agent_id,
                   complete.lease_id(), complete.job_id(), complete.error(),
                   result->job_state == v1::JOB_STATE_QUEUED ? "re-queued"
                                                             : "too many attempts, run failed");
      work_since_ms_ = Now();
      dispatch_needed_ = true;
    } else {
      spdlog::info("agent={} run={} job={} lease={} {} ({} samples, {:.1f} s){}", agent_id,
                   result->run_id, complete.job_id(), complete.lease_id(),
                   v1::JobStatus_Name(complete.status()), complete.sample_count(),
                   complete.elapsed_seconds(),
                   complete.error().empty() ? "" : absl::StrCat(": ", complete.error()));
      if (!result->replay) {
        hub_.Post([benchmark = result->benchmark,
                   status = FinishedStatus(result->job_state, complete.status()),
                   elapsed = complete.elapsed_seconds()](FleetObserver& o) {
          o.OnJobFinished(benchmark, status, elapsed);
        });
      }
      if (result->awaiting_decision) adaptive_.Wake();
    }
    if (result->run_finished) {
      spdlog::info("run={} finished: {}", result->run_id, v1::RunState_Name(result->run_state));
    }
    if (session == nullptr || session->broken) return;
    session->channel->Send(Wrap(std::move(ack)));
    if (session->lease_id == complete.lease_id()) {
      session->lease_id.clear();
      // A refusal says the agent is busy (rebooting, stopping): it says when it is idle.
      if (!result->requeued) sessions_.SetIdle(*session, true, Now());
    }
    DispatchOneLocked(*session, later);
  }
  later.Run();
}

void Hub::HandleProgressLocked(Session& session, const v1::JobProgress& progress) {
  if (progress.lease_id().empty()) {
    // Without a lease: the agent could not carry out the reboot (its command failed).
    if (std::optional<std::string> run_id = reboots_.OnCannotReboot(session.agent_id)) {
      spdlog::warn("agent={} host={}: {}", session.agent_id, session.host.hostname(),
                   progress.message());
      SaveRebootLocked(session.agent_id);
      session.rebooting = false;
      const std::string error =
          absl::StrCat("host ", session.host.hostname(), " could not reboot: ", progress.message());
      RecordRebootLocked(v1::RebootEvent::KIND_FAILED, *run_id, session.agent_id,
                         session.host.hostname(), session.host.boot_id(), "", error);
      FailRunLocked(*run_id, error);
      return;
    }
  }
  spdlog::debug("agent={} lease={} progress: {}", session.agent_id, progress.lease_id(),
                progress.message());
}

void Hub::BreakStreamLocked(Session& session, const absl::Status& why) {
  if (session.broken) return;
  session.broken = true;
  session.chain->Fail();
  spdlog::warn("agent={} host={}: closing its stream ({}); it reconnects and resends what it holds",
               session.agent_id, session.host.hostname(), why.ToString());
  session.channel->Close(
      absl::UnavailableError(absl::StrCat("the controller could not store what this stream sent (",
                                          why.message(), "); reconnect and resend")));
}

void Hub::NoteStoreFailureLocked(const absl::Status& status) {
  if (!store::IsStorageFailure(status) || store_outage_) return;
  store_outage_ = true;
  spdlog::error(
      "store: writes fail ({}); no new work is leased and no lease is judged until they succeed "
      "again",
      status.ToString());
}

// --- ticker -------------------------------------------------------------------------------

void Hub::Tick() {
  const int64_t now = Now();
  bool outage = false;
  {
    absl::MutexLock lock(&mu_);
    if (store_.writes_failing()) NoteStoreFailureLocked(store_.last_write_failure());
    outage = store_outage_;
  }
  absl::StatusOr<std::vector<store::ExpiredLease>> expired = std::vector<store::ExpiredLease>();
  if (outage) {
    // Renewals failed during the outage: agents get the grace again before their leases are
    // judged, counted from the first write that works.
    absl::StatusOr<int64_t> extended = store_.ExtendLeases(now + grace_ms());
    absl::MutexLock lock(&mu_);
    if (extended.ok()) {
      store_outage_ = false;
      dispatch_needed_ = true;
      spdlog::info("store: writes work again; {} lease(s) extended by {} s for agents to report",
                   *extended, grace_ms() / 1000);
    }
  } else {
    expired = store_.ExpireLeases(now, options_.max_attempts);
  }
  Later later;
  {
    absl::MutexLock lock(&mu_);
    CheckRebootsLocked();
    if (!outage) CheckLostHostsLocked();
    if (!expired.ok()) {
      spdlog::error("lease expiry failed: {}", expired.status().ToString());
      NoteStoreFailureLocked(expired.status());
    } else {
      for (const store::ExpiredLease& e : *expired) {
        OnLeaseTakenBackLocked(
            e, absl::StrCat("lease expired: its agent was silent for ", options_.lease_ms, " ms"),
            later);
        hub_.Post([run_id = e.run_id, requeued = e.requeued](FleetObserver& o) {
          o.OnLeaseExpired(run_id, requeued);
        });
        Session* session = sessions_.Find(e.agent_id);
        if (session != nullptr && session->lease_id == e.lease_id) {
          session->channel->Send(Cancel(e.lease_id, "lease expired"));
          session->lease_id.clear();
        }
      }
    }
    CheckBuildsLocked();
    DispatchBuildsLocked();
    DispatchAllLocked(later);
  }
  later.Run();
}

void Hub::OnLeaseTakenBackLocked(const store::ExpiredLease& e, const std::string& why,
                                 Later& later) {
  spdlog::warn("run={} job={} lease={} agent={}: {}; {}", e.run_id, e.job_id, e.lease_id,
               e.agent_id, why, e.requeued ? "re-queued" : "too many attempts, run failed");
  if (e.requeued) {
    work_since_ms_ = Now();
    dispatch_needed_ = true;
  }
  ReleasePeerLocked(e.lease_id, later);
}

// --- FleetState: what the run service asks of the hub ---

void Hub::DecorateRunLocked(v1::Run& run) const {
  *run.mutable_on_host_lost() = scheduler::EffectiveHostLostPolicy(run.spec());
  for (v1::LostHost& wait : lost_hosts_.WaitingFor(run.id(), Now())) {
    *run.add_waiting_for() = std::move(wait);
  }
}

void Hub::DecorateRun(v1::Run& run) {
  absl::MutexLock lock(&mu_);
  DecorateRunLocked(run);
}

void Hub::DecorateHost(v1::Host& host) {
  absl::MutexLock lock(&mu_);
  if (const Session* s = sessions_.Find(host.agent_id()); s != nullptr) {
    host.set_connected(true);
    // The live session knows its lease before the store has it.
    if (!s->lease_id.empty()) host.set_current_lease(s->lease_id);
  }
  if (std::optional<store::RebootRecord> reboot = reboots_.Get(host.agent_id());
      reboot.has_value()) {
    host.set_rebooting(true);
    host.set_rebooting_for_run(reboot->run_id);
  }
  for (v1::LostHostRun& waiting : lost_hosts_.WaitingOn(host.agent_id(), Now())) {
    *host.add_waited_on_by() = std::move(waiting);
  }
}

void Hub::CancelLeases(const std::vector<std::pair<std::string, std::string>>& running,
                       const std::string& reason) {
  absl::MutexLock lock(&mu_);
  for (const auto& [agent_id, lease_id] : running) {
    if (Session* s = sessions_.Find(agent_id); s != nullptr) {
      s->channel->Send(Cancel(lease_id, reason));
    }
  }
}

absl::Status Hub::CheckKernel(v1::KernelRevision& kernel, const std::string& field) {
  absl::MutexLock lock(&mu_);
  if (options_.artifacts == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(field, ": this controller keeps no artifacts (no artifact store), so it",
                     " cannot run kernels built from source"));
  }
  // Builders the controller knows of, connected or briefly away: a source is the agent's own
  // configuration, so only they can say what it has.
  std::set<std::string> builders;
  std::set<std::string> sources;
  std::set<std::string> configs;
  std::set<std::string> archs;          // of the builds of kernel.source
  std::set<std::string> install_archs;  // of the hosts that can install a built kernel
  for (const auto& [id, known] : known_hosts_) {
    if (known.info.can_install_kernels()) install_archs.insert(known.info.arch());
    for (const v1::KernelSourceInfo& source : known.info.kernel_sources()) {
      builders.insert(known.info.hostname());
      sources.insert(source.name());
      if (source.name() == kernel.source()) {
        configs.insert(source.configs().begin(), source.configs().end());
        archs.insert(source.arch());
      }
    }
  }
  if (sources.count(kernel.source()) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".source: no builder agent has a kernel source named \"", kernel.source(), "\" (",
        builders.empty()
            ? std::string("no builder agent has connected (tlbfleet-agent --kernel-sources)")
            : absl::StrCat("sources: ", absl::StrJoin(sources, ", ")),
        ")"));
  }
  if (kernel.config().empty()) {
    if (configs.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".config: required: source ", kernel.source(), " has ",
                       configs.empty() ? std::string("no config")
                                       : absl::StrCat("configs ", absl::StrJoin(configs, ", "))));
    }
    kernel.set_config(*configs.begin());
  } else if (configs.count(kernel.config()) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".config: source ", kernel.source(), " has no build config \"", kernel.config(),
        "\" (it has ", configs.empty() ? std::string("none") : absl::StrJoin(configs, ", "), ")"));
  }
  // A build no host can boot would wait for ever: refused, when the hosts that can install
  // kernels are known and none is of the builds' architecture ("" = not said: not checked).
  archs.erase("");
  install_archs.erase("");
  if (!archs.empty() && !install_archs.empty()) {
    bool bootable = false;
    for (const std::string& arch : archs) bootable = bootable || install_archs.count(arch) > 0;
    if (!bootable) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".source: builds of ", kernel.source(), " are ", absl::StrJoin(archs, ", "),
          " and no host that can install kernels is (they are ", absl::StrJoin(install_archs, ", "),
          ")"));
    }
  }
  return absl::OkStatus();
}

void Hub::OfferWork(const std::string& run_id) {
  Later later;
  {
    absl::MutexLock lock(&mu_);
    work_since_ms_ = Now();
    active_runs_.MarkStale(run_id);
    builds_maybe_queued_ = true;  // the run may have builds
    DispatchBuildsLocked();
    DispatchAllLocked(later);
  }
  later.Run();
}

void Hub::CountAgents(uint64_t known_hosts, FleetSnapshot& snapshot) {
  absl::MutexLock lock(&mu_);
  snapshot.runs_waiting_for_lost_host = lost_hosts_.RunsWaiting();
  uint64_t away_rebooting = 0;
  for (const std::string& id : reboots_.AskedAgentIds()) {
    if (sessions_.Find(id) == nullptr) ++away_rebooting;
  }
  for (const auto& [id, session] : sessions_) {
    AgentState state = AgentState::kConnecting;
    if (reboots_.Pending(id) || session.rebooting) {
      state = AgentState::kRebooting;
    } else if (!session.lease_id.empty()) {
      state = AgentState::kRunning;
    } else if (session.idle) {
      state = AgentState::kIdle;
    }
    ++snapshot.agents[state];
    if (!session.host.ceiling().writable()) ++snapshot.agents_degraded;
  }
  snapshot.agents[AgentState::kRebooting] += away_rebooting;
  const uint64_t away = known_hosts > sessions_.size() ? known_hosts - sessions_.size() : 0;
  snapshot.agents[AgentState::kDisconnected] = away > away_rebooting ? away - away_rebooting : 0;
}

}  // namespace tlbfleet::core
