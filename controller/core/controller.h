#pragma once
// The controller's core, behind one facade. Transports (controller/api: gRPC, HTTP) call
// only this class; new user operations are added here, not reached around it.
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
// Thread-safe. Threads: the transport's (Register, OnMessage, Unregister and the user API),
// the ticker (lease expiry, reboot deadlines, dispatch passes), the store's callback thread
// (what the store answered to the agent streams' writes), the adaptive driver's worker and
// the observer hub's. The agent streams' hot paths (samples, completions, heartbeats,
// leases) hand their writes to the store and return: their answers (acks, assignments) are
// sent from the store's callback thread once committed, so no gRPC thread waits for a disk,
// and the store's writer batches what many agents send into one transaction. Rare writes
// (a host registering, a reboot decision, a run failing) are made in place.
//
// Dispatch rule: a host takes at most one job at a time; a job goes only to an idle connected
// host that matches its run's host selector; runs are served oldest first.
//
// Locking: mu_ guards the core's state. The store's asynchronous calls are made only after
// mu_ is released (their callbacks take mu_); synchronous store writes may be made under mu_,
// because the store's writer never takes a lock of the core.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "controller/core/active_runs.h"
#include "controller/core/adaptive_driver.h"
#include "controller/core/agent_channel.h"
#include "controller/core/dispatcher.h"
#include "controller/core/lost_hosts.h"
#include "controller/core/observer.h"
#include "controller/core/observer_hub.h"
#include "controller/core/peers.h"
#include "controller/core/reboots.h"
#include "controller/core/sessions.h"
#include "controller/store/store.h"
#include "tlbfleet/v1/agent.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::core {

struct ControllerOptions {
  int64_t lease_ms = 60'000;      // a job whose agent is silent this long is re-queued
  int64_t heartbeat_ms = 15'000;  // told to agents in Welcome; must be well below lease_ms
  int max_attempts = 3;           // leases per job before its run fails
  int64_t tick_ms = 250;          // how often leases and reboot deadlines are checked
  // A host asked to reboot that is still connected on its old boot after this long has
  // failed to reboot; its run fails.
  int64_t reboot_timeout_ms = 180'000;
  // A host asked to reboot that has not come back on another boot after this long is lost;
  // its run fails (with the samples taken so far). Real servers can take minutes to POST.
  int64_t reboot_return_ms = 900'000;
  // After a start, and after the store's writes failed, no lease is judged for this long:
  // agents (backing off up to 30 s) reconnect first and say what they hold (Hello), so a
  // finished result is never thrown away and no job runs twice. 0: lease_ms + 30 s.
  int64_t reconnect_grace_ms = 0;
};

// What an agent is doing, for gauges.
enum class AgentState {
  kConnecting,    // connected, has not said it is idle yet (replaying its spool)
  kIdle,          // connected, idle
  kRunning,       // connected, runs a lease
  kRebooting,     // asked for a fresh boot and not back on a new one yet
  kDisconnected,  // known (it registered once), not connected
};
std::string_view AgentStateName(AgentState state);  // "connecting", "idle", ...

// Scrape-time gauges (Controller::Snapshot). Every state is present, zeros included.
struct FleetSnapshot {
  std::map<AgentState, uint64_t> agents;  // every known agent, by state
  // Connected agents whose HostInfo reports a capability missing: the flush ceiling is not
  // writable (kernel lockdown, not root, ...). Counted on top of their state.
  uint64_t agents_degraded = 0;
  std::map<v1::RunState, uint64_t> runs;  // every run, by state
  std::map<v1::JobState, uint64_t> jobs;  // every job, by state
  uint64_t queue_depth = 0;               // queued jobs of queued or running runs
  // Active runs with a slot whose host is silent (the lost-host watch).
  uint64_t runs_waiting_for_lost_host = 0;
};

class Controller {
 public:
  using Clock = std::function<int64_t()>;  // milliseconds since the epoch

  Controller(store::Store& store, ControllerOptions options, Clock clock = nullptr);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Before Start() only. Not owned; must outlive the controller (or its Stop()).
  void AddObserver(FleetObserver* observer);

  // Starts/stops the ticker, the adaptive driver's worker and the observer hub. Stop
  // delivers the observer calls already queued.
  void Start();
  void Stop();

  // --- agent streams ---
  // Called with the first message of a stream. `principal` is who the transport
  // authenticated ("" in development mode). On success the channel has been sent a Welcome;
  // on error the caller sends Reject with the message and closes the stream:
  //   FAILED_PRECONDITION  another protocol version
  //   INVALID_ARGUMENT     no agent id
  //   PERMISSION_DENIED    the agent id is bound to another principal (the first one to
  //                        register it, stored with the host)
  //   ALREADY_EXISTS       the agent id has a live stream; the agent backs off and retries.
  //                        (A stream from an earlier boot of the host is replaced instead.)
  absl::Status Register(AgentChannel* channel, const v1::Hello& hello,
                        const std::string& principal = "");
  void OnMessage(AgentChannel* channel, v1::AgentMessage message);
  // The stream closed. Frees the agent id for its next stream.
  void Unregister(AgentChannel* channel);

  // --- user API ---
  absl::StatusOr<v1::SubmitRunResponse> Submit(const std::string& spec_yaml,
                                               const std::string& source);
  absl::StatusOr<v1::Run> GetRun(const std::string& run_id);
  // Filtered and paged (store/run_query.h); INVALID_ARGUMENT naming the field.
  absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRunsRequest& request);
  absl::StatusOr<v1::Run> CancelRun(const std::string& run_id);
  absl::StatusOr<v1::ListHostsResponse> ListHosts();
  absl::StatusOr<v1::GetResultsResponse> GetResults(const std::string& run_id);
  absl::StatusOr<v1::CompareResponse> Compare(const std::string& run_id,
                                              const std::string& baseline);
  // With the request's verdict options (margin, level, pairing, unadjusted): an invalid one
  // is INVALID_ARGUMENT naming the field (report::CompareOptionsFromRequest).
  absl::StatusOr<v1::CompareResponse> Compare(const v1::CompareRequest& request);
  // Stored events of `run_id` with an id above `after_id`, oldest first, at most `limit`
  // (0: 1000): SSE replays these after Last-Event-ID, then follows FleetObserver::OnRunEvent.
  // NOT_FOUND for an unknown run, INVALID_ARGUMENT for a malformed id.
  absl::StatusOr<std::vector<v1::RunEvent>> RunEventsSince(const std::string& run_id,
                                                           uint64_t after_id, uint32_t limit);
  // Gauges, read at scrape time.
  absl::StatusOr<FleetSnapshot> Snapshot();

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

  int64_t Now() const { return clock_(); }
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

  // Asks an idle host for a fresh boot for `run_id`, or fails the run when the host already
  // ignored such a request on this boot.
  // `boot_entry`: the agent's boot entry the new boot must be ("" = any).
  void RequestRebootLocked(Session& session, const std::string& run_id, const std::string& why,
                           const std::string& boot_entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
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
  const Clock clock_;
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
  // The store's writes failed: no lease is judged until ExtendLeases succeeds again.
  bool store_outage_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  absl::Mutex calls_mu_;
  int64_t calls_in_flight_ ABSL_GUARDED_BY(calls_mu_) = 0;

  std::thread ticker_;
};

template <typename T>
store::StoreCallback<T> Controller::Tracked(std::function<void(absl::StatusOr<T>)> callback) {
  BeginCall();
  return [this, callback = std::move(callback)](absl::StatusOr<T> result) {
    callback(std::move(result));
    EndCall();
  };
}

}  // namespace tlbfleet::core
