#pragma once
// netperf's four classic tests, written natively: TCP_STREAM, UDP_STREAM (bulk throughput
// one way) and TCP_RR, UDP_RR (request/response transactions, one in flight), as the client
// of the control protocol (netperf_protocol.h). By default a test starts its own server in a
// process of its own (ServerProcess, netperf_server.h) on a loopback address, so one
// iteration needs nothing else on the host; with a control port it dials a server that is
// already running, such as another agent's netserver (tlbfleet-agent --netserver-listen),
// which the controller picks for `server: peer`. See docs/workloads/netperf.md.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "agent/workloads/netperf_protocol.h"

namespace tlbfleet::workloads::netperf {

struct Options {
  TestKind test = TestKind::kTcpStream;
  size_t message_size = 16384;  // bytes per send (stream) or per request and response (rr)
  double seconds = 10;
  // The address the client dials; with port 0 also the address RunOnce's server binds.
  std::string server = "127.0.0.1";
  // The control port of a server that is already running there; 0: RunOnce starts one.
  uint16_t port = 0;
};

struct Result {
  uint64_t bytes = 0;         // stream: bytes the server received
  uint64_t transactions = 0;  // rr: completed request/response pairs
  double seconds = 0;         // elapsed: stream until the server has read everything sent
  int server_pid = 0;         // RunOnce's own server process (0: a running server was dialled)
};

// Runs one test against the server at options.server, control port `port`.
// INVALID_ARGUMENT for a UDP message over kMaxUdpMessage or an unparsable address; other
// socket errors map from errno (UNAVAILABLE for a refused connection, ...).
absl::StatusOr<Result> RunClient(const Options& options, uint16_t port);

// With options.port 0: starts a ServerProcess on options.server, port 0, and runs the client
// against it. Otherwise runs the client against the server already at options.server,
// options.port.
absl::StatusOr<Result> RunOnce(const Options& options);

double MbitPerSec(const Result& r);
double TransPerSec(const Result& r);

}  // namespace tlbfleet::workloads::netperf
