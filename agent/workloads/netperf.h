#pragma once
// netperf's four classic tests, written natively: TCP_STREAM, UDP_STREAM (bulk throughput
// one way) and TCP_RR, UDP_RR (request/response transactions, one in flight). Like netperf
// and netserver, a client and a server talk over a control connection, and each test gets a
// fresh data socket. By default the workload starts the server in a process of its own
// (ServerProcess), on a loopback address, so one iteration needs nothing else on the host;
// with a
// control port it dials a server that is already running, such as another agent's
// netserver (tlbfleet-agent --netserver-listen), which the controller picks for
// `server: peer`. See docs/workloads/netperf.md.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "common/address.h"
#include "common/scoped_fd.h"

namespace tlbfleet::workloads::netperf {

enum class TestKind { kTcpStream, kUdpStream, kTcpRr, kUdpRr };

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

// The largest UDP payload (IPv4: 65535 - 20 - 8).
inline constexpr size_t kMaxUdpMessage = 65507;

// --- Addresses ---------------------------------------------------------------------------
// In common/address.h, shared by the workload's `server` parameter, the agent's --netserver-*
// flags and the controller's choice of a peer.
using ::tlbfleet::CanonicalAddress;
using ::tlbfleet::Endpoint;
using ::tlbfleet::FormatEndpoint;
using ::tlbfleet::IsLoopbackAddress;
using ::tlbfleet::IsWildcardAddress;
using ::tlbfleet::ParseEndpoint;

// What a Server reports after each control connection that sent a request.
struct ServedTest {
  std::string test;  // as the client sent it, e.g. "tcp_rr"
  size_t message_size = 0;
  std::string client;      // the control connection's peer, "address:port"
  bool completed = false;  // false: a bad request, or the client went away mid-test
  uint64_t bytes = 0;      // received on the data socket
  double seconds = 0;      // from the request to the result
};

// The server side. Serves one test at a time, until destroyed: a client connects to the
// control port and sends "<test> <message_size>\n"; the server opens a data socket on the
// control connection's local address (a TCP listener or a UDP socket, port 0) and answers
// "<port>\n"; the client runs the test on it and sends "end\n" when done (for TCP after
// closing its data connection); the server answers "<bytes received>\n".
class ServerProcess;

class Server {
 public:
  // Called on the server's thread after each test; must not block for long.
  using ServedCallback = std::function<void(const ServedTest&)>;

  // Binds `address` (an IP literal) port `port` (0: any free port) and starts serving in a
  // thread; `on_served` (optional) hears about each test. The destructor stops it; a test in
  // progress must have ended first.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const std::string& address, uint16_t port,
                                                       ServedCallback on_served = nullptr);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  uint16_t port() const { return port_; }

 private:
  friend class ServerProcess;  // serves on the listener in its child, without a thread
  Server(ScopedFd listener, uint16_t port, ServedCallback on_served);
  void Serve();

  ScopedFd listener_;
  uint16_t port_;
  ServedCallback on_served_;
  std::thread thread_;
};

// A Server in a process of its own, as netserver is: every switch between the client and
// the server then changes address space, with the TLB cost that implies (a server thread in
// the client's process would share its mm and hide exactly that). The listener is bound
// before the fork, so bind errors come from Start(); the child serves until Stop() (or the
// destructor) kills it, and dies with the thread that started it (PR_SET_PDEATHSIG).
class ServerProcess {
 public:
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(const std::string& address);
  ~ServerProcess();  // Stop()
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  uint16_t port() const { return port_; }
  int pid() const { return pid_; }
  // Kills and reaps the child. INTERNAL if it had already died on its own.
  absl::Status Stop();

 private:
  ServerProcess(int pid, uint16_t port) : pid_(pid), port_(port) {}
  int pid_;
  uint16_t port_;
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
