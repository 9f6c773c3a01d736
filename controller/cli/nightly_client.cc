#include "controller/cli/nightly_client.h"

#include "fmt/format.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace tlbfleet::cli {

absl::StatusOr<std::unique_ptr<NightlyClient>> NightlyClient::Create(
    const FleetClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // a series with its points can be large
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      MakeChannel(options.address, options.tls, args);
  if (!channel.ok()) return channel.status();
  return std::make_unique<NightlyClient>(*std::move(channel), options);
}

NightlyClient::NightlyClient(std::shared_ptr<grpc::Channel> channel,
                             const FleetClientOptions& options)
    : channel_(std::move(channel)),
      stub_(tlbfleet::v1::NightlyService::NewStub(channel_)),
      options_(options) {}

grpc::Status NightlyClient::EnsureConnected() {
  if (connect_attempted_) return grpc::Status::OK;
  connect_attempted_ = true;
  return WaitUntilConnected(*channel_, options_.connect_timeout);
}

}  // namespace tlbfleet::cli
