#pragma once
// The agent's netserver: a long-lived netperf::Server in the agent process, which other
// agents' netperf jobs dial when their run says `server: peer` (the controller picks this
// agent as their peer and reserves it for the job). Opt-in with --netserver-listen; what
// peers should dial is advertised in HostInfo.netserver. See docs/workloads/netperf.md.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "agent/workloads/netperf_server.h"

namespace tlbfleet::agent {

// The address peers are told to dial (HostInfo.netserver, "address:port"), from the
// --netserver-listen and --netserver-advertise flag values and the port the server really
// bound. `advertise` empty: the listen address with `bound_port`, which a wildcard listen
// address (0.0.0.0, ::) cannot be. An advertised port 0 also means `bound_port`.
// INVALID_ARGUMENT naming the flag for a malformed or unusable value.
absl::StatusOr<std::string> AdvertisedNetserver(const std::string& listen,
                                                const std::string& advertise, uint16_t bound_port);

// A running netserver and what the agent advertises for it.
struct Netserver {
  std::unique_ptr<workloads::netperf::Server> server;
  std::string advertise;  // HostInfo.netserver
};

// Checks both flags, then starts the server on `listen` ("ADDR:PORT", port 0 = any free
// port) and logs every test it serves (info). Flag errors are INVALID_ARGUMENT naming the
// flag, and are found before anything binds; a bind failure names --netserver-listen.
absl::StatusOr<Netserver> StartNetserver(const std::string& listen, const std::string& advertise);

}  // namespace tlbfleet::agent
