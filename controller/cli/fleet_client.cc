#include "controller/cli/fleet_client.h"

#include "fmt/format.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace tlbfleet::cli {

namespace v1 = tlbfleet::v1;

std::unique_ptr<FleetClient> FleetClient::Create(const FleetClientOptions& options) {
  grpc::ChannelArguments args;
  // Results of a long run easily exceed gRPC's default 4 MiB receive limit.
  args.SetMaxReceiveMessageSize(-1);
  return std::make_unique<FleetClient>(
      grpc::CreateCustomChannel(options.address, grpc::InsecureChannelCredentials(), args),
      options);
}

FleetClient::FleetClient(std::shared_ptr<grpc::Channel> channel, const FleetClientOptions& options)
    : channel_(std::move(channel)), stub_(v1::FleetService::NewStub(channel_)), options_(options) {}

grpc::Status FleetClient::EnsureConnected() {
  if (connect_attempted_) return grpc::Status::OK;
  connect_attempted_ = true;
  auto deadline = std::chrono::system_clock::now() + options_.connect_timeout;
  grpc_connectivity_state state = channel_->GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    // A failed attempt is reported by the call itself, which fails fast with the transport's
    // reason (refused, no such host, ...); that message is better than ours.
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) break;
    if (!channel_->WaitForStateChange(state, deadline)) {
      double seconds = std::chrono::duration<double>(options_.connect_timeout).count();
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          fmt::format("no connection within {:g} s", seconds));
    }
    state = channel_->GetState(/*try_to_connect=*/true);
  }
  return grpc::Status::OK;
}

void FleetClient::PrepareContext(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
  context->set_wait_for_ready(false);
}

template <typename Request, typename Response, typename Method>
grpc::Status FleetClient::Call(Method method, const Request& request, Response* response) {
  grpc::Status connected = EnsureConnected();
  if (!connected.ok()) return connected;
  grpc::ClientContext context;
  PrepareContext(&context);
  return ((*stub_).*method)(&context, request, response);
}

grpc::Status FleetClient::SubmitRun(const v1::SubmitRunRequest& request,
                                    v1::SubmitRunResponse* response) {
  return Call(&v1::FleetService::Stub::SubmitRun, request, response);
}

grpc::Status FleetClient::GetRun(const std::string& run_id, v1::Run* response) {
  v1::GetRunRequest request;
  request.set_run_id(run_id);
  return Call(&v1::FleetService::Stub::GetRun, request, response);
}

grpc::Status FleetClient::ListRuns(uint32_t limit, v1::ListRunsResponse* response) {
  v1::ListRunsRequest request;
  request.set_limit(limit);
  return Call(&v1::FleetService::Stub::ListRuns, request, response);
}

grpc::Status FleetClient::CancelRun(const std::string& run_id, v1::Run* response) {
  v1::CancelRunRequest request;
  request.set_run_id(run_id);
  return Call(&v1::FleetService::Stub::CancelRun, request, response);
}

grpc::Status FleetClient::ListHosts(v1::ListHostsResponse* response) {
  return Call(&v1::FleetService::Stub::ListHosts, v1::ListHostsRequest(), response);
}

grpc::Status FleetClient::GetResults(const std::string& run_id, v1::GetResultsResponse* response) {
  v1::GetResultsRequest request;
  request.set_run_id(run_id);
  return Call(&v1::FleetService::Stub::GetResults, request, response);
}

grpc::Status FleetClient::Compare(const std::string& run_id, const std::string& baseline,
                                  v1::CompareResponse* response) {
  v1::CompareRequest request;
  request.set_run_id(run_id);
  request.set_baseline(baseline);
  return Call(&v1::FleetService::Stub::Compare, request, response);
}

}  // namespace tlbfleet::cli
