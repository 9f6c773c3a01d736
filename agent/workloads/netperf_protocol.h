#pragma once
// netperf's control protocol, as netperf and netserver have one: a client and a server talk
// over a TCP control connection, one test per connection, and each test gets a fresh data
// socket. Lines end with "\n" and are at most kMaxLineLength bytes:
//
//   client → server   "<test> <message_size>"   e.g. "tcp_rr 1"; size 1 .. kMaxMessageSize
//   server → client   "<data port>"             a TCP listener or a UDP socket, on the address
//                                               the client reached the server at
//   ... the data phase on the data socket (netperf_client.h) ...
//   client → server   "end"                     TCP: after closing its data connection;
//                                               UDP: after an empty datagram
//   server → client   "<bytes received>"
//
// A request the server cannot serve (an unknown test, a size out of range) is answered by
// closing the connection. Both sides: netperf_client.h and netperf_server.h.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tlbfleet::workloads::netperf {

enum class TestKind { kTcpStream, kUdpStream, kTcpRr, kUdpRr };

bool IsUdp(TestKind test);
bool IsRr(TestKind test);  // request/response: one message in flight
// "tcp_stream", "udp_stream", "tcp_rr", "udp_rr": the workload's `test` parameter too.
const char* TestName(TestKind test);

// The largest UDP payload (IPv4: 65535 - 20 - 8).
inline constexpr size_t kMaxUdpMessage = 65507;
// The largest message a server accepts.
inline constexpr size_t kMaxMessageSize = 1 << 20;
inline constexpr size_t kMaxLineLength = 128;
inline constexpr char kEndLine[] = "end";

struct TestRequest {
  TestKind test = TestKind::kTcpStream;
  size_t message_size = 0;
};
// The request line (without its newline).
std::string FormatRequest(const TestRequest& request);
// The test a request line names as it was sent, for reporting one that cannot be served.
std::string_view RequestedTestName(std::string_view line);
// nullopt for an unknown test or a size out of range.
std::optional<TestRequest> ParseRequest(const std::string& line);

// One line from `fd` without its newline; false on an error, EOF or a line over
// kMaxLineLength.
bool ReadLine(int fd, std::string& line);
// `line` and a newline; false on an error.
bool WriteLine(int fd, const std::string& line);

}  // namespace tlbfleet::workloads::netperf
