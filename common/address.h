#pragma once
// IP literals and "address:port" endpoints, shared by the agent (its netserver flags, the
// netperf workload's `server`) and the controller (which points a job at a peer's server), so
// that both agree on what an address is. Host names are never resolved: a benchmark should
// not depend on DNS.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tlbfleet {

// `text` as inet_ntop writes it ("::1" for "0:0::1"), or INVALID_ARGUMENT if it is not an
// IPv4 or IPv6 literal.
absl::StatusOr<std::string> CanonicalAddress(std::string_view text);
bool IsLoopbackAddress(std::string_view address);  // 127.0.0.0/8 or ::1
bool IsWildcardAddress(std::string_view address);  // 0.0.0.0 or ::

// An IP literal and a port, written "127.0.0.2:12865" or "[::1]:12865".
struct Endpoint {
  std::string address;  // canonical (CanonicalAddress)
  uint16_t port = 0;
};
// INVALID_ARGUMENT (saying what is expected, without naming a flag or field) for anything
// else; callers prefix the field.
absl::StatusOr<Endpoint> ParseEndpoint(std::string_view text);
std::string FormatEndpoint(const Endpoint& endpoint);

// Whether `server` is an endpoint another host can dial: it parses and its port is not 0. An
// agent checks its own flags; the controller checks again so that one which sent something else
// (an older or buggy agent) is never chosen as a peer and fails the job.
bool IsDialableEndpoint(std::string_view server);

}  // namespace tlbfleet
