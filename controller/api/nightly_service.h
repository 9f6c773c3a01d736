#pragma once
// gRPC front end of the nightly unit (controller/nightly/nightly.h): schedules, series,
// regressions and bisections, authenticated and audited by NightlyApi (nightly_api.h). Unary
// handlers run inline on the callback threads; the nightly unit's operations are short (a
// bisection's start submits one run).

#include "controller/api/grpc_services.h"
#include "controller/api/nightly_api.h"
#include "tlbfleet/v1/nightly.grpc.pb.h"

namespace tlbfleet::api {

class NightlyServiceImpl final : public v1::NightlyService::CallbackService {
 public:
  NightlyServiceImpl(NightlyApi& api, Authenticator& auth, GrpcCallHook on_call = nullptr)
      : api_(api), auth_(auth), on_call_(std::move(on_call)) {}

  grpc::ServerUnaryReactor* AddSchedule(grpc::CallbackServerContext* context,
                                        const v1::AddScheduleRequest* request,
                                        v1::Schedule* response) override;
  grpc::ServerUnaryReactor* ListSchedules(grpc::CallbackServerContext* context,
                                          const v1::ListSchedulesRequest* request,
                                          v1::ListSchedulesResponse* response) override;
  grpc::ServerUnaryReactor* PauseSchedule(grpc::CallbackServerContext* context,
                                          const v1::ScheduleRequest* request,
                                          v1::Schedule* response) override;
  grpc::ServerUnaryReactor* ResumeSchedule(grpc::CallbackServerContext* context,
                                           const v1::ScheduleRequest* request,
                                           v1::Schedule* response) override;
  grpc::ServerUnaryReactor* RemoveSchedule(grpc::CallbackServerContext* context,
                                           const v1::ScheduleRequest* request,
                                           v1::Schedule* response) override;
  grpc::ServerUnaryReactor* ListSeries(grpc::CallbackServerContext* context,
                                       const v1::ListSeriesRequest* request,
                                       v1::ListSeriesResponse* response) override;
  grpc::ServerUnaryReactor* ListRegressions(grpc::CallbackServerContext* context,
                                            const v1::ListRegressionsRequest* request,
                                            v1::ListRegressionsResponse* response) override;
  grpc::ServerUnaryReactor* UpdateRegression(grpc::CallbackServerContext* context,
                                             const v1::UpdateRegressionRequest* request,
                                             v1::Regression* response) override;
  grpc::ServerUnaryReactor* StartBisect(grpc::CallbackServerContext* context,
                                        const v1::StartBisectRequest* request,
                                        v1::BisectState* response) override;
  grpc::ServerUnaryReactor* GetBisect(grpc::CallbackServerContext* context,
                                      const v1::GetBisectRequest* request,
                                      v1::GetBisectResponse* response) override;
  grpc::ServerUnaryReactor* ListBisects(grpc::CallbackServerContext* context,
                                        const v1::ListBisectsRequest* request,
                                        v1::ListBisectsResponse* response) override;
  grpc::ServerUnaryReactor* CancelBisect(grpc::CallbackServerContext* context,
                                         const v1::GetBisectRequest* request,
                                         v1::BisectState* response) override;

 private:
  NightlyApi& api_;
  Authenticator& auth_;
  const GrpcCallHook on_call_;
};

}  // namespace tlbfleet::api
