#include "agent/workloads/netperf_server.h"

#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <optional>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/workloads/netperf_protocol.h"
#include "agent/workloads/netperf_sockets.h"
#include "common/address.h"
#include "common/files.h"

namespace tlbfleet::workloads::netperf {
namespace {

// Serves the data phase of one test on `data` (a TCP listener or a UDP socket); returns the
// bytes received, or nothing if the client went away.
std::optional<uint64_t> ServeTest(int control, int data, TestKind test, size_t size) {
  std::vector<char> buf(IsUdp(test) ? kMaxUdpMessage + 1 : std::max<size_t>(size, 65536));
  uint64_t bytes = 0;
  std::string line;
  if (!IsUdp(test)) {
    SetTimeout(data, SO_RCVTIMEO, 10);  // the client connects at once, or not at all
    ScopedFd conn(::accept4(data, nullptr, nullptr, SOCK_CLOEXEC));
    if (conn.get() < 0) return std::nullopt;
    SetKeepalive(conn.get());
    if (IsRr(test)) {
      while (ReadFull(conn.get(), buf.data(), size) && WriteFull(conn.get(), buf.data(), size)) {
        bytes += size;
      }
    } else {
      for (;;) {
        const ssize_t n = ::recv(conn.get(), buf.data(), buf.size(), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        bytes += static_cast<uint64_t>(n);
      }
    }
    if (!ReadLine(control, line) || line != kEndLine) return std::nullopt;
    return bytes;
  }
  // The client ends with an empty datagram; if that was dropped (a full queue), a quiet
  // spell of 100 ms with "end" waiting on the control connection ends the test too.
  SetTimeout(data, SO_RCVTIMEO, 0.1);
  for (;;) {
    sockaddr_storage peer;
    socklen_t peer_length = sizeof peer;
    const ssize_t n = ::recvfrom(data, buf.data(), buf.size(), 0,
                                 reinterpret_cast<sockaddr*>(&peer), &peer_length);
    if (n > 0) {
      bytes += static_cast<uint64_t>(n);
      if (IsRr(test)) {
        ::sendto(data, buf.data(), static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&peer),
                 peer_length);
      }
      continue;
    }
    if (n == 0) break;  // the end marker
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return std::nullopt;
    char c;
    if (::recv(control, &c, 1, MSG_PEEK | MSG_DONTWAIT) >= 0 || errno != EAGAIN) break;
  }
  // Datagrams already queued were sent before "end": count them too.
  for (ssize_t n; (n = ::recv(data, buf.data(), buf.size(), MSG_DONTWAIT)) > 0;) {
    bytes += static_cast<uint64_t>(n);
  }
  if (!ReadLine(control, line) || line != kEndLine) return std::nullopt;
  return bytes;
}

// Serves one control connection: one test. Fills in `served` as far as it got; false if the
// client sent nothing at all (nothing worth reporting).
bool ServeControl(int control, ServedTest& served) {
  // The request comes at once and "end" as soon as the data phase is over; a client that
  // is silent longer than this is gone.
  SetTimeout(control, SO_RCVTIMEO, 30);
  SetKeepalive(control);
  Address peer;
  peer.length = sizeof peer.storage;
  if (::getpeername(control, peer.get(), &peer.length) == 0) {
    served.client = FormatEndpoint({FormatAddress(peer), GetPort(peer)});
  }
  std::string line;
  if (!ReadLine(control, line)) return false;
  served.test = std::string(RequestedTestName(line));
  const std::optional<TestRequest> request = ParseRequest(line);
  if (!request) return true;
  served.message_size = request->message_size;
  // The data socket lives on the address the client reached us at.
  Address local;
  local.length = sizeof local.storage;
  if (::getsockname(control, local.get(), &local.length) != 0) return true;
  SetPort(local, 0);
  absl::StatusOr<ScopedFd> data =
      BindServer(local, IsUdp(request->test) ? SOCK_DGRAM : SOCK_STREAM);
  if (!data.ok()) return true;
  if (!WriteLine(control, std::to_string(GetPort(local)))) return true;
  std::optional<uint64_t> bytes =
      ServeTest(control, data->get(), request->test, served.message_size);
  if (bytes) {
    served.bytes = *bytes;
    served.completed = WriteLine(control, std::to_string(*bytes));
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const std::string& address, uint16_t port,
                                                      ServedCallback on_served) {
  absl::StatusOr<Address> a = ParseAddress(address);
  if (!a.ok()) return a.status();
  SetPort(*a, port);
  absl::StatusOr<ScopedFd> listener = BindServer(*a, SOCK_STREAM);
  if (!listener.ok()) return listener.status();
  std::unique_ptr<Server> server(
      new Server(*std::move(listener), GetPort(*a), std::move(on_served)));
  try {
    server->thread_ = std::thread(&Server::Serve, server.get());
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("netperf: cannot start the server thread: ", e.what()));
  }
  return server;
}

Server::Server(ScopedFd listener, uint16_t port, ServedCallback on_served)
    : listener_(std::move(listener)), port_(port), on_served_(std::move(on_served)) {}

Server::~Server() {
  ::shutdown(listener_.get(), SHUT_RDWR);  // wakes the thread blocked in accept
  if (thread_.joinable()) thread_.join();
}

void Server::Serve() {
  for (;;) {
    ScopedFd control(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (control.get() < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // shut down
    }
    ServedTest served;
    const auto start = std::chrono::steady_clock::now();
    const bool requested = ServeControl(control.get(), served);
    served.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (requested && on_served_) on_served_(served);
  }
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(const std::string& address) {
  absl::StatusOr<Address> a = ParseAddress(address);
  if (!a.ok()) return a.status();
  SetPort(*a, 0);
  absl::StatusOr<ScopedFd> listener = BindServer(*a, SOCK_STREAM);
  if (!listener.ok()) return listener.status();
  const uint16_t port = GetPort(*a);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus(errno, "netperf: forking the server process");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    Server server(*std::move(listener), port, nullptr);
    server.Serve();  // until killed
    ::_exit(0);
  }
  return std::unique_ptr<ServerProcess>(new ServerProcess(pid, port));
}

absl::Status ServerProcess::Stop() {
  if (pid_ <= 0) return absl::OkStatus();
  int status = 0;
  pid_t done = ::waitpid(pid_, &status, WNOHANG);
  const bool died_early = done == pid_;
  if (!died_early) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = 0;
  if (died_early) {
    return absl::InternalError(
        absl::StrCat("netperf: the server process ended during the test (",
                     WIFSIGNALED(status) ? "signal " : "status ",
                     WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), ")"));
  }
  return absl::OkStatus();
}

ServerProcess::~ServerProcess() { (void)Stop(); }

}  // namespace tlbfleet::workloads::netperf
