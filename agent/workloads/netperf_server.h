#pragma once
// netperf's server side, as netserver is: serves one test at a time over the control protocol
// (netperf_protocol.h), in a thread (Server: an agent's netserver, agent/runner/netserver.h)
// or in a process of its own (ServerProcess: the workload's own server on loopback).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/scoped_fd.h"

namespace tlbfleet::workloads::netperf {

// What a Server reports after each control connection that sent a request.
struct ServedTest {
  std::string test;  // as the client sent it, e.g. "tcp_rr"
  size_t message_size = 0;
  std::string client;      // the control connection's peer, "address:port"
  bool completed = false;  // false: a bad request, or the client went away mid-test
  uint64_t bytes = 0;      // received on the data socket
  double seconds = 0;      // from the request to the result
};

class ServerProcess;

// Serves tests from any client that reaches it, one at a time, until destroyed. A client that
// is silent for 30 s on the control connection (10 s before connecting its TCP data socket)
// is given up on; keepalive notices a vanished host.
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

}  // namespace tlbfleet::workloads::netperf
