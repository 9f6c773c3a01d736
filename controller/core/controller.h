#pragma once
// The controller's core, transport-agnostic, behind two narrow interfaces:
//   run_service.h  RunService, the service users call (runs, hosts, results, comparisons,
//                  events, gauges): the API transports, the nightly unit and the metrics
//   agent_hub.h    AgentHub, the hub agents talk to (one stream per agent): the gRPC
//                  AgentService
// and this owner, which builds both over one store, starts and stops their threads and takes
// observers. Nothing outside controller/core sees the implementation (hub.h,
// run_service_impl.h, controller_impl.h); tests of the core include controller_impl.h for
// the hooks that drive it by hand.
//
// Thread-safe.

#include <cstdint>
#include <memory>

#include "absl/time/time.h"
#include "common/clock.h"
#include "controller/core/agent_hub.h"
#include "controller/core/observer.h"
#include "controller/core/run_service.h"
#include "controller/store/store.h"

namespace tlbfleet::artifacts {
class ArtifactStore;
}

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
  // Where built kernels are kept (docs/kernels.md): runs pin the artifacts of their builds
  // until they end. Not owned. Null: runs with `kernel:` arms are refused.
  artifacts::ArtifactStore* artifacts = nullptr;
  // A run's `kernel:` revisions are asked of a connected builder at submit, waiting this long
  // at most, so that one that does not resolve is refused naming it; a builder that cannot
  // answer in time leaves it to the build. Zero: not asked (the build resolves it).
  absl::Duration resolve_at_submit = absl::ZeroDuration();
};

class Controller {
 public:
  // `store` and `clock` are not owned and must outlive the controller.
  static std::unique_ptr<Controller> Create(store::Store& store, ControllerOptions options,
                                            const Clock& clock = Clock::Real());
  virtual ~Controller() = default;  // stops, as Stop() does

  virtual RunService& runs() = 0;
  virtual AgentHub& agents() = 0;

  // Before Start() only. Not owned; must outlive the controller (or its Stop()).
  virtual void AddObserver(FleetObserver* observer) = 0;
  // Start restores what the store keeps (reboot requests, peer reservations, known hosts),
  // gives leases a grace for their agents to reconnect, and starts the ticker (lease expiry,
  // reboot deadlines, dispatch retries), the adaptive driver's worker and the observers'
  // thread. Stop delivers the observer calls already queued and waits for the store's
  // callbacks in flight.
  virtual void Start() = 0;
  virtual void Stop() = 0;
};

}  // namespace tlbfleet::core
