#pragma once
// A FleetService client with the CLI's connection policy: connect once with a deadline, then
// every RPC carries its own deadline and fails fast (no wait-for-ready) when the controller
// goes away. Not thread-safe: one command, one thread.

#include <chrono>
#include <memory>
#include <string>

#include "common/grpc_channel.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"
#include "tlbfleet/v1/fleet.grpc.pb.h"

namespace tlbfleet::cli {

struct FleetClientOptions {
  std::string address = "127.0.0.1:7070";  // any gRPC target: host:port, unix:/path, dns:///...
  std::chrono::milliseconds connect_timeout{5000};  // for the first connection
  std::chrono::milliseconds rpc_timeout{30000};     // per call
  // Sent as `authorization: Bearer <token>` metadata on every call; empty: none (a
  // controller in development mode).
  std::string token;
  ClientTls tls;  // plain text when tls.ca is empty
};

// The CLI's connection policy, shared by its clients: waits up to `timeout` for `channel` to
// be ready. OK as soon as it is, and also when an attempt has failed (the call that follows
// fails fast with the transport's reason, which says more than we could); UNAVAILABLE when the
// time ran out.
grpc::Status WaitUntilConnected(grpc::Channel& channel, std::chrono::milliseconds timeout);

class FleetClient {
 public:
  // A channel to options.address (TLS when options.tls.ca is set). Does not connect yet.
  // INVALID_ARGUMENT naming the flag when a TLS file cannot be read.
  static absl::StatusOr<std::unique_ptr<FleetClient>> Create(const FleetClientOptions& options);

  FleetClient(std::shared_ptr<grpc::Channel> channel, const FleetClientOptions& options);

  const std::string& address() const { return options_.address; }

  // Each returns the RPC's status. Before the first call, waits up to connect_timeout for the
  // channel to connect; UNAVAILABLE if it does not. A refused connection fails at once with
  // gRPC's own message ("... Connection refused").
  grpc::Status SubmitRun(const tlbfleet::v1::SubmitRunRequest& request,
                         tlbfleet::v1::SubmitRunResponse* response);
  grpc::Status GetRun(const std::string& run_id, tlbfleet::v1::Run* response);
  grpc::Status ListRuns(uint32_t limit, tlbfleet::v1::ListRunsResponse* response);
  grpc::Status CancelRun(const std::string& run_id, tlbfleet::v1::Run* response);
  grpc::Status ListHosts(tlbfleet::v1::ListHostsResponse* response);
  grpc::Status GetResults(const std::string& run_id, tlbfleet::v1::GetResultsResponse* response);
  grpc::Status GetBuildLog(int64_t task_id, tlbfleet::v1::GetBuildLogResponse* response);
  grpc::Status ImportResults(const tlbfleet::v1::ImportResultsRequest& request,
                             tlbfleet::v1::ImportResultsResponse* response);
  grpc::Status Compare(const tlbfleet::v1::CompareRequest& request,
                       tlbfleet::v1::CompareResponse* response);

 private:
  // OK when the channel is ready, or when it already failed (the call then reports the
  // transport error itself). UNAVAILABLE when still connecting at the deadline.
  grpc::Status EnsureConnected();
  void PrepareContext(grpc::ClientContext* context) const;

  template <typename Request, typename Response, typename Method>
  grpc::Status Call(Method method, const Request& request, Response* response);

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<tlbfleet::v1::FleetService::Stub> stub_;
  FleetClientOptions options_;
  bool connect_attempted_ = false;
};

}  // namespace tlbfleet::cli
