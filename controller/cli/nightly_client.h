#pragma once
// A NightlyService client with the CLI's connection policy (fleet_client.h): connect once
// with a deadline, then every call has its own deadline and fails fast. Not thread-safe.

#include <memory>

#include "controller/cli/fleet_client.h"
#include "tlbfleet/v1/nightly.grpc.pb.h"

namespace tlbfleet::cli {

class NightlyClient {
 public:
  static absl::StatusOr<std::unique_ptr<NightlyClient>> Create(const FleetClientOptions& options);
  NightlyClient(std::shared_ptr<grpc::Channel> channel, const FleetClientOptions& options);

  const std::string& address() const { return options_.address; }

  // Calls `method` of the stub (e.g. &v1::NightlyService::Stub::ListSchedules).
  template <typename Request, typename Response, typename Method>
  grpc::Status Call(Method method, const Request& request, Response* response) {
    grpc::Status connected = EnsureConnected();
    if (!connected.ok()) return connected;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options_.rpc_timeout);
    context.set_wait_for_ready(false);
    if (!options_.token.empty()) context.AddMetadata("authorization", "Bearer " + options_.token);
    return ((*stub_).*method)(&context, request, response);
  }

 private:
  grpc::Status EnsureConnected();

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<tlbfleet::v1::NightlyService::Stub> stub_;
  FleetClientOptions options_;
  bool connect_attempted_ = false;
};

}  // namespace tlbfleet::cli
