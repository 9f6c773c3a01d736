#pragma once
// The nightly API once, for both transports (as fleet_api.h is for runs): NightlyService over
// gRPC and /api/v1/schedules, /api/v1/regressions, /api/v1/series and /api/v1/bisects over
// HTTP call these. Each operation checks the caller's role, calls the nightly unit, and
// records mutating requests (allowed or not) in the audit log.
//
// Roles: reading needs viewer; schedules, regression status and bisections need operator
// (they start runs, which write the ceiling and reboot hosts, like SubmitRun).
//
// Thread-safe (the nightly unit and the audit log are).

#include "absl/status/statusor.h"
#include "controller/api/auth.h"
#include "controller/nightly/nightly.h"
#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::api {

class NightlyApi {
 public:
  NightlyApi(nightly::Nightly& nightly, AuditLog& audit) : nightly_(nightly), audit_(audit) {}

  // Mutating: operator.
  absl::StatusOr<v1::Schedule> AddSchedule(const Caller& caller,
                                           const v1::AddScheduleRequest& request);
  absl::StatusOr<v1::Schedule> PauseSchedule(const Caller& caller,
                                             const v1::ScheduleRequest& request);
  absl::StatusOr<v1::Schedule> ResumeSchedule(const Caller& caller,
                                              const v1::ScheduleRequest& request);
  absl::StatusOr<v1::Schedule> RemoveSchedule(const Caller& caller,
                                              const v1::ScheduleRequest& request);
  absl::StatusOr<v1::Regression> UpdateRegression(const Caller& caller,
                                                  const v1::UpdateRegressionRequest& request);
  absl::StatusOr<v1::BisectState> StartBisect(const Caller& caller,
                                              const v1::StartBisectRequest& request);
  absl::StatusOr<v1::BisectState> CancelBisect(const Caller& caller,
                                               const v1::GetBisectRequest& request);

  // Reading: viewer.
  absl::StatusOr<v1::ListSchedulesResponse> ListSchedules(const Caller& caller,
                                                          const v1::ListSchedulesRequest& request);
  absl::StatusOr<v1::ListSeriesResponse> ListSeries(const Caller& caller,
                                                    const v1::ListSeriesRequest& request);
  absl::StatusOr<v1::ListRegressionsResponse> ListRegressions(
      const Caller& caller, const v1::ListRegressionsRequest& request);
  absl::StatusOr<v1::GetBisectResponse> GetBisect(const Caller& caller,
                                                  const v1::GetBisectRequest& request);
  absl::StatusOr<v1::ListBisectsResponse> ListBisects(const Caller& caller,
                                                      const v1::ListBisectsRequest& request);

  nightly::Nightly& nightly() { return nightly_; }

 private:
  // Require operator, run `call`, audit the outcome under `action` and the target `call`
  // returns (or `target` when it fails).
  template <typename T, typename Call>
  absl::StatusOr<T> Mutate(const Caller& caller, const char* action, const std::string& target,
                           Call&& call);

  nightly::Nightly& nightly_;
  AuditLog& audit_;
};

}  // namespace tlbfleet::api
