#pragma once
// netperf's four classic tests, written natively: TCP_STREAM, UDP_STREAM (bulk throughput
// one way) and TCP_RR, UDP_RR (request/response transactions, one in flight). The server
// side runs in a thread of the same process, on a loopback address, so one iteration needs
// nothing else on the host. See docs/workloads/netperf.md.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tlbfleet::workloads::netperf {

enum class TestKind { kTcpStream, kUdpStream, kTcpRr, kUdpRr };

struct Options {
  TestKind test = TestKind::kTcpStream;
  size_t message_size = 16384;  // bytes per send (stream) or per request and response (rr)
  double seconds = 10;
  std::string server = "127.0.0.1";  // the address the server binds and the client dials
};

struct Result {
  uint64_t bytes = 0;         // stream: bytes the server received
  uint64_t transactions = 0;  // rr: completed request/response pairs
  double seconds = 0;         // elapsed: stream until the server has read everything sent
};

// The largest UDP payload (IPv4: 65535 - 20 - 8).
inline constexpr size_t kMaxUdpMessage = 65507;

// INVALID_ARGUMENT for a UDP message over kMaxUdpMessage or an unparsable address; other
// socket errors map from errno (RESOURCE_EXHAUSTED for ENOMEM/EMFILE, ...).
absl::StatusOr<Result> RunOnce(const Options& options);

double MbitPerSec(const Result& r);
double TransPerSec(const Result& r);

}  // namespace tlbfleet::workloads::netperf
