#pragma once
// The hub agents talk to (AgentHub) and the state behind it, which the run service reads
// through FleetState. Internal to controller/core: the rest of the code sees agent_hub.h.
//
// Units, each with its own header:
//   sessions.h         connected agents, by agent id and by stream
//   dispatcher.h       which job an idle host runs next
//   reboots.h          hosts asked for a fresh boot, and whether they came back
//   adaptive_driver.h  grows or stops adaptive runs, on its own worker thread
//   peers.h            peers for jobs whose parameter resolves to one (netperf's server: peer)
//   lost_hosts.h       slots whose host went silent, and what on_host_lost does about them
//   observer_hub.h     delivers notifications to observers (observer.h) on its own thread
// and the store (controller/store/store.h) for everything durable.
//
// Thread-safe. Threads: the transport's (Register, OnMessage, Unregister, and the run
// service's calls through FleetState), the ticker (lease expiry, reboot deadlines, dispatch
// passes), the store's callback thread (what the store answered to the agent streams'
// writes), the adaptive driver's worker and the observer hub's. The agent streams' hot paths
// (samples, completions, heartbeats, leases) hand their writes to the store and return: their
// answers (acks, assignments) are sent from the store's callback thread once committed, so no
// gRPC thread waits for a disk, and the store's writer batches what many agents send into one
// transaction. Rare writes (a host registering, a reboot decision, a run failing) are made in
// place.
//
// Dispatch rule: a host takes at most one job at a time; a job goes only to an idle connected
// host that matches its run's host selector; runs are served oldest first.
//
// Locking: mu_ guards the hub's state. The store's asynchronous calls are made only after
// mu_ is released (their callbacks take mu_); synchronous store writes may be made under mu_,
// because the store's writer never takes a lock of the core.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "controller/core/active_runs.h"
#include "controller/core/adaptive_driver.h"
#include "controller/core/agent_channel.h"
#include "controller/core/agent_hub.h"
#include "controller/core/controller.h"
#include "controller/core/dispatcher.h"
#include "controller/core/lost_hosts.h"
#include "controller/core/observer.h"
#include "controller/core/observer_hub.h"
#include "controller/core/peers.h"
#include "controller/core/reboots.h"
#include "controller/core/run_service.h"
#include "controller/core/sessions.h"
#include "controller/store/store.h"
#include "tlbfleet/v1/agent.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::core {

// What the run service asks of the hub: only the hub knows which agents are connected, which
// are asked to reboot and which slots wait for a lost host. Each call takes the hub's lock
// once. Thread-safe.
class FleetState {
 public:
  virtual ~FleetState() = default;
  // Adds what only the core knows to a run read from the store: slots waiting for a lost host
  // (waiting_for) and the on_host_lost policy in force.
  virtual void DecorateRun(v1::Run& run) = 0;
  // Adds the live state of `host` (filled from the store): connected, its current lease,
  // rebooting for which run, and the runs waiting on it.
  virtual void DecorateHost(v1::Host& host) = 0;
  // Tells the agents that run `running` (agent id, lease id) to stop them.
  virtual void CancelLeases(const std::vector<std::pair<std::string, std::string>>& running,
                            const std::string& reason) = 0;
  // `run_id` has new queued work: offers it to idle hosts now.
  virtual void OfferWork(const std::string& run_id) = 0;
  // Checks an arm's kernel against the builder agents the controller knows (their sources and
  // configs: the agents' own configuration), filling in the config when the source has only
  // one. INVALID_ARGUMENT naming `field`.source / .config.
  virtual absl::Status CheckKernel(v1::KernelRevision& kernel, const std::string& field) = 0;
  // RunService::QueryGit.
  virtual absl::StatusOr<v1::GitAnswer> QueryGit(v1::GitQuery query, absl::Duration timeout) = 0;
  // Fills `snapshot.agents`, `agents_degraded` and `runs_waiting_for_lost_host`; `known_hosts`
  // is how many hosts the store knows.
  virtual void CountAgents(uint64_t known_hosts, FleetSnapshot& snapshot) = 0;
};

class Hub final : public AgentHub, public FleetState {
 public:
  // `store` and `clock` are not owned and must outlive the hub.
  Hub(store::Store& store, ControllerOptions options, const Clock& clock);
  ~Hub() override;
  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;

  // Before Start() only. Not owned; must outlive the hub (or its Stop()).
  void AddObserver(FleetObserver* observer);

  // Starts/stops the ticker, the adaptive driver's worker and the observer hub. Stop
  // delivers the observer calls already queued.
  void Start();
  void Stop();

  // --- AgentHub (agent_hub.h says what each does) ---
  absl::Status Register(AgentChannel* channel, const v1::Hello& hello,
                        const std::string& principal = "") override;
  void OnMessage(AgentChannel* channel, v1::AgentMessage message) override;
  void Unregister(AgentChannel* channel) override;

  // --- FleetState, for the run service ---
  void DecorateRun(v1::Run& run) override;
  void DecorateHost(v1::Host& host) override;
  void CancelLeases(const std::vector<std::pair<std::string, std::string>>& running,
                    const std::string& reason) override;
  void OfferWork(const std::string& run_id) override;
  absl::Status CheckKernel(v1::KernelRevision& kernel, const std::string& field) override;
  absl::StatusOr<v1::GitAnswer> QueryGit(v1::GitQuery query, absl::Duration timeout) override;
  void CountAgents(uint64_t known_hosts, FleetSnapshot& snapshot) override;

  // --- for tests ---
  // One pass of lease expiry, reboot deadlines and dispatch; the ticker calls it.
  void Tick();
  // What Start() restores from the store (reboot requests, peer reservations, known hosts)
  // and the grace it gives leases, without starting threads.
  void RecoverForTest() { Recover(); }
  // One pass of the adaptive driver on the caller's thread (tests do not Start()).
  void DecideAdaptiveRunsForTest() { adaptive_.DecideOnce(); }
  // Delivers queued observer calls on the caller's thread (tests do not Start()).
  void DeliverObserverCallsForTest() { hub_.DeliverPendingForTest(); }

 private:
  // Store calls to make once mu_ is released (see the class comment).
  class Later {
   public:
    void Add(std::function<void()> call) { calls_.push_back(std::move(call)); }
    void Run() {
      for (auto& call : calls_) call();
      calls_.clear();
    }

   private:
    std::vector<std::function<void()>> calls_;
  };
  // What the controller knows of every host that ever registered, for "can any host run
  // this run?": the connected ones and those briefly away count.
  struct KnownHost {
    v1::HostInfo info;
    bool connected = false;
    int64_t away_since_ms = 0;
    // Its last message; for hosts not heard from since this controller started, the start.
    int64_t last_heard_ms = 0;
  };

  int64_t Now() const { return clock_.NowMillis(); }
  int64_t grace_ms() const;
  void Recover();

  // An asynchronous store call is starting / its callback has finished (Stop waits for
  // those in flight).
  void BeginCall();
  void EndCall();
  template <typename T>
  store::StoreCallback<T> Tracked(std::function<void(absl::StatusOr<T>)> callback);

  // Dispatch. Passes read the active runs once (ActiveRunsLocked).
  const std::vector<store::ActiveRun>& ActiveRunsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DispatchAllLocked(Later& later) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DispatchOneLocked(Session& session, Later& later) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnLeased(const std::string& agent_id, uint64_t stream,
                absl::StatusOr<store::LeaseResult> result);

  void HandleHeartbeatLocked(Session& session, const v1::Heartbeat& heartbeat, Later& later)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleSamplesLocked(Session& session, v1::SampleBatch&& batch, Later& later)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleCompleteLocked(Session& session, const v1::JobComplete& complete, Later& later)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleProgressLocked(Session& session, const v1::JobProgress& progress)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnStored(const std::string& agent_id, uint64_t stream, const v1::SampleBatch& batch,
                double seconds, absl::StatusOr<store::IngestResult> result);
  void OnCompleted(const std::string& agent_id, uint64_t stream, const v1::JobComplete& complete,
                   absl::StatusOr<store::CompletionResult> result);
  // A write of the session's stream failed: nothing more it sends is handled, and the stream
  // is closed, so that the agent reconnects and resends what it holds.
  void BreakStreamLocked(Session& session, const absl::Status& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A write failed: if for a storage reason, leases are not judged until writes work again.
  void NoteStoreFailureLocked(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Kernel builds (hub_builds.cc): gives queued builds to free builder agents, keeps what they
  // report, stops builds whose run ended and unpins the artifacts of ended runs.
  void DispatchBuildsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleBuildProgressLocked(Session& session, const v1::BuildProgress& progress)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleBuildCompleteLocked(Session& session, const v1::BuildComplete& complete)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells the builder to stop `task_id`; it counts as busy until its BuildComplete for it.
  void StopBuildLocked(Session& session, int64_t task_id, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnBuildDoneLocked(Session& session, const v1::KernelBuild& build, const std::string& run_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseBuildsOfLocked(const Session& session, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckBuildsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Asks an idle host for a fresh boot for `run_id`, or fails the run when the host already
  // ignored such a request on this boot.
  // `boot_entry`: the agent's boot entry the new boot must be ("" = any).
  // `kernel`: the built kernel that entry is (a kernel arm's), or null.
  void RequestRebootLocked(Session& session, const std::string& run_id, const std::string& why,
                           const std::string& boot_entry, const v1::KernelToBoot* kernel = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckRebootsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The lost-host watch's pass: records slots whose host went silent or came back, and fails
  // runs or restarts slots whose host has been silent past their on_host_lost bound.
  void CheckLostHostsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How the watch sees the host holding a slot.
  LostHostWatch::Presence PresenceLocked(const store::ActiveRun::Holder& holder,
                                         int64_t now_ms) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RecordSlotHostLocked(v1::SlotHostEvent::Kind kind, const LostHostWatch::Action& action,
                            const std::string& message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The run as the store has it, with what only the core knows (slots waiting for a lost host,
  // the on_host_lost policy in force).
  void DecorateRunLocked(v1::Run& run) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores the coordinator's record of `agent_id` as it now stands (or deletes it).
  void SaveRebootLocked(const std::string& agent_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stores a reboot event on `run_id` and tells observers.
  void RecordRebootLocked(v1::RebootEvent::Kind kind, const std::string& run_id,
                          const std::string& agent_id, const std::string& hostname,
                          const std::string& from_boot, const std::string& to_boot,
                          const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FailRunLocked(const std::string& run_id, const std::string& error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees the peer of `lease_id` (if any) and offers it work.
  void ReleasePeerLocked(const std::string& lease_id, Later& later)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A session ended (its stream closed, or it was replaced): its peer reservation goes.
  void EndSessionLocked(const Session& session, Later& later) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A lease the store took back (expired, or the agent came back without it).
  void OnLeaseTakenBackLocked(const store::ExpiredLease& e, const std::string& why, Later& later)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The store's event sink: run events to observers, in id order.
  void PublishRunEvents(const std::vector<v1::RunEvent>& events);
  // The adaptive driver extended a run.
  void OnRunExtended(const std::string& run_id);

  store::Store& store_;
  const ControllerOptions options_;
  const Clock& clock_;
  ObserverHub hub_;
  AdaptiveDriver adaptive_;
  // What dispatch sees of the runs. The store's event sink marks each event's run stale
  // (without mu_); ActiveRunsLocked reads those again under mu_.
  ActiveRunSnapshot active_runs_;

  absl::Mutex mu_;
  Sessions sessions_ ABSL_GUARDED_BY(mu_);
  RebootCoordinator reboots_ ABSL_GUARDED_BY(mu_);
  LostHostWatch lost_hosts_ ABSL_GUARDED_BY(mu_);
  PeerPool peers_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, KnownHost> known_hosts_ ABSL_GUARDED_BY(mu_);
  uint64_t next_stream_ ABSL_GUARDED_BY(mu_) = 1;
  // When new work last appeared (a submit, an extension, a re-queue), for dispatch latency.
  int64_t work_since_ms_ ABSL_GUARDED_BY(mu_) = 0;
  // Something may have made a run unrunnable or work dispatchable: the next pass also checks
  // which runs no host can take (otherwise done every 5 s).
  bool dispatch_needed_ ABSL_GUARDED_BY(mu_) = true;
  int64_t last_full_pass_ms_ ABSL_GUARDED_BY(mu_) = 0;
  // Some queued build may be takeable by a free builder (false after a pass found none).
  bool builds_maybe_queued_ ABSL_GUARDED_BY(mu_) = true;
  int64_t last_pin_check_ms_ ABSL_GUARDED_BY(mu_) = 0;
  // Git questions sent to builders (QueryGit): the agent each went to, and the answers in.
  int64_t next_git_query_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int64_t, std::string> git_queries_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, v1::GitAnswer> git_answers_ ABSL_GUARDED_BY(mu_);
  // The store's writes failed: no lease is judged until ExtendLeases succeeds again.
  bool store_outage_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  absl::Mutex calls_mu_;
  int64_t calls_in_flight_ ABSL_GUARDED_BY(calls_mu_) = 0;

  std::thread ticker_;
};

template <typename T>
store::StoreCallback<T> Hub::Tracked(std::function<void(absl::StatusOr<T>)> callback) {
  BeginCall();
  return [this, callback = std::move(callback)](absl::StatusOr<T> result) {
    callback(std::move(result));
    EndCall();
  };
}

}  // namespace tlbfleet::core
