#pragma once
// RunService over the store, asking the hub (FleetState) only for what the hub alone knows.
// Internal to controller/core. Thread-safe: it keeps no state of its own.

#include <string>
#include <vector>

#include "common/clock.h"
#include "controller/core/hub.h"
#include "controller/core/run_service.h"
#include "controller/store/store.h"

namespace tlbfleet::core {

class RunServiceImpl final : public RunService {
 public:
  // None of the arguments is owned; all must outlive the service.
  // `resolve_at_submit`: ControllerOptions::resolve_at_submit.
  RunServiceImpl(store::Store& store, FleetState& fleet, const Clock& clock,
                 absl::Duration resolve_at_submit = absl::ZeroDuration())
      : store_(store), fleet_(fleet), clock_(clock), resolve_at_submit_(resolve_at_submit) {}

  absl::StatusOr<v1::SubmitRunResponse> Submit(const std::string& spec_yaml,
                                               const std::string& source) override;
  absl::StatusOr<v1::Run> GetRun(const std::string& run_id) override;
  absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRunsRequest& request) override;
  absl::StatusOr<v1::Run> CancelRun(const std::string& run_id) override;
  absl::StatusOr<v1::ListHostsResponse> ListHosts() override;
  absl::StatusOr<v1::GetResultsResponse> GetResults(const std::string& run_id) override;
  using RunService::Compare;
  absl::StatusOr<v1::CompareResponse> Compare(const v1::CompareRequest& request) override;
  const v1::ListWorkloadsResponse& ListWorkloads() override;
  absl::StatusOr<std::vector<v1::RunEvent>> RunEventsSince(const std::string& run_id,
                                                           uint64_t after_id,
                                                           uint32_t limit) override;
  absl::StatusOr<FleetSnapshot> Snapshot() override;
  absl::StatusOr<v1::GetBuildLogResponse> GetBuildLog(int64_t task_id) override;
  absl::StatusOr<v1::ImportResultsResponse> ImportResults(
      const v1::ImportResultsRequest& request) override;
  absl::StatusOr<v1::GitAnswer> QueryGit(v1::GitQuery query, absl::Duration timeout) override {
    return fleet_.QueryGit(std::move(query), timeout);
  }

 private:
  int64_t Now() const { return clock_.NowMillis(); }
  absl::Status PrepareKernelArms(v1::RunSpec& spec);

  store::Store& store_;
  FleetState& fleet_;
  const Clock& clock_;
  const absl::Duration resolve_at_submit_;
};

}  // namespace tlbfleet::core
