// The netperf workload: its parameters, its measurements, its classic output, and a
// server it dials by address and port.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/workloads/netperf_server.h"
#include "agent/workloads/workload.h"
#include "agent/workloads/workload_util.h"
#include "common/address.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::workloads::netperf {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

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
      {"message_size", "0"},  {"message_size", "-1"}, {"seconds", "0"},   {"test", "sctp_stream"},
      {"server", "10.1.2.3"}, {"server", "foo"},      {"server", "Peer"}, {"server", "[::1]"},
      {"port", "65536"},      {"port", "-1"},
  };
  for (const auto& [name, value] : bad) {
    absl::StatusOr<Params> p = ResolveParams(w, {{name, value}});
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << name << "=" << value;
    EXPECT_THAT(std::string(p.status().message()), StartsWith(name + ":")) << name << "=" << value;
  }
}

TEST(NetperfWorkloadTest, ServerIsLoopbackPeerOrAnAddressInCanonicalSpelling) {
  const Workload& w = Netperf();
  struct Case {
    std::map<std::string, std::string> given;
    std::string server;
  };
  const std::vector<Case> good = {
      {{}, ""},
      {{{"server", "peer"}}, "peer"},
      {{{"server", "127.0.0.2"}}, "127.0.0.2"},  // loopback: the workload's own server there
      {{{"server", "0:0::1"}}, "::1"},
      {{{"server", "10.1.2.3"}, {"port", "12865"}}, "10.1.2.3"},
      {{{"server", "fd00:0::7"}, {"port", "1"}}, "fd00::7"},
  };
  for (const Case& c : good) {
    absl::StatusOr<Params> p = ResolveParams(w, c.given);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->Str("server"), c.server);
  }
  EXPECT_EQ(ResolveParams(w, {}).value().Int("port"), 0);
}

TEST(NetperfWorkloadTest, PortAndServerMustCombine) {
  const Workload& w = Netperf();
  // A remote server needs the control port of a netserver there.
  absl::Status s = ResolveParams(w, {{"server", "192.0.2.1"}}).status();
  EXPECT_THAT(std::string(s.message()), StartsWith("server: 192.0.2.1 is not a loopback"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("port"));
  // The controller chooses the peer's port.
  s = ResolveParams(w, {{"server", "peer"}, {"port", "12865"}}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("port: the controller sets it"));
}

TEST(NetperfWorkloadTest, UnresolvedPeerFailsTheJobNamingServer) {
  const Workload& w = Netperf();
  Params params = ResolveParams(w, {{"server", "peer"}, {"seconds", "1"}}).value();
  absl::StatusOr<std::vector<Measurement>> result = w.Run(params);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(result.status().message()), StartsWith("server: \"peer\""));
}

TEST(NetperfWorkloadTest, WithAPortTheWorkloadDialsARunningServer) {
  std::vector<ServedTest> served;
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start("127.0.0.1", 0, [&](const ServedTest& t) { served.push_back(t); });
  ASSERT_TRUE(server.ok()) << server.status();
  const Workload& w = Netperf();
  Params params = ResolveParams(w, {{"test", "tcp_rr"},
                                    {"message_size", "1"},
                                    {"seconds", "1"},
                                    {"server", "127.0.0.1"},
                                    {"port", std::to_string((*server)->port())}})
                      .value();
  absl::StatusOr<std::vector<Measurement>> result = w.Run(params);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(FindValue(*result, "trans_per_sec"), 0);
  server->reset();  // joins the server thread: `served` is complete and no longer shared
  ASSERT_EQ(served.size(), 1u);
  EXPECT_EQ(served[0].test, "tcp_rr");
  EXPECT_EQ(served[0].message_size, 1u);
  EXPECT_TRUE(served[0].completed);
  EXPECT_GT(served[0].bytes, 0u);
  EXPECT_THAT(served[0].client, StartsWith("127.0.0.1:"));
  EXPECT_THAT(w.ClassicOutput(params, *result),
              HasSubstr(absl::StrCat("to 127.0.0.1 () port ", params.Int("port"), " AF_INET")));
}

TEST(NetperfAddressTest, CanonicalLoopbackAndWildcard) {
  EXPECT_EQ(CanonicalAddress("127.000.0.1").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CanonicalAddress("0:0:0:0:0:0:0:1").value(), "::1");
  EXPECT_EQ(CanonicalAddress("10.0.0.1").value(), "10.0.0.1");
  EXPECT_THAT(std::string(CanonicalAddress("localhost").status().message()),
              HasSubstr("not an IPv4 or IPv6 address"));
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackAddress("127.255.0.9"));
  EXPECT_TRUE(IsLoopbackAddress("::1"));
  EXPECT_FALSE(IsLoopbackAddress("128.0.0.1"));
  EXPECT_FALSE(IsLoopbackAddress("::"));
  EXPECT_FALSE(IsLoopbackAddress("peer"));
  EXPECT_TRUE(IsWildcardAddress("0.0.0.0"));
  EXPECT_TRUE(IsWildcardAddress("::"));
  EXPECT_FALSE(IsWildcardAddress("127.0.0.1"));
}

TEST(NetperfAddressTest, EndpointsRoundTrip) {
  absl::StatusOr<Endpoint> e = ParseEndpoint("127.0.0.2:12865");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->address, "127.0.0.2");
  EXPECT_EQ(e->port, 12865);
  EXPECT_EQ(FormatEndpoint(*e), "127.0.0.2:12865");
  e = ParseEndpoint("[0::1]:0");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->address, "::1");
  EXPECT_EQ(e->port, 0);
  EXPECT_EQ(FormatEndpoint(*e), "[::1]:0");
  for (const char* bad : {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
                          "127.0.0.1:1x", "host:80", "::1:80", "[127.0.0.1:80", ":80"}) {
    EXPECT_EQ(ParseEndpoint(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace tlbfleet::workloads::netperf
