#include "agent/workloads/netperf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/workloads/workload.h"
#include "agent/workloads/workload_util.h"
#include "common/files.h"

namespace tlbfleet::workloads {
namespace netperf {
namespace {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

struct Address {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family() const { return storage.ss_family; }
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&storage); }
};

absl::StatusOr<Address> ParseAddress(const std::string& text) {
  Address a;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
  if (::inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    a.length = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    a.length = sizeof(sockaddr_in6);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("server: not an IP address: \"", text, "\""));
  }
  return a;
}

void SetTimeout(int fd, int option, double seconds) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(seconds);
  tv.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(tv.tv_sec)) * 1e6);
  ::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv);
}

// Binds a socket of `type` to `address` port 0 and fills in the port the kernel chose.
absl::StatusOr<Fd> BindServer(Address& address, int type) {
  Fd fd(::socket(address.family(), type | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return ErrnoStatus(errno, "netperf: server socket");
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), address.get(), address.length) != 0) {
    return ErrnoStatus(errno, "netperf: bind");
  }
  if (::getsockname(fd.get(), address.get(), &address.length) != 0) {
    return ErrnoStatus(errno, "netperf: getsockname");
  }
  if (type == SOCK_STREAM && ::listen(fd.get(), 1) != 0) {
    return ErrnoStatus(errno, "netperf: listen");
  }
  return fd;
}

absl::StatusOr<Fd> Connect(Address& address, int type) {
  Fd fd(::socket(address.family(), type | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return ErrnoStatus(errno, "netperf: client socket");
  if (::connect(fd.get(), address.get(), address.length) != 0) {
    return ErrnoStatus(errno, "netperf: connect");
  }
  if (type == SOCK_STREAM) {
    // Request/response: one message in flight, so Nagle could only add delay.
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

// Full-buffer I/O on a stream socket; false on error or EOF.
bool ReadFull(int fd, char* buf, size_t size) {
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::recv(fd, buf + done, size - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool WriteFull(int fd, const char* buf, size_t size) {
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::send(fd, buf + done, size - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// The server thread's side of each test. The server stops at EOF (TCP) or when `stop` is set
// (UDP; it polls with a receive timeout).
void TcpServer(int listener, bool rr, size_t message_size, std::atomic<uint64_t>& bytes) {
  Fd conn(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (conn.get() < 0) return;
  std::vector<char> buf(rr ? message_size : std::max<size_t>(message_size, 65536));
  if (rr) {
    while (ReadFull(conn.get(), buf.data(), message_size) &&
           WriteFull(conn.get(), buf.data(), message_size)) {
    }
    return;
  }
  uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::recv(conn.get(), buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    total += static_cast<uint64_t>(n);
  }
  bytes = total;
}

void UdpServer(int fd, bool rr, size_t message_size, const std::atomic<bool>& stop,
               std::atomic<uint64_t>& bytes) {
  std::vector<char> buf(kMaxUdpMessage + 1);
  SetTimeout(fd, SO_RCVTIMEO, 0.05);
  while (!stop.load()) {
    sockaddr_storage peer;
    socklen_t peer_length = sizeof peer;
    const ssize_t n =
        ::recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&peer), &peer_length);
    if (n <= 0) continue;  // timeout, EINTR: look at `stop` again
    bytes.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
    if (rr) {
      ::sendto(fd, buf.data(), static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&peer),
               peer_length);
    }
  }
}

bool IsUdp(TestKind t) { return t == TestKind::kUdpStream || t == TestKind::kUdpRr; }
bool IsRr(TestKind t) { return t == TestKind::kTcpRr || t == TestKind::kUdpRr; }

}  // namespace

absl::StatusOr<Result> RunOnce(const Options& options) {
  const bool udp = IsUdp(options.test);
  const bool rr = IsRr(options.test);
  const size_t size = options.message_size;
  if (udp && size > kMaxUdpMessage) {
    return absl::InvalidArgumentError(absl::StrCat("message_size: UDP tests send at most ",
                                                   kMaxUdpMessage, " bytes, got ", size));
  }
  absl::StatusOr<Address> address = ParseAddress(options.server);
  if (!address.ok()) return address.status();
  const int type = udp ? SOCK_DGRAM : SOCK_STREAM;
  absl::StatusOr<Fd> server = BindServer(*address, type);
  if (!server.ok()) return server.status();

  std::atomic<uint64_t> server_bytes{0};
  std::atomic<bool> stop{false};
  std::thread server_thread;
  try {
    server_thread = udp ? std::thread(UdpServer, server->get(), rr, size, std::cref(stop),
                                      std::ref(server_bytes))
                        : std::thread(TcpServer, server->get(), rr, size, std::ref(server_bytes));
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("netperf: cannot start the server thread: ", e.what()));
  }
  absl::StatusOr<Fd> client = Connect(*address, type);
  if (!client.ok()) {
    stop = true;
    ::shutdown(server->get(), SHUT_RDWR);  // wakes a TCP server blocked in accept
    server_thread.join();
    return client.status();
  }

  std::vector<char> buf(size, 'n');
  Result result;
  bool io_ok = true;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options.seconds));
  if (rr) {
    if (udp) SetTimeout(client->get(), SO_RCVTIMEO, 1.0);
    while (io_ok && Clock::now() < deadline) {
      if (udp) {
        // A lost datagram would stall the test for ever: after a timeout, send again.
        if (::send(client->get(), buf.data(), size, 0) < 0) continue;
        if (::recv(client->get(), buf.data(), size, 0) < 0) continue;
      } else {
        io_ok =
            WriteFull(client->get(), buf.data(), size) && ReadFull(client->get(), buf.data(), size);
        if (!io_ok) break;
      }
      ++result.transactions;
    }
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } else {
    while (io_ok && Clock::now() < deadline) {
      if (udp) {
        ::send(client->get(), buf.data(), size, 0);  // a full queue drops it, as in netperf
      } else {
        io_ok = WriteFull(client->get(), buf.data(), size);
      }
    }
    if (!udp) {
      // The server has read everything once it sees EOF: the time includes draining.
      ::shutdown(client->get(), SHUT_WR);
      server_thread.join();
    }
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  if (udp && !rr) {
    // Datagrams still queued at the server were sent in time: let it drain them.
    uint64_t seen = server_bytes.load();
    for (int i = 0; i < 50; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const uint64_t now = server_bytes.load();
      if (now == seen) break;
      seen = now;
    }
  }
  *client = Fd();  // close: a TCP rr server sees EOF
  stop = true;
  if (server_thread.joinable()) server_thread.join();
  result.bytes = server_bytes.load();
  if (!io_ok) return absl::InternalError("netperf: the connection failed during the test");
  return result;
}

double MbitPerSec(const Result& r) {
  return r.seconds > 0 ? static_cast<double>(r.bytes) * 8 / 1e6 / r.seconds : 0;
}

double TransPerSec(const Result& r) {
  return r.seconds > 0 ? static_cast<double>(r.transactions) / r.seconds : 0;
}

}  // namespace netperf

// --- The registered workload -------------------------------------------------------------

namespace {

const MetricSpec kMbit = {"mbit_per_sec", "Mbit/s", Better::kHigher,
                          "stream tests: bytes the server received x 8 / 10^6 / elapsed"};
const MetricSpec kTrans = {"trans_per_sec", "trans/s", Better::kHigher,
                           "rr tests: request/response transactions per second"};

class Netperf : public Workload {
 public:
  std::string_view Name() const override { return "netperf"; }
  std::string_view Description() const override {
    return "netperf TCP_STREAM, UDP_STREAM, TCP_RR, UDP_RR against a server on loopback "
           "started by the workload";
  }
  const std::vector<ParamSpec>& Schema() const override { return schema_; }
  const std::vector<MetricSpec>& Metrics() const override { return metrics_; }
  // Stream tests report only mbit_per_sec, rr tests only trans_per_sec.
  std::string_view PrimaryMetric() const override { return kMbit.name; }
  const std::vector<ClassicFlag>& ClassicFlags() const override { return flags_; }

  absl::StatusOr<std::vector<Measurement>> Run(const Params& params) const override {
    netperf::Options o;
    const std::string& test = params.Str("test");
    o.test = test == "udp_stream" ? netperf::TestKind::kUdpStream
             : test == "tcp_rr"   ? netperf::TestKind::kTcpRr
             : test == "udp_rr"   ? netperf::TestKind::kUdpRr
                                  : netperf::TestKind::kTcpStream;
    o.message_size = static_cast<size_t>(params.Int("message_size"));
    o.seconds = static_cast<double>(params.Int("seconds"));
    const std::string& server = params.Str("server");
    o.server = server.empty() ? "127.0.0.1" : server;
    absl::StatusOr<netperf::Result> r = netperf::RunOnce(o);
    if (!r.ok()) return r.status();
    if (test == "tcp_rr" || test == "udp_rr") {
      return std::vector<Measurement>{Measure(kTrans, netperf::TransPerSec(*r))};
    }
    return std::vector<Measurement>{Measure(kMbit, netperf::MbitPerSec(*r))};
  }

  std::string ClassicOutput(const Params& params,
                            const std::vector<Measurement>& result) const override {
    // netperf's layout, without the socket buffer columns; the last field of the last line
    // is the result, as scripts that parse netperf expect.
    const std::string& test = params.Str("test");
    const bool rr = test == "tcp_rr" || test == "udp_rr";
    const std::string& server = params.Str("server");
    const std::string peer = server.empty() ? "127.0.0.1" : server;
    const bool v6 = peer.find(':') != std::string::npos;
    std::string upper;
    for (char c : test.substr(0, 3)) upper.push_back(static_cast<char>(c - 'a' + 'A'));
    const int64_t size = params.Int("message_size");
    char row[128];
    std::string out =
        absl::StrCat("MIGRATED ", upper, rr ? " REQUEST/RESPONSE TEST" : " STREAM TEST", " from ",
                     v6 ? "::" : "0.0.0.0", " () port 0 ", v6 ? "AF_INET6" : "AF_INET", " to ",
                     peer, " () port 0 ", v6 ? "AF_INET6" : "AF_INET", "\n");
    if (rr) {
      std::snprintf(row, sizeof row, "%-8lld %-8lld %-8.2f %.2f\n", static_cast<long long>(size),
                    static_cast<long long>(size), static_cast<double>(params.Int("seconds")),
                    FindValue(result, kTrans.name));
      absl::StrAppend(&out, "Request  Resp.    Elapsed  Trans.\nSize     Size     Time     Rate\n",
                      "bytes    bytes    secs.    per sec\n\n", row);
    } else {
      std::snprintf(row, sizeof row, "%-8lld %-8.2f %.2f\n", static_cast<long long>(size),
                    static_cast<double>(params.Int("seconds")), FindValue(result, kMbit.name));
      absl::StrAppend(&out, "Message  Elapsed\nSize     Time     Throughput\n",
                      "bytes    secs.    10^6bits/sec\n\n", row);
    }
    return out;
  }

  int64_t TimeoutSeconds(const Params& params) const override {
    return 2 * params.Int("seconds") + 30;
  }

 private:
  const std::vector<ParamSpec> schema_ = {
      EnumParam("test", "tcp_stream", {"tcp_stream", "udp_stream", "tcp_rr", "udp_rr"},
                "netperf test"),
      IntParam("message_size", "16384", 1, 1 << 20,
               "bytes per send (stream) or per request and per response (rr); UDP: at most "
               "65507"),
      IntParam("seconds", "10", 1, 86400, "test length"),
      // An enum until the parameter schema has a string type; see docs/workloads/netperf.md.
      EnumParam("server", "", {"", "127.0.0.1", "::1"},
                "address of the server: empty = 127.0.0.1; the workload starts the server "
                "there itself"),
  };
  const std::vector<MetricSpec> metrics_ = {kMbit, kTrans};
  // netperf's global -l, -H, -t and its test-specific -m (given after "--" to netperf).
  const std::vector<ClassicFlag> flags_ = {
      {"-l", "seconds", "", "test length in seconds"},
      {"-H", "server", "", "server address (loopback only)"},
      {"-t", "test", "", "test name, lower case: tcp_stream, udp_stream, tcp_rr, udp_rr"},
      {"-m", "message_size", "", "message size in bytes"},
  };
};

}  // namespace

REGISTER_WORKLOAD(Netperf);

}  // namespace tlbfleet::workloads
