// netperf's client against the workload's own server process and against a Server in this
// process: every test kind, both address families, and what fails.
#include "agent/workloads/netperf_client.h"

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "agent/workloads/netperf_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::workloads::netperf {
namespace {

using ::testing::HasSubstr;

Options Short(TestKind test, size_t message_size) {
  Options o;
  o.test = test;
  o.message_size = message_size;
  o.seconds = 0.3;
  return o;  // server 127.0.0.1: tests use loopback only
}

TEST(NetperfRunTest, TcpStreamMovesData) {
  absl::StatusOr<Result> r = RunOnce(Short(TestKind::kTcpStream, 16384));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->bytes, 16384u);
  EXPECT_GE(r->seconds, 0.3);
  EXPECT_GT(MbitPerSec(*r), 0);
}

// As with netserver, a client/server switch changes address space: the workload's own
// server is another process (another mm), reaped when the test ends.
TEST(NetperfRunTest, TheWorkloadsServerIsAProcessOfItsOwn) {
  absl::StatusOr<Result> r = RunOnce(Short(TestKind::kTcpRr, 1));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->transactions, 0u);
  ASSERT_GT(r->server_pid, 0);
  EXPECT_NE(r->server_pid, ::getpid());
  EXPECT_EQ(::kill(r->server_pid, 0), -1) << "the server process was not reaped";

  absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start("127.0.0.1");
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string mine = std::to_string(::getpid());
  std::ifstream status("/proc/" + std::to_string((*server)->pid()) + "/status");
  std::string line, ppid;
  while (std::getline(status, line)) {
    if (line.rfind("PPid:", 0) == 0) ppid = line.substr(line.find_first_not_of(" \t", 5));
  }
  EXPECT_EQ(ppid, mine) << "a child process of the workload";
  absl::StatusOr<Result> again = RunClient(Short(TestKind::kTcpStream, 4096), (*server)->port());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_GT(again->bytes, 0u);
  EXPECT_TRUE((*server)->Stop().ok());
}

TEST(NetperfRunTest, OddMessageSizesArriveWhole) {
  absl::StatusOr<Result> r = RunOnce(Short(TestKind::kTcpRr, 100'003));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->transactions, 0u);
}

TEST(NetperfRunTest, UdpStreamMovesData) {
  absl::StatusOr<Result> r = RunOnce(Short(TestKind::kUdpStream, 1024));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->bytes, 0u);
  EXPECT_EQ(r->bytes % 1024, 0u);
  EXPECT_GT(MbitPerSec(*r), 0);
}

TEST(NetperfRunTest, RequestResponseTestsCompleteTransactions) {
  for (TestKind test : {TestKind::kTcpRr, TestKind::kUdpRr}) {
    absl::StatusOr<Result> r = RunOnce(Short(test, 1));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_GT(r->transactions, 10u);
    EXPECT_GT(TransPerSec(*r), 0);
  }
}

TEST(NetperfRunTest, Ipv6LoopbackWhenTheHostHasIt) {
  Options o = Short(TestKind::kTcpRr, 1);
  o.server = "::1";
  absl::StatusOr<Result> r = RunOnce(o);
  if (!r.ok() && r.status().message().find("bind") != std::string_view::npos) {
    GTEST_SKIP() << "no IPv6 loopback here: " << r.status();
  }
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->transactions, 0u);
}

TEST(NetperfServerTest, OneServerServesTestAfterTest) {
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_NE((*server)->port(), 0);
  for (TestKind test :
       {TestKind::kTcpStream, TestKind::kUdpRr, TestKind::kTcpRr, TestKind::kUdpStream}) {
    absl::StatusOr<Result> r = RunClient(Short(test, 512), (*server)->port());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_GT(r->bytes, 0u) << static_cast<int>(test);
  }
}

TEST(NetperfServerTest, NoServerIsAStatus) {
  uint16_t port = 0;
  {
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start("127.0.0.1", 0);
    ASSERT_TRUE(server.ok()) << server.status();
    port = (*server)->port();
  }  // stopped: nothing listens on `port` any more
  absl::StatusOr<Result> r = RunClient(Short(TestKind::kTcpRr, 1), port);
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("connect"));
}

TEST(NetperfRunTest, OversizedUdpMessageIsRefused) {
  absl::StatusOr<Result> r = RunOnce(Short(TestKind::kUdpStream, kMaxUdpMessage + 1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("message_size:"));
}

}  // namespace
}  // namespace tlbfleet::workloads::netperf
