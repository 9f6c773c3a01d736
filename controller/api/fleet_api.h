#pragma once
// The user API once, for both transports: FleetService over gRPC and /api/v1 over HTTP call
// these, so a role and an audit entry are decided in one place. Each operation checks the
// caller's role, calls the controller's facade, and records mutating requests (allowed or
// not) in the audit log.
//
// Thread-safe (the facade and the audit log are).

#include "absl/status/statusor.h"
#include "controller/api/auth.h"
#include "controller/core/run_service.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::api {

// The service users call, the only way into the core for them (docs/architecture.md, seams).
using Facade = core::RunService;

class FleetApi {
 public:
  FleetApi(Facade& facade, AuditLog& audit) : facade_(facade), audit_(audit) {}

  // Mutating: operator.
  absl::StatusOr<v1::SubmitRunResponse> SubmitRun(const Caller& caller,
                                                  const v1::SubmitRunRequest& request);
  absl::StatusOr<v1::Run> CancelRun(const Caller& caller, const v1::CancelRunRequest& request);
  absl::StatusOr<v1::ImportResultsResponse> ImportResults(const Caller& caller,
                                                          const v1::ImportResultsRequest& request);
  // Reading: viewer.
  absl::StatusOr<v1::Run> GetRun(const Caller& caller, const v1::GetRunRequest& request);
  absl::StatusOr<v1::ListRunsResponse> ListRuns(const Caller& caller,
                                                const v1::ListRunsRequest& request);
  absl::StatusOr<v1::ListHostsResponse> ListHosts(const Caller& caller,
                                                  const v1::ListHostsRequest& request);
  absl::StatusOr<v1::GetResultsResponse> GetResults(const Caller& caller,
                                                    const v1::GetResultsRequest& request);
  absl::StatusOr<v1::CompareResponse> Compare(const Caller& caller,
                                              const v1::CompareRequest& request);
  absl::StatusOr<v1::ListWorkloadsResponse> ListWorkloads(const Caller& caller,
                                                          const v1::ListWorkloadsRequest& request);
  absl::StatusOr<v1::GetBuildLogResponse> GetBuildLog(const Caller& caller,
                                                      const v1::GetBuildLogRequest& request);

  Facade& facade() { return facade_; }
  AuditLog& audit() { return audit_; }

 private:
  Facade& facade_;
  AuditLog& audit_;
};

}  // namespace tlbfleet::api
