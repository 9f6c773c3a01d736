#pragma once
// The controller as built by Controller::Create: the hub and the run service over one store.
// Internal to controller/core; its tests include it for the hooks that drive the core by hand
// (a tick, a recovery, an adaptive pass, the observers' deliveries) without its threads.

#include <memory>

#include "controller/core/controller.h"
#include "controller/core/hub.h"
#include "controller/core/run_service_impl.h"

namespace tlbfleet::core {

class ControllerImpl final : public Controller {
 public:
  // `store` and `clock` are not owned and must outlive the controller.
  ControllerImpl(store::Store& store, ControllerOptions options, const Clock& clock = Clock::Real())
      : hub_(store, options, clock), runs_(store, hub_, clock, options.resolve_at_submit) {}
  ~ControllerImpl() override { Stop(); }

  RunService& runs() override { return runs_; }
  AgentHub& agents() override { return hub_; }
  void AddObserver(FleetObserver* observer) override { hub_.AddObserver(observer); }
  void Start() override { hub_.Start(); }
  void Stop() override { hub_.Stop(); }

  // --- for tests (hub.h) ---
  void Tick() { hub_.Tick(); }
  void RecoverForTest() { hub_.RecoverForTest(); }
  void DecideAdaptiveRunsForTest() { hub_.DecideAdaptiveRunsForTest(); }
  void DeliverObserverCallsForTest() { hub_.DeliverObserverCallsForTest(); }

 private:
  Hub hub_;
  RunServiceImpl runs_;
};

}  // namespace tlbfleet::core
