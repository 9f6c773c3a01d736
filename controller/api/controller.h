#pragma once
// The controller's brain: connected agent sessions, dispatch of jobs to idle hosts, lease
// expiry, and the user-facing operations. Transport-agnostic: the gRPC services
// (agent_service, fleet_service) translate to and from these calls, and tests can drive it
// with fake channels.
//
// Thread-safe. Dispatch rule: a host takes at most one job at a time; a job goes only to an
// idle connected host that matches its run's host selector; runs are served oldest first.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "controller/api/peers.h"
#include "controller/store/store.h"
#include "tlbfleet/v1/agent.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::api {

// The controller's handle on one agent stream. Send never blocks; messages are queued and
// dropped once the stream is closing.
class AgentChannel {
 public:
  virtual ~AgentChannel() = default;
  virtual void Send(const v1::ControllerMessage& message) = 0;
  virtual std::string Peer() const = 0;
};

struct ControllerOptions {
  int64_t lease_ms = 60'000;      // a job whose agent is silent this long is re-queued
  int64_t heartbeat_ms = 15'000;  // told to agents in Welcome; must be well below lease_ms
  int max_attempts = 3;           // leases per job before its run fails
  int64_t tick_ms = 250;          // how often leases are checked
  // A host asked to reboot that is still connected on its old boot after this long has
  // failed to reboot; its run fails. (Time to come back is not bounded: a slow reboot
  // only delays the run.)
  int64_t reboot_timeout_ms = 180'000;
};

class Controller {
 public:
  using Clock = std::function<int64_t()>;  // milliseconds since the epoch

  Controller(store::Store& store, ControllerOptions options, Clock clock = nullptr);
  ~Controller();

  // Starts/stops the background ticker that expires leases and retries dispatch.
  void Start();
  void Stop();

  // --- agent streams ---
  // Called with the first message of a stream. On success the channel has been sent a
  // Welcome (then any work); on error the caller sends Reject with the message and closes.
  absl::Status Register(AgentChannel* channel, const v1::Hello& hello);
  void OnMessage(AgentChannel* channel, const v1::AgentMessage& message);
  void Unregister(AgentChannel* channel);

  // --- user API ---
  absl::StatusOr<v1::SubmitRunResponse> Submit(const std::string& spec_yaml,
                                               const std::string& source);
  absl::StatusOr<v1::Run> GetRun(const std::string& run_id);
  absl::StatusOr<v1::ListRunsResponse> ListRuns(uint32_t limit);
  absl::StatusOr<v1::Run> CancelRun(const std::string& run_id);
  absl::StatusOr<v1::ListHostsResponse> ListHosts();
  absl::StatusOr<v1::GetResultsResponse> GetResults(const std::string& run_id);
  absl::StatusOr<v1::CompareResponse> Compare(const std::string& run_id,
                                              const std::string& baseline);

  // One pass of lease expiry and dispatch; the ticker calls it. Exposed for tests.
  void Tick();

 private:
  struct Session {
    AgentChannel* channel = nullptr;
    std::string agent_id;
    v1::HostInfo host;
    bool idle = false;     // true once the agent said so (heartbeat) or completed its job
    std::string lease_id;  // the lease it runs, when not idle
    // Asked to reboot (RebootRequest) and not back yet: gets no work until it reconnects.
    bool rebooting = false;
    std::string reboot_run_id;  // the run that needed the fresh boot
    int64_t reboot_deadline_ms = 0;
  };
  // A reboot the controller asked for, kept across the agent's reconnect: an agent that
  // comes back on the same boot did not reboot.
  struct RebootRequestRecord {
    std::string boot_id;  // the boot it was asked to leave
    std::string run_id;
    int times = 0;  // requests that found the host still on boot_id
  };

  int64_t Now() const { return clock_(); }
  Session* FindSessionLocked(AgentChannel* channel) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DispatchLocked(Session& session) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DispatchAllLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails runs that no connected host can ever take because their arms set the flush
  // ceiling and every host matching the rest of the selector cannot write it.
  void FailUnrunnableRunsLocked(const std::vector<store::ActiveRun>& runs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleSamplesLocked(Session& session, const v1::SampleBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleCompleteLocked(Session& session, const v1::JobComplete& complete)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleHeartbeatLocked(Session& session, const v1::Heartbeat& heartbeat)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Asks an idle host for a fresh boot for `run_id`; fails the run instead when the host
  // already ignored such a request on this boot.
  void RequestRebootLocked(Session& session, const std::string& run_id, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FailRunLocked(const std::string& run_id, const std::string& error)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reboot deadlines, then adaptive runs whose plan so far is done: extend or stop each.
  void CheckRebootsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DecideAdaptiveRuns();

  // --- netperf peers (peers.h) ---
  // A peer for a job of `run_id` on `client`, or nullopt (logged once per run when no other
  // connected host advertises a netserver at all).
  std::optional<PeerCandidate> ChoosePeerLocked(const Session& client, const std::string& run_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Points `a` at `peer` and reserves it, if `a` asks for a peer.
  void AssignPeerLocked(const std::optional<PeerCandidate>& peer, v1::JobAssignment& a)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees the peer of `lease_id` (if any) and offers it work.
  void ReleasePeerLocked(const std::string& lease_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  store::Store& store_;
  const ControllerOptions options_;
  const Clock clock_;

  absl::Mutex mu_;
  // Keyed by agent id: a reconnecting agent replaces its stale session.
  std::map<std::string, Session> sessions_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, RebootRequestRecord> reboot_requests_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // netperf peers: who serves which lease; runs already told they have no peer at all.
  PeerReservations peers_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> peerless_runs_logged_ ABSL_GUARDED_BY(mu_);

  std::thread ticker_;
};

enum class HostFit {
  kFits,
  kSelectorMismatch,   // labels, microarch, names or CPU/kernel facts exclude the host
  kCeilingUnwritable,  // selected, but an arm sets the ceiling and the host cannot write it
  kCannotReboot,       // selected, but the run has several boots and the host cannot reboot
};

// Whether `host` may run jobs of `spec`. When it may not, `why` (if given) says why.
HostFit FitHost(const v1::RunSpec& spec, const v1::HostInfo& host, std::string* why = nullptr);
inline bool HostMatches(const v1::RunSpec& spec, const v1::HostInfo& host) {
  return FitHost(spec, host) == HostFit::kFits;
}

}  // namespace tlbfleet::api
