#include "controller/api/nightly_api.h"

#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::api {
namespace {

// The id an answer names, for the audit log.
std::string IdOf(const v1::Schedule& s) { return s.id(); }
std::string IdOf(const v1::Regression& r) { return r.id(); }
std::string IdOf(const v1::BisectState& b) { return b.id(); }

}  // namespace

template <typename T, typename Call>
absl::StatusOr<T> NightlyApi::Mutate(const Caller& caller, const char* action,
                                     const std::string& target, Call&& call) {
  absl::Status allowed = Require(caller, v1::ROLE_OPERATOR, action);
  if (!allowed.ok()) {
    audit_.Record(caller, action, target, allowed);
    return allowed;
  }
  absl::StatusOr<T> result = call();
  std::string id = result.ok() ? IdOf(*result) : target;
  audit_.Record(caller, action, id, result.status());
  if (result.ok()) spdlog::info("{} {} by {} ({})", action, id, caller.name, caller.source);
  return result;
}

absl::StatusOr<v1::Schedule> NightlyApi::AddSchedule(const Caller& caller,
                                                     const v1::AddScheduleRequest& request) {
  return Mutate<v1::Schedule>(caller, "AddSchedule", "", [&] {
    return nightly_.AddSchedule(request.spec_yaml(), request.source_name());
  });
}

absl::StatusOr<v1::Schedule> NightlyApi::PauseSchedule(const Caller& caller,
                                                       const v1::ScheduleRequest& request) {
  return Mutate<v1::Schedule>(caller, "PauseSchedule", request.id(),
                              [&] { return nightly_.PauseSchedule(request.id()); });
}

absl::StatusOr<v1::Schedule> NightlyApi::ResumeSchedule(const Caller& caller,
                                                        const v1::ScheduleRequest& request) {
  return Mutate<v1::Schedule>(caller, "ResumeSchedule", request.id(),
                              [&] { return nightly_.ResumeSchedule(request.id()); });
}

absl::StatusOr<v1::Schedule> NightlyApi::RemoveSchedule(const Caller& caller,
                                                        const v1::ScheduleRequest& request) {
  return Mutate<v1::Schedule>(caller, "RemoveSchedule", request.id(),
                              [&] { return nightly_.RemoveSchedule(request.id()); });
}

absl::StatusOr<v1::Regression> NightlyApi::UpdateRegression(
    const Caller& caller, const v1::UpdateRegressionRequest& request) {
  return Mutate<v1::Regression>(caller, "UpdateRegression", request.id(),
                                [&] { return nightly_.UpdateRegression(request); });
}

absl::StatusOr<v1::BisectState> NightlyApi::StartBisect(const Caller& caller,
                                                        const v1::StartBisectRequest& request) {
  return Mutate<v1::BisectState>(caller, "StartBisect", "", [&] {
    return nightly_.StartBisect(request.spec_yaml(), request.source_name());
  });
}

absl::StatusOr<v1::BisectState> NightlyApi::CancelBisect(const Caller& caller,
                                                         const v1::GetBisectRequest& request) {
  return Mutate<v1::BisectState>(caller, "CancelBisect", request.id(),
                                 [&] { return nightly_.CancelBisect(request.id()); });
}

absl::StatusOr<v1::ListSchedulesResponse> NightlyApi::ListSchedules(
    const Caller& caller, const v1::ListSchedulesRequest&) {
  TLB_RETURN_IF_ERROR(Require(caller, v1::ROLE_VIEWER, "ListSchedules"));
  return nightly_.ListSchedules();
}

absl::StatusOr<v1::ListSeriesResponse> NightlyApi::ListSeries(
    const Caller& caller, const v1::ListSeriesRequest& request) {
  TLB_RETURN_IF_ERROR(Require(caller, v1::ROLE_VIEWER, "ListSeries"));
  return nightly_.ListSeries(request);
}

absl::StatusOr<v1::ListRegressionsResponse> NightlyApi::ListRegressions(
    const Caller& caller, const v1::ListRegressionsRequest& request) {
  TLB_RETURN_IF_ERROR(Require(caller, v1::ROLE_VIEWER, "ListRegressions"));
  return nightly_.ListRegressions(request);
}

absl::StatusOr<v1::GetBisectResponse> NightlyApi::GetBisect(const Caller& caller,
                                                            const v1::GetBisectRequest& request) {
  TLB_RETURN_IF_ERROR(Require(caller, v1::ROLE_VIEWER, "GetBisect"));
  return nightly_.GetBisect(request.id());
}

absl::StatusOr<v1::ListBisectsResponse> NightlyApi::ListBisects(
    const Caller& caller, const v1::ListBisectsRequest& request) {
  TLB_RETURN_IF_ERROR(Require(caller, v1::ROLE_VIEWER, "ListBisects"));
  return nightly_.ListBisects(request.limit());
}

}  // namespace tlbfleet::api
