#pragma once
// The service users call: runs and what is known of them, hosts, results, comparisons, the
// workload catalogue, run events and the fleet's gauges. The transports (controller/api: gRPC's
// FleetService, the HTTP router, SSE), the nightly unit and the metrics call only this; none of
// them sees the agent streams (agent_hub.h) or the core's state behind both.
//
// Errors map one to one onto gRPC codes and HTTP statuses: INVALID_ARGUMENT names the field,
// NOT_FOUND the run. Thread-safe. Obtained from Controller::runs() (controller.h).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tlbfleet/v1/agent.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::core {

// What an agent is doing, for gauges.
enum class AgentState {
  kConnecting,    // connected, has not said it is idle yet (replaying its spool)
  kIdle,          // connected, idle
  kRunning,       // connected, runs a lease
  kRebooting,     // asked for a fresh boot and not back on a new one yet
  kDisconnected,  // known (it registered once), not connected
};
std::string_view AgentStateName(AgentState state);  // "connecting", "idle", ...

// Scrape-time gauges (RunService::Snapshot). Every state is present, zeros included.
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

class RunService {
 public:
  virtual ~RunService() = default;

  // Parses and validates `spec_yaml` (`source` names it in errors), stores the run and its
  // jobs, and offers the work to idle hosts.
  virtual absl::StatusOr<v1::SubmitRunResponse> Submit(const std::string& spec_yaml,
                                                       const std::string& source) = 0;
  // The run as stored, with what only the core knows (slots waiting for a lost host, the
  // on_host_lost policy in force).
  virtual absl::StatusOr<v1::Run> GetRun(const std::string& run_id) = 0;
  // Filtered and paged (store/run_query.h); INVALID_ARGUMENT naming the field.
  virtual absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRunsRequest& request) = 0;
  // Cancels the run's queued jobs and tells the agents running its leases to stop.
  virtual absl::StatusOr<v1::Run> CancelRun(const std::string& run_id) = 0;
  virtual absl::StatusOr<v1::ListHostsResponse> ListHosts() = 0;
  virtual absl::StatusOr<v1::GetResultsResponse> GetResults(const std::string& run_id) = 0;
  // The one report (report/compare.h), within a run or across runs (with_run_id), with the
  // request's verdict options: an invalid one is INVALID_ARGUMENT naming the field.
  virtual absl::StatusOr<v1::CompareResponse> Compare(const v1::CompareRequest& request) = 0;
  // Every workload the controller validates run specs against (the catalogue), with its
  // presets. It cannot change while the controller runs.
  virtual const v1::ListWorkloadsResponse& ListWorkloads() = 0;
  // Stored events of `run_id` with an id above `after_id`, oldest first, at most `limit`
  // (0: 1000): SSE replays these after Last-Event-ID, then follows FleetObserver::OnRunEvent.
  // NOT_FOUND for an unknown run, INVALID_ARGUMENT for a malformed id.
  virtual absl::StatusOr<std::vector<v1::RunEvent>> RunEventsSince(const std::string& run_id,
                                                                   uint64_t after_id,
                                                                   uint32_t limit) = 0;
  // Asks a connected builder agent with `query.source` a question about its git repository
  // (GitQuery: resolve a revision, list good..bad, whether a revert applies) and waits up to
  // `timeout` for the answer. INVALID_ARGUMENT with the builder's words when the question is
  // wrong (a revision that does not resolve...); UNAVAILABLE when no builder of that source is
  // connected or it failed; DEADLINE_EXCEEDED when it did not answer in time.
  virtual absl::StatusOr<v1::GitAnswer> QueryGit(v1::GitQuery query, absl::Duration timeout) = 0;
  // A kernel build of a run (Run.builds) with its whole log. NOT_FOUND for an unknown build.
  virtual absl::StatusOr<v1::GetBuildLogResponse> GetBuildLog(int64_t task_id) = 0;
  // Gauges, read at scrape time.
  virtual absl::StatusOr<FleetSnapshot> Snapshot() = 0;
  // Another tool's result directory (mmtests, LKP) stored as a finished run in one transaction
  // (report/import_results.h, Store::ImportRun); the same files again answer the run they are.
  // INVALID_ARGUMENT naming the file (and line) for what does not parse. Not every service
  // stores runs: UNIMPLEMENTED unless overridden.
  virtual absl::StatusOr<v1::ImportResultsResponse> ImportResults(
      const v1::ImportResultsRequest& request) {
    (void)request;
    return absl::UnimplementedError("ImportResults: this service does not store runs");
  }

  // Compare(request) of `run_id` against `baseline` ("" = the first arm), default options.
  absl::StatusOr<v1::CompareResponse> Compare(const std::string& run_id,
                                              const std::string& baseline) {
    v1::CompareRequest request;
    request.set_run_id(run_id);
    request.set_baseline(baseline);
    return Compare(request);
  }
};

}  // namespace tlbfleet::core
