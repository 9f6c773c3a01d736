// A host asked to reboot never comes back. The agent's "reboot command" kills the agent
// instead (nothing reboots: it runs in a PID namespace of its own, under a shell that is its
// namespace's init), and the controller is killed and restarted meanwhile: the stored reboot
// request still fails the run after --reboot-return-seconds (the host is lost, and the run's
// on_host_lost says fail), keeping the samples taken.

#include <gtest/gtest.h>

#include <chrono>

#include "tests/faults/fault_harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kTwoBoots[] = R"(
name: never-back
benchmark: pipetest
params: {loops: 2000}
boots: 2
arms: [{name: a}]
on_host_lost: {action: fail}
)";

TEST(RebootFaultTest, AHostThatNeverComesBackFailsItsRunAfterTheTimeoutEvenAcrossARestart) {
  TempDir dir;
  FaultController controller(dir.path(), {"--reboot-return-seconds", "8"});
  ASSERT_TRUE(controller.Start()) << controller.Log();
  // sh is the namespace's init and the agent its child, so the agent can be killed from
  // inside; the "reboot" kills the agent (sh's $PPID is the agent) and ends the namespace.
  FaultAgent agent(dir.path(), "a", {"--reboot-command", "kill -9 $PPID"},
                   {"/usr/bin/unshare", "--pid", "--fork", "--kill-child", "--mount-proc",
                    "/bin/sh", "-c", "\"$0\" \"$@\"; exit 0"});
  agent.Start(controller.address());
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 1; }, 30s)) << agent.Log();
  std::string run_id;
  ASSERT_TRUE(controller.Submit(kTwoBoots, &run_id).ok());
  // Boot 0 done, reboot asked for, the host gone.
  ASSERT_TRUE(WaitFor(
      [&] { return controller.Log().find("asking for a reboot") != std::string::npos; }, 60s))
      << controller.Log() << agent.Log();
  ASSERT_TRUE(WaitFor([&] { return !agent.Running(); }, 30s)) << agent.Log();
  const int64_t samples = controller.Q("SELECT COUNT(*) FROM samples WHERE run_id = " + run_id);
  EXPECT_GT(samples, 0);
  // The controller restarts meanwhile: it must not forget the host it is waiting for.
  controller.Kill9();
  ASSERT_TRUE(controller.Start()) << controller.Log();

  v1::Run run = controller.WaitForRunEnd(run_id, 60s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_FAILED) << controller.Log();
  EXPECT_NE(run.error().find("did not come back within 8 s of the reboot request"),
            std::string::npos)
      << run.error();
  EXPECT_EQ(static_cast<int64_t>(run.samples()), samples);  // kept
  EXPECT_EQ(controller.Q("SELECT COUNT(*) FROM reboot_requests"), 0);
}

}  // namespace
}  // namespace tlbfleet::testing
