#include "agent/workloads/netperf_protocol.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "agent/workloads/netperf_sockets.h"

namespace tlbfleet::workloads::netperf {
namespace {

constexpr const char* kTestNames[] = {"tcp_stream", "udp_stream", "tcp_rr", "udp_rr"};

}  // namespace

bool IsUdp(TestKind t) { return t == TestKind::kUdpStream || t == TestKind::kUdpRr; }
bool IsRr(TestKind t) { return t == TestKind::kTcpRr || t == TestKind::kUdpRr; }
const char* TestName(TestKind t) { return kTestNames[static_cast<int>(t)]; }

std::string FormatRequest(const TestRequest& request) {
  return absl::StrCat(TestName(request.test), " ", request.message_size);
}

std::string_view RequestedTestName(std::string_view line) { return line.substr(0, line.find(' ')); }

std::optional<TestRequest> ParseRequest(const std::string& line) {
  const size_t space = line.find(' ');
  if (space == std::string::npos) return std::nullopt;
  const std::string_view name = RequestedTestName(line);
  const long long size = std::atoll(line.c_str() + space + 1);
  std::optional<TestRequest> request;
  for (int i = 0; i < 4; ++i) {
    if (name == kTestNames[i]) request = TestRequest{static_cast<TestKind>(i), 0};
  }
  if (!request || size < 1 || static_cast<unsigned long long>(size) > kMaxMessageSize) {
    return std::nullopt;
  }
  request->message_size = static_cast<size_t>(size);
  return request;
}

bool ReadLine(int fd, std::string& line) {
  line.clear();
  char c;
  while (line.size() < kMaxLineLength) {
    const ssize_t n = ::recv(fd, &c, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    if (c == '\n') return true;
    line.push_back(c);
  }
  return false;
}

bool WriteLine(int fd, const std::string& line) {
  const std::string out = line + "\n";
  return WriteFull(fd, out.data(), out.size());
}

}  // namespace tlbfleet::workloads::netperf
