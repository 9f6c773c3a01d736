#include "controller/api/fleet_api.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::api {

absl::StatusOr<v1::SubmitRunResponse> FleetApi::SubmitRun(const Caller& caller,
                                                          const v1::SubmitRunRequest& request) {
  absl::Status allowed = Require(caller, v1::ROLE_OPERATOR, "SubmitRun");
  if (!allowed.ok()) {
    audit_.Record(caller, "SubmitRun", "", allowed);
    return allowed;
  }
  absl::StatusOr<v1::SubmitRunResponse> response =
      facade_.Submit(request.spec_yaml(), request.source_name());
  audit_.Record(caller, "SubmitRun", response.ok() ? response->run_id() : "", response.status(),
                response.ok() ? absl::StrCat(response->jobs(), " jobs") : "");
  if (response.ok()) {
    spdlog::info("run={} submitted by {} ({})", response->run_id(), caller.name, caller.source);
  }
  return response;
}

absl::StatusOr<v1::Run> FleetApi::CancelRun(const Caller& caller,
                                            const v1::CancelRunRequest& request) {
  absl::Status allowed = Require(caller, v1::ROLE_OPERATOR, "CancelRun");
  if (!allowed.ok()) {
    audit_.Record(caller, "CancelRun", request.run_id(), allowed);
    return allowed;
  }
  absl::StatusOr<v1::Run> run = facade_.CancelRun(request.run_id());
  audit_.Record(caller, "CancelRun", request.run_id(), run.status());
  if (run.ok()) {
    spdlog::info("run={} cancel requested by {} ({})", request.run_id(), caller.name,
                 caller.source);
  }
  return run;
}

absl::StatusOr<v1::ImportResultsResponse> FleetApi::ImportResults(
    const Caller& caller, const v1::ImportResultsRequest& request) {
  absl::Status allowed = Require(caller, v1::ROLE_OPERATOR, "ImportResults");
  if (!allowed.ok()) {
    audit_.Record(caller, "ImportResults", "", allowed);
    return allowed;
  }
  absl::StatusOr<v1::ImportResultsResponse> response = facade_.ImportResults(request);
  audit_.Record(caller, "ImportResults", response.ok() ? response->run_id() : "", response.status(),
                response.ok() ? absl::StrCat(request.format(), " ", request.source(),
                                             response->already_imported() ? " (already)" : "")
                              : "");
  if (response.ok() && !response->already_imported()) {
    spdlog::info("run={} imported from {} results {} by {} ({}), {} samples", response->run_id(),
                 request.format(), request.source(), caller.name, caller.source,
                 response->samples());
  }
  return response;
}

absl::StatusOr<v1::Run> FleetApi::GetRun(const Caller& caller, const v1::GetRunRequest& request) {
  TLB_RETURN_IF_ERROR(Require(caller, v1::ROLE_VIEWER, "GetRun"));
  return facade_.GetRun(request.run_id());
}

absl::StatusOr<v1::ListRunsResponse> FleetApi::ListRuns(const Caller& caller,
                                                        const v1::ListRunsRequest& request) {
  TLB_RETURN_IF_ERROR(Require(caller, v1::ROLE_VIEWER, "ListRuns"));
  return facade_.ListRuns(request);
}

absl::StatusOr<v1::ListHostsResponse> FleetApi::ListHosts(const Caller& caller,
                                                          const v1::ListHostsRequest&) {
  TLB_RETURN_IF_ERROR(Require(caller, v1::ROLE_VIEWER, "ListHosts"));
  return facade_.ListHosts();
}

absl::StatusOr<v1::GetResultsResponse> FleetApi::GetResults(const Caller& caller,
                                                            const v1::GetResultsRequest& request) {
  TLB_RETURN_IF_ERROR(Require(caller, v1::ROLE_VIEWER, "GetResults"));
  return facade_.GetResults(request.run_id());
}

absl::StatusOr<v1::CompareResponse> FleetApi::Compare(const Caller& caller,
                                                      const v1::CompareRequest& request) {
  TLB_RETURN_IF_ERROR(Require(caller, v1::ROLE_VIEWER, "Compare"));
  return facade_.Compare(request);
}

absl::StatusOr<v1::ListWorkloadsResponse> FleetApi::ListWorkloads(const Caller& caller,
                                                                  const v1::ListWorkloadsRequest&) {
  TLB_RETURN_IF_ERROR(Require(caller, v1::ROLE_VIEWER, "ListWorkloads"));
  return facade_.ListWorkloads();
}

absl::StatusOr<v1::GetBuildLogResponse> FleetApi::GetBuildLog(
    const Caller& caller, const v1::GetBuildLogRequest& request) {
  TLB_RETURN_IF_ERROR(Require(caller, v1::ROLE_VIEWER, "GetBuildLog"));
  if (request.task_id() <= 0) {
    return absl::InvalidArgumentError("task_id: required (a build of a run: Run.builds[].task_id)");
  }
  return facade_.GetBuildLog(request.task_id());
}

}  // namespace tlbfleet::api
