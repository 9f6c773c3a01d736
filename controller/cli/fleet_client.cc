#include "controller/cli/fleet_client.h"

#include "fmt/format.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace tlbfleet::cli {

namespace v1 = tlbfleet::v1;

absl::StatusOr<std::unique_ptr<FleetClient>> FleetClient::Create(
    const FleetClientOptions& options) {
  grpc::ChannelArguments args;
  // Results of a long run easily exceed gRPC's default 4 MiB receive limit.
  args.SetMaxReceiveMessageSize(-1);
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(options.address, options.tls, args);
  if (!channel.ok()) return channel.status();
  return std::make_unique<FleetClient>(*std::move(channel), options);
}

FleetClient::FleetClient(std::shared_ptr<grpc::Channel> channel, const FleetClientOptions& options)
    : channel_(std::move(channel)), stub_(v1::FleetService::NewStub(channel_)), options_(options) {}

grpc::Status WaitUntilConnected(grpc::Channel& channel, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::system_clock::now() + timeout;
  grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) break;
    if (!channel.WaitForStateChange(state, deadline)) {
      double seconds = std::chrono::duration<double>(timeout).count();
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          fmt::format("no connection within {:g} s", seconds));
    }
    state = channel.GetState(/*try_to_connect=*/true);
  }
  return grpc::Status::OK;
}

grpc::Status FleetClient::EnsureConnected() {
  if (connect_attempted_) return grpc::Status::OK;
  connect_attempted_ = true;
  return WaitUntilConnected(*channel_, options_.connect_timeout);
}

void FleetClient::PrepareContext(grpc::ClientContext* context) const {
  context->set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
  context->set_wait_for_ready(false);
  if (!options_.token.empty()) context->AddMetadata("authorization", "Bearer " + options_.token);
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

grpc::Status FleetClient::GetBuildLog(int64_t task_id, v1::GetBuildLogResponse* response) {
  v1::GetBuildLogRequest request;
  request.set_task_id(task_id);
  return Call(&v1::FleetService::Stub::GetBuildLog, request, response);
}

grpc::Status FleetClient::ImportResults(const v1::ImportResultsRequest& request,
                                        v1::ImportResultsResponse* response) {
  return Call(&v1::FleetService::Stub::ImportResults, request, response);
}

grpc::Status FleetClient::Compare(const v1::CompareRequest& request,
                                  v1::CompareResponse* response) {
  return Call(&v1::FleetService::Stub::Compare, request, response);
}

}  // namespace tlbfleet::cli
