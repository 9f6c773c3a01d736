#pragma once
// Client channels to the controller, plain or TLS (the agent's and the CLI's --tls-ca,
// --tls-cert, --tls-key).

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/channel.h"
#include "grpcpp/support/channel_arguments.h"

namespace tlbfleet {

struct ClientTls {
  std::string ca;    // PEM CA that signed the controller's certificate; empty: plain text
  std::string cert;  // PEM client certificate (mutual TLS), with `key`
  std::string key;
  // The name the controller's certificate must carry, when it differs from the address's
  // host (e.g. dialling an IP address).
  std::string server_name;

  bool enabled() const { return !ca.empty(); }
};

// INVALID_ARGUMENT naming the flag (--tls-ca, --tls-cert, --tls-key) when a file cannot be
// read or is not PEM, or a client certificate comes without TLS or without its key.
absl::Status CheckClientTls(const ClientTls& tls);

// A channel to `target` (reads the files again each time, so renewed certificates are used
// on the next connection).
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ClientTls& tls,
                                                           grpc::ChannelArguments args = {});

}  // namespace tlbfleet
