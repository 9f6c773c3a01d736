// A lost host never splices another machine into a run (issue 26), with real processes: the
// slot's agent hangs (SIGSTOP) mid-run while a second eligible agent stands by, in both orders
// of keepalive and lease expiry, under each on_host_lost action; and an agent killed (kill -9)
// and replaced by a new agent id on the same host. In no case does a succeeded run have one
// slot's counted samples from two agents.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <string_view>
#include <thread>

#include "tests/faults/fault_harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

// 8 jobs of about 1.5 s on one slot.
std::string Spec(const std::string& policy) {
  return R"(
name: lost-host
benchmark: ebizzy
params: {seconds: 1, threads: 1, chunks: 2, chunk_size: 65536}
iterations: 4
arms:
  - {name: a, params: {mmap: always}}
  - {name: b, params: {mmap: never}}
on_host_lost: )" +
         policy + "\n";
}

enum class Order {
  kLeaseFirst,      // the lease expires while the hung agent's stream is still open
  kKeepaliveFirst,  // the stream drops (keepalive, ~20 s) before the lease expires
};

class LostHostFaultTest : public ::testing::TestWithParam<std::tuple<std::string, Order>> {
 protected:
  std::string Logs(FaultController& c, const std::vector<FaultAgent*>& agents) {
    std::string all = "--- controller\n" + c.Log();
    for (FaultAgent* a : agents) all += "--- agent\n" + a->Log();
    return all;
  }
  // Agents whose counted samples each slot holds: 1 for every slot of a good run.
  static int64_t MostAgentsInASlot(FaultController& c, const std::string& run_id) {
    return c.Q(
        "SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(DISTINCT src.agent_id) AS n FROM"
        " sample_sources src JOIN jobs j ON j.id = src.job_id WHERE src.run_id = " +
        run_id + " AND j.abandoned = '' GROUP BY j.slot)");
  }
  static int64_t CountedSamplesOf(FaultController& c, const std::string& run_id,
                                  const std::string& agent_id) {
    return c.Q("SELECT COUNT(*) FROM samples s JOIN jobs j ON j.id = s.job_id WHERE s.run_id = " +
               run_id + " AND j.abandoned = '' AND s.agent_id = '" + agent_id + "'");
  }
  static int64_t JobsLeasedTo(FaultController& c, const std::string& agent_id) {
    return c.Q("SELECT COUNT(*) FROM jobs WHERE agent_id = '" + agent_id + "'");
  }
  TempDir dir_;
};

TEST_P(LostHostFaultTest, AHungSlotHostIsNeverReplacedMidSlot) {
  const auto& [action, order] = GetParam();
  const bool lease_first = order == Order::kLeaseFirst;
  // Lease 3 s: it expires long before keepalive drops the stream (10 + 10 s). Lease 25 s: the
  // stream drops first. The bound comes after both.
  const std::string lease = lease_first ? "3" : "25";
  const std::string after = lease_first ? "30s" : "40s";
  FaultController controller(dir_.path(), {"--lease-seconds", lease, "--heartbeat-seconds", "1"});
  ASSERT_TRUE(controller.Start()) << controller.Log();
  FaultAgent hung(dir_.path(), "hung", controller.AgentArgs());
  FaultAgent standby(dir_.path(), "standby", controller.AgentArgs());
  hung.Start(controller.address());
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 1; }, 30s)) << hung.Log();
  std::string run_id;
  ASSERT_TRUE(
      controller.Submit(Spec("{action: " + action + ", after: " + after + "}"), &run_id).ok());
  // Two jobs done and a third running: then it hangs, with a second agent standing by (same
  // hostname, same machine, another agent id).
  ASSERT_TRUE(WaitFor(
      [&] {
        return controller.Q("SELECT COUNT(*) FROM jobs WHERE state = 'succeeded' AND run_id = " +
                            run_id) >= 2 &&
               controller.Q("SELECT COUNT(*) FROM jobs WHERE state = 'leased'") == 1;
      },
      60s))
      << Logs(controller, {&hung});
  standby.Start(controller.address());
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 2; }, 30s)) << standby.Log();
  const std::string hung_id = hung.agent_id();
  const std::string standby_id = standby.agent_id();
  ASSERT_FALSE(hung_id.empty());
  hung.process().Signal(SIGSTOP);

  // Both things happen, in the order this case is about: the line numbers of the controller's
  // log lines for the lease's expiry and the stream's end.
  auto line_of = [&](const std::string& a, const std::string& b) -> int {
    const std::string log = controller.Log();
    int line = 0;
    for (size_t at = 0; at < log.size(); ++line) {
      size_t end = log.find('\n', at);
      if (end == std::string::npos) end = log.size();
      const std::string_view text(log.data() + at, end - at);
      if (text.find(a) != std::string_view::npos && text.find(b) != std::string_view::npos) {
        return line;
      }
      at = end + 1;
    }
    return -1;
  };
  const std::string who = "agent=" + hung_id;
  ASSERT_TRUE(WaitFor(
      [&] {
        return line_of(who + ":", "lease expired") >= 0 &&
               line_of(who + " host=", " disconnected") >= 0;
      },
      60s))
      << Logs(controller, {&hung, &standby});
  EXPECT_EQ(line_of(who + ":", "lease expired") < line_of(who + " host=", " disconnected"),
            lease_first)
      << controller.Log();

  // The run waits, says for whom, and gives the standby agent nothing.
  v1::Run waiting = controller.GetRun(run_id);
  ASSERT_EQ(waiting.waiting_for_size(), 1) << Logs(controller, {&hung, &standby});
  EXPECT_EQ(waiting.waiting_for(0).agent_id(), hung_id);
  EXPECT_NE(waiting.waiting_for(0).message().find("silent since"), std::string::npos);
  EXPECT_EQ(JobsLeasedTo(controller, standby_id), 0);

  if (action == "wait") {
    // Well past any bound: still waiting for the hung host, which then carries on.
    std::this_thread::sleep_for(15s);  // a length of silence, not a condition to wait for
    EXPECT_EQ(controller.GetRun(run_id).state(), v1::RUN_STATE_RUNNING);
    EXPECT_EQ(JobsLeasedTo(controller, standby_id), 0);
    hung.process().Signal(SIGCONT);
    v1::Run run = controller.WaitForRunEnd(run_id, 120s);
    ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED)
        << run.error() << Logs(controller, {&hung, &standby});
    EXPECT_EQ(CountedSamplesOf(controller, run_id, standby_id), 0);
    EXPECT_GT(CountedSamplesOf(controller, run_id, hung_id), 0);
  } else if (action == "fail") {
    v1::Run run = controller.WaitForRunEnd(run_id, 120s);
    ASSERT_EQ(run.state(), v1::RUN_STATE_FAILED) << Logs(controller, {&hung, &standby});
    EXPECT_NE(run.error().find("(agent " + hung_id.substr(0, 8)), std::string::npos) << run.error();
    EXPECT_NE(run.error().find("was lost: silent since"), std::string::npos) << run.error();
    EXPECT_NE(run.error().find("slot 0 had measured"), std::string::npos) << run.error();
    EXPECT_EQ(JobsLeasedTo(controller, standby_id), 0);
    hung.process().Signal(SIGCONT);
  } else {
    v1::Run run = controller.WaitForRunEnd(run_id, 180s);
    ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED)
        << run.error() << Logs(controller, {&hung, &standby});
    // The slot was measured again, whole, by the standby agent; the hung one's is kept apart.
    EXPECT_EQ(CountedSamplesOf(controller, run_id, hung_id), 0);
    EXPECT_EQ(CountedSamplesOf(controller, run_id, standby_id), 16);  // 8 jobs x 2 samples
    ASSERT_EQ(run.abandoned_size(), 1);
    EXPECT_EQ(run.abandoned(0).agent_id(), hung_id);
    EXPECT_GE(run.abandoned(0).jobs(), 2u);
    EXPECT_NE(run.stop_reason().find("not as planned"), std::string::npos) << run.stop_reason();
    std::string text;
    ASSERT_EQ(
        RunTool({BinPath("tlbfleet"), "--controller", controller.address(), "compare", run_id},
                &text),
        0)
        << text;
    EXPECT_NE(text.find("left out: "), std::string::npos) << text;
    EXPECT_NE(text.find("(agent " + standby_id.substr(0, 8)), std::string::npos) << text;
    hung.process().Signal(SIGCONT);
  }
  EXPECT_EQ(MostAgentsInASlot(controller, run_id), 1);
}

INSTANTIATE_TEST_SUITE_P(
    EachActionBothOrders, LostHostFaultTest,
    ::testing::Combine(::testing::Values("wait", "fail", "restart"),
                       ::testing::Values(Order::kLeaseFirst, Order::kKeepaliveFirst)),
    [](const ::testing::TestParamInfo<LostHostFaultTest::ParamType>& info) {
      return std::get<0>(info.param) +
             (std::get<1>(info.param) == Order::kLeaseFirst ? "_LeaseFirst" : "_KeepaliveFirst");
    });

TEST(LostHostKillTest, AKilledAgentsSlotIsNotInheritedByANewAgentOfTheSameHostname) {
  TempDir dir;
  FaultController controller(dir.path(), {"--lease-seconds", "3", "--heartbeat-seconds", "1"});
  ASSERT_TRUE(controller.Start()) << controller.Log();
  FaultAgent dead(dir.path(), "dead", controller.AgentArgs());
  dead.Start(controller.address());
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 1; }, 30s)) << dead.Log();
  std::string run_id;
  ASSERT_TRUE(controller.Submit(Spec("{action: restart, after: 15s}"), &run_id).ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        return controller.Q("SELECT COUNT(*) FROM jobs WHERE state = 'succeeded' AND run_id = " +
                            run_id) >= 2;
      },
      60s))
      << dead.Log();
  const std::string dead_id = dead.agent_id();
  dead.Kill9();
  // A reinstalled agent: a new state directory (new agent id), the same host name.
  FaultAgent fresh(dir.path(), "fresh", controller.AgentArgs());
  fresh.Start(controller.address());
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 1; }, 30s)) << fresh.Log();
  const std::string fresh_id = fresh.agent_id();
  ASSERT_NE(fresh_id, dead_id);
  // Before the bound it gets nothing of the dead agent's slot; after it, the whole slot.
  std::this_thread::sleep_for(5s);  // a length of time during which nothing may happen
  EXPECT_EQ(controller.Q("SELECT COUNT(*) FROM jobs WHERE agent_id = '" + fresh_id + "'"), 0);
  v1::Run run = controller.WaitForRunEnd(run_id, 120s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << controller.Log();
  EXPECT_EQ(controller.Q("SELECT COUNT(*) FROM samples s JOIN jobs j ON j.id = s.job_id WHERE"
                         " j.abandoned = '' AND s.agent_id = '" +
                         fresh_id + "'"),
            16);
  EXPECT_EQ(controller.Q("SELECT COUNT(*) FROM samples s JOIN jobs j ON j.id = s.job_id WHERE"
                         " j.abandoned = '' AND s.agent_id = '" +
                         dead_id + "'"),
            0);
  ASSERT_EQ(run.abandoned_size(), 1);
  EXPECT_EQ(run.abandoned(0).agent_id(), dead_id);
}

}  // namespace
}  // namespace tlbfleet::testing
