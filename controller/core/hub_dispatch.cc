// The hub: dispatch, reboots, lost hosts, failing runs.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "controller/core/hub.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::core {

// --- dispatch -----------------------------------------------------------------------------

const std::vector<store::ActiveRun>& Hub::ActiveRunsLocked() {
  // Re-reads only the runs whose events (a lease, a completion, a new run...) may have
  // changed them.
  return active_runs_.Current(store_, Now());
}

void Hub::DispatchAllLocked(Later& later) {
  const int64_t now = Now();
  const std::vector<store::ActiveRun>& runs = ActiveRunsLocked();
  if (runs.empty()) return;
  if (dispatch_needed_ || now - last_full_pass_ms_ >= 5'000) {
    dispatch_needed_ = false;
    last_full_pass_ms_ = now;
    // Hosts that count for "can anyone ever run this?": connected ones, those briefly away
    // (reconnecting, rebooting) and those asked to reboot that have not come back yet.
    std::vector<const v1::HostInfo*> hosts;
    for (const auto& [id, known] : known_hosts_) {
      if (known.connected || now - known.away_since_ms < options_.reboot_return_ms ||
          reboots_.Asked(id)) {
        hosts.push_back(&known.info);
      }
    }
    // A failed run has no queued jobs left, so dispatch below leases nothing of it.
    for (const Dispatcher::Unrunnable& u : Dispatcher::FindUnrunnable(runs, hosts)) {
      FailRunLocked(u.run_id, u.error);
    }
  }
  // Only idle agents, and only runs that may have work for them (ActiveRun::MayHaveWorkFor):
  // a pass costs little when there is nothing to do. Copied: dispatch changes the index.
  const std::vector<std::string> idle(sessions_.idle_ids().begin(), sessions_.idle_ids().end());
  for (const std::string& id : idle) {
    if (Session* session = sessions_.Find(id); session != nullptr) {
      DispatchOneLocked(*session, later);
    }
  }
}

void Hub::DispatchOneLocked(Session& session, Later& later) {
  if (!session.idle || !session.lease_id.empty() || session.dispatching || session.broken ||
      session.rebooting || stopping_ || store_outage_) {
    return;
  }
  if (reboots_.Pending(session.agent_id)) return;
  if (peers_.Serving(session.agent_id)) return;  // the peer of another host's job
  const std::vector<store::ActiveRun>& runs = ActiveRunsLocked();
  std::vector<Dispatcher::Candidate> candidates = Dispatcher::Candidates(session, runs);
  if (candidates.empty()) return;
  // A run that may need a peer is offered only with one at hand, reserved from now on.
  std::optional<PeerCandidate> peer;
  bool peer_sought = false;
  std::vector<std::string> run_ids;
  for (const Dispatcher::Candidate& c : candidates) {
    if (c.needs_peer) {
      if (!peer_sought) {
        peer_sought = true;
        peer = peers_.Choose(sessions_, session, c.run->run_id);
        if (peer.has_value()) peers_.ReserveWhileLeasing(session.agent_id, peer->agent_id);
      }
      if (!peer.has_value()) continue;
    }
    run_ids.push_back(c.run->run_id);
  }
  if (run_ids.empty()) return;
  session.dispatching = true;
  later.Add(
      [this, agent_id = session.agent_id, stream = session.stream,
       request = Dispatcher::Request(session, run_ids, Now(), options_.lease_ms, peer)]() mutable {
        store_.LeaseAsync(std::move(request),
                          Tracked<store::LeaseResult>(
                              [this, agent_id, stream](absl::StatusOr<store::LeaseResult> result) {
                                OnLeased(agent_id, stream, std::move(result));
                              }));
      });
}

void Hub::OnLeased(const std::string& agent_id, uint64_t stream,
                   absl::StatusOr<store::LeaseResult> result) {
  Later later;
  {
    absl::MutexLock lock(&mu_);
    peers_.EndLeasing(agent_id);
    Session* session = sessions_.FindStream(agent_id, stream);
    if (session != nullptr) session->dispatching = false;
    if (!result.ok()) {
      spdlog::error("dispatch to agent={}: {}", agent_id, result.status().ToString());
      NoteStoreFailureLocked(result.status());
      dispatch_needed_ = true;  // the next tick tries again
      return;
    }
    if (result->kind == store::LeaseResult::Kind::kNeedsReboot) {
      if (session != nullptr && session->idle && session->lease_id.empty() && !session->broken) {
        RequestRebootLocked(
            *session, result->run_id, result->reboot_reason, result->reboot_entry,
            result->reboot_kernel.artifact_id().empty() ? nullptr : &result->reboot_kernel);
      }
      return;
    }
    if (result->kind != store::LeaseResult::Kind::kLeased) return;
    const v1::JobAssignment& a = result->assignment;
    if (session == nullptr || !session->idle || !session->lease_id.empty() || session->broken ||
        stopping_) {
      // The agent went away (or got busy) while the store leased: it never sees this lease.
      spdlog::info("run={} job={} lease={}: agent={} went away before the assignment; released",
                   a.run_id(), a.job_id(), a.lease_id(), agent_id);
      later.Add([this, agent_id, lease_id = a.lease_id()] {
        absl::StatusOr<std::optional<store::ExpiredLease>> released =
            store_.ReleaseLease(lease_id, agent_id, "assignment not delivered",
                                /*count_attempt=*/false, Now(), options_.max_attempts);
        absl::MutexLock lock(&mu_);
        if (!released.ok()) {
          spdlog::error("lease={}: releasing it failed ({}); it expires instead", lease_id,
                        released.status().ToString());
          return;
        }
        work_since_ms_ = Now();
        dispatch_needed_ = true;
      });
      return;
    }
    if (!result->peer_agent_id.empty()) peers_.Reserve(a.lease_id(), result->peer_agent_id);
    spdlog::info("run={} job={} lease={} -> host={} agent={} (arm {}, {}={}, iteration {})",
                 a.run_id(), a.job_id(), a.lease_id(), session->host.hostname(), agent_id, a.arm(),
                 a.param_name().empty() ? "param" : a.param_name(), a.param_value(), a.iteration());
    const int64_t now = Now();
    const double waited =
        static_cast<double>(now - std::max(session->idle_since_ms, work_since_ms_)) / 1000.0;
    sessions_.SetIdle(*session, false, now);
    session->lease_id = a.lease_id();
    v1::ControllerMessage message;
    *message.mutable_assignment() = a;
    session->channel->Send(message);
    hub_.Post([benchmark = a.benchmark(), waited = std::max(0.0, waited)](FleetObserver& o) {
      o.OnJobDispatched(benchmark, waited);
    });
  }
  later.Run();
}

// --- reboots ------------------------------------------------------------------------------

void Hub::RequestRebootLocked(Session& session, const std::string& run_id, const std::string& why,
                              const std::string& boot_entry, const v1::KernelToBoot* kernel) {
  const RebootCoordinator::Decision decision = reboots_.Request(
      session.agent_id, session.host.hostname(), session.host.boot_id(), run_id, Now());
  SaveRebootLocked(session.agent_id);
  if (!decision.ask) {
    RecordRebootLocked(v1::RebootEvent::KIND_FAILED, run_id, session.agent_id,
                       session.host.hostname(), session.host.boot_id(), session.host.boot_id(),
                       decision.run_error);
    FailRunLocked(run_id, decision.run_error);
    return;
  }
  spdlog::info("agent={} host={}: asking for a reboot ({})", session.agent_id,
               session.host.hostname(), why);
  sessions_.SetIdle(session, false, Now());
  v1::ControllerMessage message;
  message.mutable_reboot()->set_reason(why);
  message.mutable_reboot()->set_boot_id(session.host.boot_id());
  message.mutable_reboot()->set_boot_entry(boot_entry);
  if (kernel != nullptr) *message.mutable_reboot()->mutable_kernel() = *kernel;
  session.channel->Send(message);
  RecordRebootLocked(v1::RebootEvent::KIND_REQUESTED, run_id, session.agent_id,
                     session.host.hostname(), session.host.boot_id(), "", why);
}

void Hub::SaveRebootLocked(const std::string& agent_id) {
  // Under mu_: rare, and the store's writer never waits for the core.
  std::optional<store::RebootRecord> record = reboots_.Get(agent_id);
  absl::Status s = record.has_value() ? store_.SaveReboot(*record) : store_.DeleteReboot(agent_id);
  if (!s.ok()) {
    spdlog::error("agent={}: storing its reboot request failed (a restart would forget it): {}",
                  agent_id, s.ToString());
  }
}

void Hub::CheckRebootsLocked() {
  const auto boot_of = [this](const std::string& agent_id) -> std::optional<std::string> {
    const Session* s = sessions_.Find(agent_id);
    if (s == nullptr) return std::nullopt;
    return s->host.boot_id();
  };
  for (const RebootCoordinator::Overdue& overdue : reboots_.TakeOverdue(Now(), boot_of)) {
    SaveRebootLocked(overdue.agent_id);
    const KnownHost* known = nullptr;
    if (auto it = known_hosts_.find(overdue.agent_id); it != known_hosts_.end()) {
      known = &it->second;
    }
    const std::string hostname = known != nullptr ? known->info.hostname() : overdue.agent_id;
    std::string error;
    if (overdue.kind == RebootCoordinator::Overdue::Kind::kStillUp) {
      error =
          absl::StrCat("host ", hostname, " did not reboot within ", reboots_.timeout_ms() / 1000,
                       " s of the request; it is still connected on boot ", overdue.boot_id);
      if (Session* s = sessions_.Find(overdue.agent_id); s != nullptr) {
        s->rebooting = false;
        sessions_.SetIdle(*s, true, Now());
      }
    } else {
      // A host that does not come back is a lost host: the run's on_host_lost policy decides
      // (fail it, restart the slot elsewhere, or keep waiting), at the watch's next pass.
      error = absl::StrCat("did not come back within ", reboots_.return_timeout_ms() / 1000,
                           " s of the reboot request (it left boot ", overdue.boot_id, ")");
      RecordRebootLocked(v1::RebootEvent::KIND_FAILED, overdue.run_id, overdue.agent_id, hostname,
                         overdue.boot_id, "", absl::StrCat("host ", hostname, " ", error));
      lost_hosts_.MarkLost(overdue.agent_id, error);
      continue;
    }
    RecordRebootLocked(v1::RebootEvent::KIND_FAILED, overdue.run_id, overdue.agent_id, hostname,
                       overdue.boot_id, "", error);
    FailRunLocked(overdue.run_id, error);
  }
}

// --- lost hosts ---------------------------------------------------------------------------

LostHostWatch::Presence Hub::PresenceLocked(const store::ActiveRun::Holder& holder,
                                            int64_t now_ms) const {
  LostHostWatch::Presence p;
  // Two heartbeats missed: an agent sends one every heartbeat_ms whatever it is doing.
  const int64_t silence_ms = std::max<int64_t>(2 * options_.heartbeat_ms + 1'000, 3'000);
  const Session* s = sessions_.Find(holder.agent_id);
  const bool same_machine =
      s != nullptr && (holder.machine_id.empty() || s->host.machine_id().empty() ||
                       s->host.machine_id() == holder.machine_id);
  if (same_machine && !s->broken && now_ms - s->last_heard_ms <= silence_ms) {
    p.present = true;
    return p;
  }
  if (same_machine) {
    p.silent_since_ms = s->last_heard_ms;
  } else if (s != nullptr) {
    // The agent id is back on another machine: the slot's machine was last heard before that.
    p.silent_since_ms = s->registered_ms;
  } else if (auto it = known_hosts_.find(holder.agent_id); it != known_hosts_.end()) {
    p.silent_since_ms = it->second.last_heard_ms;
  } else {
    p.silent_since_ms = now_ms;  // never seen by this controller (not yet reconnected)
  }
  p.rebooting = reboots_.Asked(holder.agent_id);
  return p;
}

void Hub::RecordSlotHostLocked(v1::SlotHostEvent::Kind kind, const LostHostWatch::Action& action,
                               const std::string& message) {
  v1::RunEvent event;
  event.set_run_id(action.run_id);
  event.set_time_unix_ms(Now());
  v1::SlotHostEvent* e = event.mutable_slot_host();
  e->set_kind(kind);
  e->set_slot(static_cast<uint32_t>(action.slot));
  e->set_agent_id(action.holder.agent_id);
  e->set_hostname(action.holder.hostname);
  e->set_machine_id(action.holder.machine_id);
  e->set_silent_since_unix_ms(action.silent_since_ms);
  e->set_action(action.policy.action());
  e->set_after_seconds(action.policy.after_seconds());
  e->set_boot_index(-1);
  e->set_message(message);
  if (absl::StatusOr<v1::RunEvent> stored = store_.RecordRunEvent(std::move(event)); !stored.ok()) {
    spdlog::error("run={} slot={}: recording a lost-host event failed: {}", action.run_id,
                  action.slot, stored.status().ToString());
  }
}

void Hub::CheckLostHostsLocked() {
  const int64_t now = Now();
  const std::vector<store::ActiveRun>& runs = ActiveRunsLocked();
  const std::vector<LostHostWatch::Action> actions = lost_hosts_.Check(
      runs, [&](const store::ActiveRun::Holder& h) { return PresenceLocked(h, now); }, now);
  for (const LostHostWatch::Action& a : actions) {
    switch (a.kind) {
      case LostHostWatch::Action::Kind::kSilent:
        spdlog::warn("run={} slot={}: {}", a.run_id, a.slot, a.message);
        RecordSlotHostLocked(v1::SlotHostEvent::KIND_SILENT, a, a.message);
        break;
      case LostHostWatch::Action::Kind::kReturned:
        spdlog::info("run={} slot={}: {}", a.run_id, a.slot, a.message);
        RecordSlotHostLocked(v1::SlotHostEvent::KIND_RETURNED, a, a.message);
        break;
      case LostHostWatch::Action::Kind::kFail: {
        // Under mu_: rare, and the store's readers never wait for the core.
        absl::StatusOr<store::SlotProgress> done = store_.SlotProgressOf(a.run_id, a.slot);
        const std::string measured =
            done.ok() ? absl::StrCat("; slot ", a.slot, " had measured ", done->jobs_done, " of ",
                                     done->jobs_total, " jobs (", done->boots_touched, " boot",
                                     done->boots_touched == 1 ? "" : "s", ", ", done->samples,
                                     " samples, kept)")
                      : std::string();
        const std::string error = absl::StrCat("host ", a.message, measured);
        RecordSlotHostLocked(v1::SlotHostEvent::KIND_FAILED, a, error);
        FailRunLocked(a.run_id, error);
        break;
      }
      case LostHostWatch::Action::Kind::kRestart: {
        const std::string reason = absl::StrCat("slot ", a.slot, " restarted: ", a.message);
        absl::StatusOr<store::SlotRestart> restarted =
            store_.RestartSlot(a.run_id, a.slot, a.holder.agent_id, reason, now);
        if (!restarted.ok()) {
          spdlog::error("run={} slot={}: restarting it failed ({}); trying again", a.run_id, a.slot,
                        restarted.status().ToString());
          NoteStoreFailureLocked(restarted.status());
          lost_hosts_.ActionFailed(a.run_id, a.slot);
          break;
        }
        if (!restarted->restarted) break;  // the slot changed meanwhile; the next pass sees it
        spdlog::warn(
            "run={} {} ({} finished jobs and {} samples kept, left out; measured again "
            "from the first job on an eligible host)",
            a.run_id, reason, restarted->jobs, restarted->samples);
        active_runs_.MarkStale(a.run_id);
        work_since_ms_ = now;
        dispatch_needed_ = true;
        break;
      }
    }
  }
}

void Hub::RecordRebootLocked(v1::RebootEvent::Kind kind, const std::string& run_id,
                             const std::string& agent_id, const std::string& hostname,
                             const std::string& from_boot, const std::string& to_boot,
                             const std::string& reason) {
  v1::RunEvent event;
  event.set_run_id(run_id);
  event.set_time_unix_ms(Now());
  v1::RebootEvent* reboot = event.mutable_reboot();
  reboot->set_kind(kind);
  reboot->set_agent_id(agent_id);
  reboot->set_hostname(hostname);
  reboot->set_from_boot_id(from_boot);
  reboot->set_to_boot_id(to_boot);
  reboot->set_reason(reason);
  if (absl::StatusOr<v1::RunEvent> stored = store_.RecordRunEvent(std::move(event)); !stored.ok()) {
    spdlog::error("run={} agent={}: recording the reboot event failed: {}", run_id, agent_id,
                  stored.status().ToString());
  }
  hub_.Post([kind](FleetObserver& o) { o.OnReboot(kind); });
}

void Hub::FailRunLocked(const std::string& run_id, const std::string& error) {
  spdlog::warn("run={} failed: {}", run_id, error);
  if (absl::Status s = store_.FailRun(run_id, error, Now()); !s.ok()) {
    spdlog::error("run={} failing: {}", run_id, s.ToString());
  }
  active_runs_.MarkStale(run_id);
}

void Hub::ReleasePeerLocked(const std::string& lease_id, Later& later) {
  std::optional<std::string> peer = peers_.Release(lease_id);
  if (!peer) return;
  if (Session* s = sessions_.Find(*peer); s != nullptr) DispatchOneLocked(*s, later);
}

}  // namespace tlbfleet::core
