#pragma once
// gRPC front ends of the core: AgentService (the AgentHub: one bidirectional stream per
// agent, on the callback API so a few threads serve thousands of agents) and FleetService (the
// unary user API, through FleetApi). absl status codes map one to one onto gRPC codes.
//
// Credentials travel as metadata `authorization: Bearer <token>` (auth.h): FleetService
// calls go through FleetApi, which checks the role and audits; an agent stream needs a
// token of role agent (or development mode) before its Hello is even read.

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "controller/api/auth.h"
#include "controller/api/fleet_api.h"
#include "controller/core/agent_hub.h"
#include "tlbfleet/v1/agent.grpc.pb.h"
#include "tlbfleet/v1/fleet.grpc.pb.h"

namespace tlbfleet::api {

using core::AgentChannel;
using core::AgentHub;

grpc::Status ToGrpc(const absl::Status& status);

// Told of every finished call: "FleetService/ListRuns" (or "AgentService/Connect" when a
// stream ends) and the code's name ("OK", "UNAUTHENTICATED", ...). Quick and thread-safe.
using GrpcCallHook = std::function<void(const std::string& method, const std::string& code)>;

// Finishes a unary call with `result`: its value moved into `*response`, its status as the
// call's, and `on_call` told of `method` and the code. Shared by every unary service.
template <typename T>
grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* context, absl::StatusOr<T> result,
                                T* response, const GrpcCallHook& on_call, const char* method) {
  if (on_call) on_call(method, absl::StatusCodeToString(result.status().code()));
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (result.ok()) *response = *std::move(result);
  reactor->Finish(ToGrpc(result.status()));
  return reactor;
}

class AgentServiceImpl final : public v1::AgentService::CallbackService {
 public:
  // `require_client_certificate`: mutual TLS (--tls-client-ca); a stream whose peer did not
  // present a certificate the CA signed is refused.
  AgentServiceImpl(AgentHub& hub, Authenticator& auth, bool require_client_certificate = false,
                   GrpcCallHook on_call = nullptr)
      : hub_(hub),
        auth_(auth),
        require_client_certificate_(require_client_certificate),
        on_call_(std::move(on_call)) {}
  grpc::ServerBidiReactor<v1::AgentMessage, v1::ControllerMessage>* Connect(
      grpc::CallbackServerContext* context) override;

 private:
  AgentHub& hub_;
  Authenticator& auth_;
  const bool require_client_certificate_;
  const GrpcCallHook on_call_;
};

// The user API. Store calls are short SQLite transactions, so handlers run inline on the
// callback threads.
class FleetServiceImpl final : public v1::FleetService::CallbackService {
 public:
  FleetServiceImpl(FleetApi& api, Authenticator& auth, GrpcCallHook on_call = nullptr)
      : api_(api), auth_(auth), on_call_(std::move(on_call)) {}

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
  grpc::ServerUnaryReactor* ListWorkloads(grpc::CallbackServerContext* context,
                                          const v1::ListWorkloadsRequest* request,
                                          v1::ListWorkloadsResponse* response) override;
  grpc::ServerUnaryReactor* GetBuildLog(grpc::CallbackServerContext* context,
                                        const v1::GetBuildLogRequest* request,
                                        v1::GetBuildLogResponse* response) override;
  grpc::ServerUnaryReactor* ImportResults(grpc::CallbackServerContext* context,
                                          const v1::ImportResultsRequest* request,
                                          v1::ImportResultsResponse* response) override;

 private:
  FleetApi& api_;
  Authenticator& auth_;
  const GrpcCallHook on_call_;
};

// Who sent a gRPC call (metadata `authorization`), for auth.h's checks.
Caller GrpcCaller(grpc::CallbackServerContext* context, Authenticator& auth);

}  // namespace tlbfleet::api
