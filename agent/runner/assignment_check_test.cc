#include "agent/runner/assignment_check.h"

#include "agent/workloads/workload.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

TEST(NetworkTest, ParsesNetworksAndAddressesAndMatchesByPrefix) {
  absl::StatusOr<Network> lab = Network::Parse("10.20.0.0/16");
  ASSERT_TRUE(lab.ok()) << lab.status();
  EXPECT_TRUE(lab->Contains("10.20.3.4"));
  EXPECT_FALSE(lab->Contains("10.21.0.1"));
  EXPECT_FALSE(lab->Contains("::1"));
  EXPECT_FALSE(lab->Contains("not-an-address"));
  EXPECT_EQ(lab->ToString(), "10.20.0.0/16");
  absl::StatusOr<Network> one = Network::Parse("192.0.2.7");
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->Contains("192.0.2.7"));
  EXPECT_FALSE(one->Contains("192.0.2.8"));
  absl::StatusOr<Network> v6 = Network::Parse("fd00::/8");
  ASSERT_TRUE(v6.ok());
  EXPECT_TRUE(v6->Contains("fd12::1"));
  EXPECT_FALSE(v6->Contains("fe80::1"));
  EXPECT_FALSE(Network::Parse("10.0.0.0/33").ok());
  EXPECT_FALSE(Network::Parse("10.0.0.0/-1").ok());
  EXPECT_FALSE(Network::Parse("lab-net").ok());
}

TEST(NetworkTest, TheDefaultPeerNetworksIncludeLoopback) {
  std::vector<Network> networks = DefaultPeerNetworks();
  EXPECT_TRUE(std::any_of(networks.begin(), networks.end(),
                          [](const Network& n) { return n.Contains("127.0.0.2"); }));
}

TEST(CheckAssignmentTest, APeerInsideTheAllowedNetworksIsAccepted) {
  workloads::LinkAllWorkloads();
  v1::JobAssignment a;
  a.set_lease_id("j1a1");
  a.set_job_id(1);
  a.set_run_id("3");
  a.set_benchmark("netperf");
  a.set_arm("a");
  a.set_iteration(1);
  a.set_timeout_seconds(30);
  a.set_peer_host("peer-1");
  (*a.mutable_params())["server"] = "10.20.0.9";
  (*a.mutable_params())["port"] = "12865";
  AssignmentPolicy policy;
  policy.workloads = {"netperf"};
  policy.peer_networks = {*Network::Parse("10.20.0.0/16")};
  EXPECT_TRUE(CheckAssignment(a, policy).ok()) << CheckAssignment(a, policy);
  policy.peer_networks = {*Network::Parse("127.0.0.0/8")};
  absl::Status refused = CheckAssignment(a, policy);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("params.server: 10.20.0.9 is outside"), std::string::npos)
      << refused;
}

TEST(CheckAssignmentTest, ShownEscapesWhatCouldForgeALogLine) {
  EXPECT_EQ(Shown("ok"), "\"ok\"");
  EXPECT_EQ(Shown("a\nb"), "\"a\\x0ab\"");
  EXPECT_EQ(Shown(std::string(100, 'x')), "\"" + std::string(40, 'x') + "...\"");
}

}  // namespace
}  // namespace tlbfleet::agent
