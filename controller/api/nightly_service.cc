#include "controller/api/nightly_service.h"

#include "absl/status/status.h"

namespace tlbfleet::api {

#define TLB_NIGHTLY_METHOD(Name, Request, Response)                                               \
  grpc::ServerUnaryReactor* NightlyServiceImpl::Name(                                             \
      grpc::CallbackServerContext* context, const v1::Request* request, v1::Response* response) { \
    return Reply(context, api_.Name(GrpcCaller(context, auth_), *request), response, on_call_,    \
                 "NightlyService/" #Name);                                                        \
  }

TLB_NIGHTLY_METHOD(AddSchedule, AddScheduleRequest, Schedule)
TLB_NIGHTLY_METHOD(ListSchedules, ListSchedulesRequest, ListSchedulesResponse)
TLB_NIGHTLY_METHOD(PauseSchedule, ScheduleRequest, Schedule)
TLB_NIGHTLY_METHOD(ResumeSchedule, ScheduleRequest, Schedule)
TLB_NIGHTLY_METHOD(RemoveSchedule, ScheduleRequest, Schedule)
TLB_NIGHTLY_METHOD(ListSeries, ListSeriesRequest, ListSeriesResponse)
TLB_NIGHTLY_METHOD(ListRegressions, ListRegressionsRequest, ListRegressionsResponse)
TLB_NIGHTLY_METHOD(UpdateRegression, UpdateRegressionRequest, Regression)
TLB_NIGHTLY_METHOD(StartBisect, StartBisectRequest, BisectState)
TLB_NIGHTLY_METHOD(GetBisect, GetBisectRequest, GetBisectResponse)
TLB_NIGHTLY_METHOD(ListBisects, ListBisectsRequest, ListBisectsResponse)
TLB_NIGHTLY_METHOD(CancelBisect, GetBisectRequest, BisectState)

#undef TLB_NIGHTLY_METHOD

}  // namespace tlbfleet::api
