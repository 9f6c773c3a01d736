#include "agent/runner/netserver.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/address.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::agent {
namespace {

namespace netperf = workloads::netperf;

constexpr char kListenFlag[] = "--netserver-listen";
constexpr char kAdvertiseFlag[] = "--netserver-advertise";

absl::StatusOr<Endpoint> ParseFlag(const char* flag, const std::string& value) {
  absl::StatusOr<Endpoint> endpoint = ParseEndpoint(value);
  if (!endpoint.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", endpoint.status().message()));
  }
  return endpoint;
}

// Both flags, checked before anything binds.
absl::Status CheckFlags(const std::string& listen, const std::string& advertise) {
  absl::StatusOr<std::string> checked = AdvertisedNetserver(listen, advertise, 1);
  return checked.ok() ? absl::OkStatus() : checked.status();
}

void LogServed(const netperf::ServedTest& t) {
  if (t.completed) {
    spdlog::info("netserver: served {} message_size={} for {} ({} bytes received, {:.2f} s)",
                 t.test, t.message_size, t.client, t.bytes, t.seconds);
  } else {
    spdlog::warn("netserver: test '{}' message_size={} for {} did not complete ({:.2f} s)", t.test,
                 t.message_size, t.client, t.seconds);
  }
}

}  // namespace

absl::StatusOr<std::string> AdvertisedNetserver(const std::string& listen,
                                                const std::string& advertise, uint16_t bound_port) {
  absl::StatusOr<Endpoint> listen_at = ParseFlag(kListenFlag, listen);
  if (!listen_at.ok()) return listen_at.status();
  Endpoint out = *listen_at;
  if (!advertise.empty()) {
    absl::StatusOr<Endpoint> advertised = ParseFlag(kAdvertiseFlag, advertise);
    if (!advertised.ok()) return advertised.status();
    if (IsWildcardAddress(advertised->address)) {
      return absl::InvalidArgumentError(
          absl::StrCat(kAdvertiseFlag, ": ", advertised->address,
                       " is a wildcard address; peers need one they can dial"));
    }
    out = *advertised;
  } else if (IsWildcardAddress(listen_at->address)) {
    // Peers cannot dial 0.0.0.0: only the operator knows which of the host's addresses
    // they reach it at.
    return absl::InvalidArgumentError(absl::StrCat(
        kListenFlag, ": ", listen, " listens on every address; say which one peers should dial ",
        "with ", kAdvertiseFlag, " ADDR:PORT"));
  }
  if (out.port == 0) out.port = bound_port;
  return FormatEndpoint(out);
}

absl::StatusOr<Netserver> StartNetserver(const std::string& listen, const std::string& advertise) {
  if (absl::Status s = CheckFlags(listen, advertise); !s.ok()) return s;
  const Endpoint listen_at = *ParseEndpoint(listen);
  absl::StatusOr<std::unique_ptr<netperf::Server>> server =
      netperf::Server::Start(listen_at.address, listen_at.port, LogServed);
  if (!server.ok()) {
    return absl::Status(server.status().code(),
                        absl::StrCat(kListenFlag, " ", listen, ": ", server.status().message()));
  }
  Netserver out;
  out.server = *std::move(server);
  absl::StatusOr<std::string> advertised =
      AdvertisedNetserver(listen, advertise, out.server->port());
  if (!advertised.ok()) return advertised.status();
  out.advertise = *advertised;
  spdlog::info("netserver: listening on {}, advertised to peers as {}",
               FormatEndpoint({listen_at.address, out.server->port()}), out.advertise);
  return out;
}

}  // namespace tlbfleet::agent
