#include "controller/core/peers.h"

#include <string>
#include <vector>

#include "catalogue/catalogue.h"
#include "controller/scheduler/run_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet {
namespace catalogue {

// A workload that only this test knows, whose `target` parameter is resolved to a peer and
// whose port goes to `target_port`: the controller must need no knowledge of netperf.
class PeerProbe : public WorkloadSchema {
 public:
  std::string_view Name() const override { return "peer_probe"; }
  std::string_view Description() const override { return "test only"; }
  const std::vector<ParamSpec>& Schema() const override { return schema_; }
  const std::vector<MetricSpec>& Metrics() const override { return metrics_; }
  std::string_view PrimaryMetric() const override { return "x"; }
  int64_t TimeoutSeconds(const Params&) const override { return 1; }

 private:
  static ParamSpec Target() {
    ParamSpec p = StringParam("target", "", nullptr, "where to go");
    p.resolves_to_peer = PeerResolution{"elsewhere", "target_port"};
    return p;
  }
  const std::vector<ParamSpec> schema_ = {Target(),
                                          IntParam("target_port", "0", 0, 65535, "its port")};
  const std::vector<MetricSpec> metrics_ = {{"x", "x", Better::kHigher, ""}};
};

namespace {
[[maybe_unused]] const bool kProbeAdded = [] {
  AddWorkloadForTest(std::make_unique<PeerProbe>());
  return true;
}();
}  // namespace

}  // namespace catalogue

namespace core {
namespace {

using ::testing::HasSubstr;

v1::RunSpec Spec(const std::string& yaml) {
  absl::StatusOr<v1::RunSpec> spec = scheduler::ParseRunSpec(yaml, "test.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.value_or(v1::RunSpec());
}

PeerCandidate Candidate(std::string id, std::string netserver, bool idle = true,
                        bool serving = false) {
  return {id, "host-" + id, std::move(netserver), idle, serving};
}

TEST(RunNeedsPeerTest, RunParamsArmParamsAndSweepValues) {
  EXPECT_TRUE(RunNeedsPeer(
      Spec("name: p\nbenchmark: netperf\nparams: {server: peer}\narms: [{name: a}]\n")));
  EXPECT_TRUE(RunNeedsPeer(Spec(
      "name: p\nbenchmark: netperf\narms: [{name: lo}, {name: peer, params: {server: peer}}]\n")));
  EXPECT_TRUE(RunNeedsPeer(
      Spec("name: p\nbenchmark: netperf\nsweep: {server: ['', peer]}\narms: [{name: a}]\n")));
  // Every arm overrides the run's peer: no job needs one.
  EXPECT_FALSE(RunNeedsPeer(
      Spec("name: p\nbenchmark: netperf\nparams: {server: peer}\narms: [{name: a, params: {server: "
           "'127.0.0.1'}}]\n")));
  EXPECT_FALSE(RunNeedsPeer(
      Spec("name: p\nbenchmark: netperf\nparams: {test: tcp_rr}\narms: [{name: a}]\n")));
  EXPECT_FALSE(RunNeedsPeer(Spec("name: e\nbenchmark: ebizzy\narms: [{name: a}]\n")));
}

TEST(JobNeedsPeerTest, OnlyThePlaceholderOfTheWorkloadsPeerParameter) {
  v1::JobAssignment a;
  a.set_benchmark("netperf");
  EXPECT_FALSE(JobNeedsPeer(a));
  (*a.mutable_params())["server"] = "127.0.0.1";
  EXPECT_FALSE(JobNeedsPeer(a));
  (*a.mutable_params())["server"] = "peer";
  EXPECT_TRUE(JobNeedsPeer(a));
  a.set_benchmark("ebizzy");  // no peer parameter: `server` means nothing special
  EXPECT_FALSE(JobNeedsPeer(a));
}

TEST(PeerParamTest, ComesFromTheSchemaOfAnyWorkload) {
  v1::JobAssignment a;
  a.set_benchmark("peer_probe");
  (*a.mutable_params())["target"] = "elsewhere";
  EXPECT_TRUE(JobNeedsPeer(a));
  ASSERT_TRUE(ApplyPeer(Candidate("b", "10.0.2.2:4000"), &a).ok());
  EXPECT_EQ(a.params().at("target"), "10.0.2.2");
  EXPECT_EQ(a.params().at("target_port"), "4000");
  EXPECT_EQ(a.params().count("server"), 0u);
}

TEST(PeerParamTest, EveryWorkloadDeclaresAtMostOneWithAnIntegerPortParameter) {
  for (const std::string& name : catalogue::WorkloadNames()) {
    const catalogue::WorkloadSchema* w = catalogue::FindWorkload(name);
    int declared = 0;
    for (const catalogue::ParamSpec& p : w->Schema()) {
      if (!p.resolves_to_peer.has_value()) continue;
      ++declared;
      EXPECT_EQ(p.type, catalogue::ParamType::kString) << name << "." << p.name;
      const catalogue::ParamSpec* port = w->FindParam(p.resolves_to_peer->port_param);
      ASSERT_NE(port, nullptr) << name << "." << p.name;
      EXPECT_EQ(port->type, catalogue::ParamType::kInt) << name << "." << port->name;
    }
    EXPECT_LE(declared, 1) << name;
  }
  EXPECT_TRUE(PeerParamOf("netperf").has_value());
}

TEST(ChoosePeerTest, AnotherIdleAgentWithADialableNetserverThatServesNobody) {
  const std::vector<PeerCandidate> candidates = {
      Candidate("client", "127.0.0.9:1"),                // the job's own host
      Candidate("plain", ""),                            // runs no netserver
      Candidate("busy", "127.0.0.3:1", /*idle=*/false),  // runs a job
      Candidate("serving", "127.0.0.4:1", true, true),   // peer of another job
      Candidate("broken", "somewhere:1"),                // not an address
      Candidate("portless", "127.0.0.5:0"),              // port 0 cannot be dialled
      Candidate("b", "127.0.0.2:12865"),
      Candidate("c", "127.0.0.6:12865"),
  };
  std::optional<PeerCandidate> peer = ChoosePeer(candidates, "client");
  ASSERT_TRUE(peer.has_value());
  EXPECT_EQ(peer->agent_id, "b");  // the first that fits, in the given order
  EXPECT_EQ(ChoosePeer({candidates[0]}, "client"), std::nullopt);
  EXPECT_EQ(ChoosePeer({candidates.begin(), candidates.begin() + 6}, "client"), std::nullopt);
}

TEST(ChoosePeerTest, AnyPeerAdvertisesIgnoresTheClientAndBusyDoesNotMatter) {
  EXPECT_FALSE(
      AnyPeerAdvertises({Candidate("client", "127.0.0.9:1"), Candidate("a", "")}, "client"));
  EXPECT_FALSE(AnyPeerAdvertises({Candidate("a", "bogus")}, "client"));
  EXPECT_TRUE(AnyPeerAdvertises({Candidate("a", "127.0.0.2:1", false, true)}, "client"));
}

TEST(ApplyPeerTest, RewritesServerPortAndPeerHost) {
  v1::JobAssignment a;
  a.set_benchmark("netperf");
  (*a.mutable_params())["server"] = "peer";
  (*a.mutable_params())["test"] = "tcp_rr";
  ASSERT_TRUE(ApplyPeer(Candidate("b", "127.0.0.2:12865"), &a).ok());
  EXPECT_EQ(a.params().at("server"), "127.0.0.2");
  EXPECT_EQ(a.params().at("port"), "12865");
  EXPECT_EQ(a.params().at("test"), "tcp_rr");
  EXPECT_EQ(a.peer_host(), "host-b");

  v1::JobAssignment v6;
  v6.set_benchmark("netperf");
  ASSERT_TRUE(ApplyPeer(Candidate("c", "[::1]:7"), &v6).ok());
  EXPECT_EQ(v6.params().at("server"), "::1");
  EXPECT_EQ(v6.params().at("port"), "7");
}

TEST(ApplyPeerTest, AnUnusableNetserverLeavesTheAssignmentAlone) {
  v1::JobAssignment a;
  a.set_benchmark("netperf");
  (*a.mutable_params())["server"] = "peer";
  absl::Status s = ApplyPeer(Candidate("b", "127.0.0.2:0"), &a);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("host-b"));
  EXPECT_EQ(a.params().at("server"), "peer");
  EXPECT_EQ(a.peer_host(), "");
}

TEST(PeerReservationsTest, ReserveServeRelease) {
  PeerReservations r;
  EXPECT_FALSE(r.Serving("b"));
  r.Reserve("j1a1", "b");
  r.Reserve("j2a1", "c");
  EXPECT_TRUE(r.Serving("b"));
  EXPECT_TRUE(r.Serving("c"));
  EXPECT_EQ(r.Release("j1a1"), "b");
  EXPECT_FALSE(r.Serving("b"));
  EXPECT_EQ(r.Release("j1a1"), std::nullopt);  // released once only
  EXPECT_EQ(r.Release("nope"), std::nullopt);
  EXPECT_EQ(r.size(), 1u);
  r.Reserve("j3a1", "c");  // one peer may be reserved twice; it serves until both end
  EXPECT_EQ(r.Release("j2a1"), "c");
  EXPECT_TRUE(r.Serving("c"));
  EXPECT_EQ(r.Release("j3a1"), "c");
  EXPECT_FALSE(r.Serving("c"));
}

}  // namespace
}  // namespace core
}  // namespace tlbfleet
