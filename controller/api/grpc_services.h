#pragma once
// gRPC front ends of the Controller: AgentService (one bidirectional stream per agent, on
// the callback API so a few threads serve thousands of agents) and FleetService (unary
// user API). absl status codes map one to one onto gRPC codes.

#include "controller/api/controller.h"
#include "tlbfleet/v1/agent.grpc.pb.h"
#include "tlbfleet/v1/fleet.grpc.pb.h"

namespace tlbfleet::api {

grpc::Status ToGrpc(const absl::Status& status);

class AgentServiceImpl final : public v1::AgentService::CallbackService {
 public:
  explicit AgentServiceImpl(Controller& controller) : controller_(controller) {}
  grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>* Connect(
      grpc::CallbackServerContext* context) override;

 private:
  Controller& controller_;
};

// The user API. Store calls are short SQLite transactions, so handlers run inline on the
// callback threads.
class FleetServiceImpl final : public v1::FleetService::CallbackService {
 public:
  explicit FleetServiceImpl(Controller& controller) : controller_(controller) {}

  grpc::ServerUnaryReactor* SubmitRun(grpc::CallbackServerContext* context,
                                      const v1::SubmitRunRequest* request,
                                      v1::SubmitRunResponse* response) override;
  grpc::ServerUnaryReactor* GetRun(grpc::CallbackServerContext* context,
                                   const v1::GetRunRequest* request, v1::Run* response) override;
  grpc::ServerUnaryReactor* ListRuns(grpc::CallbackServerContext* context,
                                     const v1::ListRunsRequest* request,
                                     v1::ListRunsResponse* response) override;
  grpc::ServerUnaryReactor* CancelRun(grpc::CallbackServerContext* context,
                                      const v1::CancelRunRequest* request,
                                      v1::Run* response) override;
  grpc::ServerUnaryReactor* ListHosts(grpc::CallbackServerContext* context,
                                      const v1::ListHostsRequest* request,
                                      v1::ListHostsResponse* response) override;
  grpc::ServerUnaryReactor* GetResults(grpc::CallbackServerContext* context,
                                       const v1::GetResultsRequest* request,
                                       v1::GetResultsResponse* response) override;
  grpc::ServerUnaryReactor* Compare(grpc::CallbackServerContext* context,
                                    const v1::CompareRequest* request,
                                    v1::CompareResponse* response) override;

 private:
  Controller& controller_;
};

}  // namespace tlbfleet::api
