#include "agent/workloads/netperf.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/workloads/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::workloads::netperf {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

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

const Workload& Netperf() {
  LinkAllWorkloads();
  const Workload* w = Registry::Get().Find("netperf");
  EXPECT_NE(w, nullptr);
  return *w;
}

TEST(NetperfWorkloadTest, TcpStreamReportsMbitPerSec) {
  const Workload& w = Netperf();
  Params params = ResolveParams(w, {{"seconds", "1"}}).value();
  absl::StatusOr<std::vector<Measurement>> result = w.Run(params);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->size(), 1u);
  EXPECT_EQ((*result)[0].metric, "mbit_per_sec");
  EXPECT_EQ((*result)[0].unit, "Mbit/s");
  EXPECT_GT((*result)[0].value, 0);
  EXPECT_THAT(w.ClassicOutput(params, *result),
              MatchesRegex("MIGRATED TCP STREAM TEST from 0.0.0.0 .* to 127.0.0.1 .*\n(.*\n)*"
                           "16384 +1.00 +[0-9]+\\.[0-9][0-9] *\n"));
}

TEST(NetperfWorkloadTest, TcpRrReportsTransPerSec) {
  const Workload& w = Netperf();
  Params params =
      ResolveParams(w, {{"test", "tcp_rr"}, {"message_size", "1"}, {"seconds", "1"}}).value();
  absl::StatusOr<std::vector<Measurement>> result = w.Run(params);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->size(), 1u);
  EXPECT_EQ((*result)[0].metric, "trans_per_sec");
  EXPECT_GT((*result)[0].value, 0);
  EXPECT_THAT(w.ClassicOutput(params, *result),
              MatchesRegex("MIGRATED TCP REQUEST/RESPONSE TEST .*\n(.*\n)*"
                           "1 +1 +1.00 +[0-9]+\\.[0-9][0-9] *\n"));
}

TEST(NetperfWorkloadTest, BadInputIsRefusedWithTheParameterNamed) {
  const Workload& w = Netperf();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"message_size", "0"},   {"message_size", "-1"}, {"seconds", "0"},
      {"test", "sctp_stream"}, {"server", "10.1.2.3"},
  };
  for (const auto& [name, value] : bad) {
    absl::StatusOr<Params> p = ResolveParams(w, {{name, value}});
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << name << "=" << value;
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(name + ":"));
  }
}

}  // namespace
}  // namespace tlbfleet::workloads::netperf
