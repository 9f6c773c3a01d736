#include "agent/workloads/netperf_client.h"

#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/workloads/netperf_server.h"
#include "agent/workloads/netperf_sockets.h"

namespace tlbfleet::workloads::netperf {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

absl::StatusOr<Result> RunClient(const Options& options, uint16_t port) {
  const bool udp = IsUdp(options.test);
  const bool rr = IsRr(options.test);
  const size_t size = options.message_size;
  if (udp && size > kMaxUdpMessage) {
    return absl::InvalidArgumentError(absl::StrCat("message_size: UDP tests send at most ",
                                                   kMaxUdpMessage, " bytes, got ", size));
  }
  absl::StatusOr<Address> address = ParseAddress(options.server);
  if (!address.ok()) return address.status();
  SetPort(*address, port);
  absl::StatusOr<ScopedFd> control = Connect(*address, SOCK_STREAM);
  if (!control.ok()) return control.status();
  std::string line;
  if (!WriteLine(control->get(), FormatRequest({options.test, size})) ||
      !ReadLine(control->get(), line)) {
    return absl::UnavailableError("netperf: the server refused the test");
  }
  SetPort(*address, static_cast<uint16_t>(std::atoi(line.c_str())));
  absl::StatusOr<ScopedFd> data = Connect(*address, udp ? SOCK_DGRAM : SOCK_STREAM);
  if (!data.ok()) return data.status();

  std::vector<char> buf(size, 'n');
  Result result;
  bool io_ok = true;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options.seconds));
  if (rr && udp) SetTimeout(data->get(), SO_RCVTIMEO, 1.0);
  while (io_ok && Clock::now() < deadline) {
    if (rr && udp) {
      // A lost datagram would stall the test for ever: after a timeout, ask again.
      if (::send(data->get(), buf.data(), size, 0) < 0) continue;
      if (::recv(data->get(), buf.data(), size, 0) < 0) continue;
      ++result.transactions;
    } else if (rr) {
      io_ok = WriteFull(data->get(), buf.data(), size) && ReadFull(data->get(), buf.data(), size);
      result.transactions += io_ok ? 1 : 0;
    } else if (udp) {
      ::send(data->get(), buf.data(), size, 0);  // a full queue drops it, as with netperf
    } else {
      io_ok = WriteFull(data->get(), buf.data(), size);
    }
  }
  if (rr || udp) result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (udp) ::send(data->get(), buf.data(), 0, 0);  // the end marker
  *data = ScopedFd();  // close: a TCP server sees EOF once it has read everything
  if (!io_ok) return absl::InternalError("netperf: the data connection failed during the test");
  if (!WriteLine(control->get(), kEndLine) || !ReadLine(control->get(), line)) {
    return absl::InternalError("netperf: the server did not report its result");
  }
  // TCP_STREAM: the time includes the server draining what was sent. (UDP_STREAM: what was
  // not queued when sending stopped is lost anyway.)
  if (!rr && !udp) result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.bytes = std::strtoull(line.c_str(), nullptr, 10);
  return result;
}

absl::StatusOr<Result> RunOnce(const Options& options) {
  if (options.port != 0 || (IsUdp(options.test) && options.message_size > kMaxUdpMessage)) {
    return RunClient(options, options.port);  // (an oversized message: refused at once)
  }
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(options.server);
  if (!server.ok()) return server.status();
  absl::StatusOr<Result> result = RunClient(options, (*server)->port());
  const int server_pid = (*server)->pid();
  absl::Status stopped = (*server)->Stop();
  if (!result.ok()) return result.status();
  if (!stopped.ok()) return stopped;
  result->server_pid = server_pid;
  return result;
}

double MbitPerSec(const Result& r) {
  return r.seconds > 0 ? static_cast<double>(r.bytes) * 8 / 1e6 / r.seconds : 0;
}

double TransPerSec(const Result& r) {
  return r.seconds > 0 ? static_cast<double>(r.transactions) / r.seconds : 0;
}

}  // namespace tlbfleet::workloads::netperf
