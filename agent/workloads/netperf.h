#pragma once
// netperf's four classic tests, written natively: TCP_STREAM, UDP_STREAM (bulk throughput
// one way) and TCP_RR, UDP_RR (request/response transactions, one in flight). Like netperf
// and netserver, a client and a server talk over a control connection, and each test gets a
// fresh data socket. The workload starts the server in a thread of its own process, on a
// loopback address, so one iteration needs nothing else on the host.
// See docs/workloads/netperf.md.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

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

// The server side. Serves one test at a time, until destroyed: a client connects to the
// control port and sends "<test> <message_size>\n"; the server opens a data socket on the
// control connection's local address (a TCP listener or a UDP socket, port 0) and answers
// "<port>\n"; the client runs the test on it and sends "end\n" when done (for TCP after
// closing its data connection); the server answers "<bytes received>\n".
class Server {
 public:
  // Binds `address` (an IP literal) port `port` (0: any free port) and starts serving in a
  // thread. The destructor stops it; a test in progress must have ended first.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const std::string& address, uint16_t port);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  uint16_t port() const { return port_; }

 private:
  Server(int listener, uint16_t port);
  void Serve();

  int listener_;
  uint16_t port_;
  std::thread thread_;
};

// Runs one test against the server at options.server, control port `port`.
// INVALID_ARGUMENT for a UDP message over kMaxUdpMessage or an unparsable address; other
// socket errors map from errno (UNAVAILABLE for a refused connection, ...).
absl::StatusOr<Result> RunClient(const Options& options, uint16_t port);

// Starts a Server on options.server, port 0, and runs the client against it.
absl::StatusOr<Result> RunOnce(const Options& options);

double MbitPerSec(const Result& r);
double TransPerSec(const Result& r);

}  // namespace tlbfleet::workloads::netperf
