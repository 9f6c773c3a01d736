#pragma once
// The seam between the controller's core (sessions, dispatch, reboots, adaptive runs) and
// what watches it: Prometheus metrics (controller/metrics), live run progress for SSE
// (controller/api), and history upkeep for nightly schedules (controller/nightly).
//
// The core calls observers after the change they report is durable in the store, on the
// core's own threads, and never while it holds a lock an observer could re-enter through the
// core's public API. Observers must be thread-safe and must not block the caller: count,
// queue or notify, and do slow work (SQLite writes, statistics) on a thread of their own.
//
// Every method has an empty default, so an observer overrides only what it needs and adding
// a hook does not break the others.

#include <cstdint>
#include <string>

#include "tlbfleet/v1/agent.pb.h"
#include "tlbfleet/v1/common.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::core {

class FleetObserver {
 public:
  virtual ~FleetObserver() = default;

  // --- runs ---
  // A run event was stored; `event.id()` is set. SSE watchers of `event.run_id()` get it.
  virtual void OnRunEvent(const v1::RunEvent& event) {}
  // A run reached a terminal state (succeeded, failed or cancelled). `run` is as stored.
  virtual void OnRunFinished(const v1::Run& run) {}

  // --- agents ---
  virtual void OnAgentConnected(const std::string& agent_id, const v1::HostInfo& host) {}
  virtual void OnAgentDisconnected(const std::string& agent_id) {}

  // --- jobs, samples, leases ---
  // A job was leased; `dispatch_seconds` is the time from the host becoming idle (or the
  // job becoming runnable, whichever is later) to the assignment being sent.
  virtual void OnJobDispatched(const std::string& benchmark, double dispatch_seconds) {}
  // A job ended with `status` after `elapsed_seconds` on the host.
  virtual void OnJobFinished(const std::string& benchmark, v1::JobStatus status,
                             double elapsed_seconds) {}
  // A sample batch was stored: `stored` new samples (replays count 0) in `ingest_seconds`.
  virtual void OnSamplesIngested(uint64_t stored, double ingest_seconds) {}
  virtual void OnLeaseExpired(const std::string& run_id, bool requeued) {}

  // --- reboots ---
  virtual void OnReboot(v1::RebootEvent::Kind kind) {}
};

}  // namespace tlbfleet::core
