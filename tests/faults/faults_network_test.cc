// Network faults between a controller and an agent in its own network namespace, joined by
// a veth pair the test creates (addresses in 10.213.0.0/16, on that pair only): the link
// down mid-run for 60 s (three times the keepalive detection, so both ends see the stream die
// and the agent retries into a dead link for a while), and a one-way blackhole. Keepalives
// notice a dead stream within kHalfOpenDetectionMs (common/grpc_keepalive.h, 20 s); the waits
// below allow 10 s more.

#include <gtest/gtest.h>

#include <chrono>

#include "common/grpc_keepalive.h"
#include "tests/faults/fault_harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

constexpr auto kDetection = std::chrono::milliseconds(kHalfOpenDetectionMs) + 10s;
constexpr auto kPartition = 60s;

constexpr char kRun[] = R"(
name: partition
benchmark: ebizzy
params: {seconds: 3, threads: 1, chunks: 2, chunk_size: 65536}
iterations: 3
arms:
  - {name: a, params: {mmap: always}}
  - {name: b, params: {mmap: never}}
hosts: {count: 1}
)";

TEST(NetworkFaultTest, LinkDownMidRunThenUpTheSpooledResultArrivesAndNothingRunsTwice) {
  NetNs ns;
  ASSERT_TRUE(ns.ok()) << "cannot create a network namespace (root needed)";
  TempDir dir;
  // Leases outlast the partition (documented: a partition shorter than the lease costs
  // nothing; a longer one re-runs the job elsewhere).
  FaultController controller(dir.path(), {"--lease-seconds", "120", "--heartbeat-seconds", "5"},
                             ns.host_ip() + ":0");
  ASSERT_TRUE(controller.Start()) << controller.Log();
  FaultAgent agent(dir.path(), "a", controller.AgentArgs(), ns.ExecPrefix());
  agent.Start(controller.address());
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 1; }, 30s)) << agent.Log();
  std::string run_id;
  ASSERT_TRUE(controller.Submit(kRun, &run_id).ok());
  ASSERT_TRUE(WaitFor(
      [&] { return controller.Q("SELECT COUNT(*) FROM jobs WHERE state = 'leased'") == 1; }, 30s));

  ASSERT_TRUE(ns.SetLink(false));
  const auto down = std::chrono::steady_clock::now();
  // Keepalive: the controller notices the dead stream within the documented time.
  EXPECT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 0; }, kDetection))
      << controller.Log();
  // Meanwhile the agent finishes its job and keeps the result.
  EXPECT_TRUE(WaitFor([&] { return agent.SpooledLeases() == 1; }, 30s)) << agent.Log();
  ASSERT_TRUE(WaitFor([&] { return std::chrono::steady_clock::now() - down >= kPartition; },
                      kPartition + 10s));
  ASSERT_TRUE(ns.SetLink(true));

  v1::Run run = controller.WaitForRunEnd(run_id, 120s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << "\n--- controller\n"
                                                  << controller.Log() << "\n--- agent\n"
                                                  << agent.Log();
  const std::string r = " WHERE run_id = " + run_id;
  EXPECT_EQ(controller.Q("SELECT COUNT(*) FROM samples" + r), 12);
  EXPECT_EQ(controller.Q("SELECT MAX(attempts) FROM jobs" + r), 1);  // the spooled result counted
  EXPECT_TRUE(WaitFor([&] { return agent.SpooledLeases() == 0; }, 10s));
}

TEST(NetworkFaultTest, AOneWayBlackholeIsNoticedByKeepalivesAndTheAgentComesBack) {
  NetNs ns;
  ASSERT_TRUE(ns.ok()) << "cannot create a network namespace (root needed)";
  TempDir dir;
  FaultController controller(dir.path(), {}, ns.host_ip() + ":0");
  ASSERT_TRUE(controller.Start()) << controller.Log();
  FaultAgent agent(dir.path(), "a", controller.AgentArgs(), ns.ExecPrefix());
  agent.Start(controller.address());
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 1; }, 30s)) << agent.Log();

  // Agent -> controller is dropped; controller -> agent still flows.
  ASSERT_TRUE(ns.Blackhole(ns.host_ip(), true));
  EXPECT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 0; }, kDetection))
      << controller.Log();
  // The agent notices too (its own pings go unanswered) and tries again.
  EXPECT_TRUE(
      WaitFor([&] { return agent.Log().find("lost the stream") != std::string::npos; }, kDetection))
      << agent.Log();
  ASSERT_TRUE(ns.Blackhole(ns.host_ip(), false));
  EXPECT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 1; }, 30s)) << agent.Log();
}

}  // namespace
}  // namespace tlbfleet::testing
