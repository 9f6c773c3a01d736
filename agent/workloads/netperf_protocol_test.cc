// The control protocol's lines: requests as the client writes them and the server reads
// them, and line framing over a real socket pair.
#include "agent/workloads/netperf_protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "common/scoped_fd.h"
#include "gtest/gtest.h"

namespace tlbfleet::workloads::netperf {
namespace {

TEST(NetperfProtocolTest, EveryTestKindRoundTripsThroughItsRequestLine) {
  for (TestKind test :
       {TestKind::kTcpStream, TestKind::kUdpStream, TestKind::kTcpRr, TestKind::kUdpRr}) {
    const std::string line = FormatRequest({test, 512});
    EXPECT_EQ(line, std::string(TestName(test)) + " 512");
    std::optional<TestRequest> parsed = ParseRequest(line);
    ASSERT_TRUE(parsed.has_value()) << line;
    EXPECT_EQ(parsed->test, test);
    EXPECT_EQ(parsed->message_size, 512u);
    EXPECT_EQ(RequestedTestName(line), TestName(test));
  }
  EXPECT_TRUE(IsUdp(TestKind::kUdpRr));
  EXPECT_FALSE(IsUdp(TestKind::kTcpRr));
  EXPECT_TRUE(IsRr(TestKind::kTcpRr));
  EXPECT_FALSE(IsRr(TestKind::kUdpStream));
}

TEST(NetperfProtocolTest, RequestsAServerCannotServeDoNotParse) {
  for (const char* bad : {"sctp_stream 1", "tcp_rr", "tcp_rr 0", "tcp_rr -5", "tcp_rr x", "",
                          "tcp_rr 1048577", "TCP_RR 1"}) {
    EXPECT_FALSE(ParseRequest(bad).has_value()) << bad;
  }
  EXPECT_EQ(ParseRequest("udp_stream 1048576")->message_size, kMaxMessageSize);
  // What the server reports for a request it refuses: the test as it was asked for.
  EXPECT_EQ(RequestedTestName("sctp_stream 1"), "sctp_stream");
  EXPECT_EQ(RequestedTestName("sctp_stream"), "sctp_stream");
}

TEST(NetperfProtocolTest, LinesAreFramedByNewlinesAndBounded) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  ScopedFd a(fds[0]), b(fds[1]);
  ASSERT_TRUE(WriteLine(a.get(), "tcp_rr 1"));
  ASSERT_TRUE(WriteLine(a.get(), kEndLine));
  std::string line;
  ASSERT_TRUE(ReadLine(b.get(), line));
  EXPECT_EQ(line, "tcp_rr 1");
  ASSERT_TRUE(ReadLine(b.get(), line));
  EXPECT_EQ(line, kEndLine);
  // A peer that never ends its line is not read for ever.
  ASSERT_TRUE(WriteLine(a.get(), std::string(kMaxLineLength, 'x')));
  EXPECT_FALSE(ReadLine(b.get(), line));
  // Nor is one that hangs up mid-line.
  ScopedFd c, d;
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  c = ScopedFd(fds[0]);
  d = ScopedFd(fds[1]);
  ASSERT_EQ(::send(c.get(), "tcp", 3, MSG_NOSIGNAL), 3);
  c = ScopedFd();
  EXPECT_FALSE(ReadLine(d.get(), line));
}

}  // namespace
}  // namespace tlbfleet::workloads::netperf
