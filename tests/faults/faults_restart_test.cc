// kill -9 of the controller and of agents, restarts on the same database and state dirs,
// one agent per state directory, and configuration refused at start.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>

#include "tests/faults/fault_harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

// One sample of records_per_sec plus one per thread: two per job at threads 1.
constexpr char kTwoSlots[] = R"(
name: restart
benchmark: ebizzy
params: {seconds: 3, threads: 1, chunks: 2, chunk_size: 65536}
iterations: 2
arms:
  - {name: a, params: {mmap: always}}
  - {name: b, params: {mmap: never}}
hosts: {count: 2}
)";

constexpr char kOneSlot[] = R"(
name: one-slot
benchmark: ebizzy
params: {seconds: 2, threads: 1, chunks: 2, chunk_size: 65536}
iterations: 2
arms:
  - {name: a, params: {mmap: always}}
  - {name: b, params: {mmap: never}}
hosts: {count: 1}
)";

class RestartFaultTest : public ::testing::Test {
 protected:
  std::string Logs(const FaultController& c, const std::vector<FaultAgent*>& agents) {
    std::string all = "--- controller\n" + c.Log();
    for (FaultAgent* a : agents) all += "--- agent\n" + a->Log();
    return all;
  }
  TempDir dir_;
};

TEST_F(RestartFaultTest, ControllerKilledAndDownLongerThanTheLeaseLosesNothingAndRunsNothingTwice) {
  FaultController controller(dir_.path(), {"--lease-seconds", "3", "--heartbeat-seconds", "1",
                                           "--reconnect-grace-seconds", "20"});
  ASSERT_TRUE(controller.Start()) << controller.Log();
  FaultAgent a(dir_.path(), "a", {}), b(dir_.path(), "b", {});
  a.Start(controller.address());
  b.Start(controller.address());
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 2; }, 30s));
  TwoLeaseWatcher watcher(controller.db_path());
  std::string run_id;
  ASSERT_TRUE(controller.Submit(kTwoSlots, &run_id).ok());
  // Both agents mid-job: kill -9 the controller.
  ASSERT_TRUE(WaitFor(
      [&] {
        return controller.Q(
                   "SELECT COUNT(*) FROM jobs WHERE state = "
                   "'leased'") == 2;
      },
      30s))
      << Logs(controller, {&a, &b});
  controller.Kill9();
  const auto killed = std::chrono::steady_clock::now();
  // Down until both agents have finished (and spooled) their jobs, and longer than a lease.
  ASSERT_TRUE(WaitFor([&] { return a.SpooledLeases() >= 1 && b.SpooledLeases() >= 1; }, 30s))
      << Logs(controller, {&a, &b});
  ASSERT_TRUE(WaitFor([&] { return std::chrono::steady_clock::now() - killed > 5s; }, 10s));
  ASSERT_TRUE(controller.Start()) << controller.Log();

  v1::Run run = controller.WaitForRunEnd(run_id, 120s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << Logs(controller, {&a, &b});
  const std::string r = " WHERE run_id = " + run_id;
  EXPECT_EQ(run.jobs().succeeded(), 8u);
  EXPECT_EQ(controller.Q("SELECT COUNT(*) FROM samples" + r), 16);  // exact: 8 jobs x 2
  EXPECT_EQ(run.samples(), 16u);
  // No job ran twice: every job was leased exactly once; no finished result was thrown away.
  EXPECT_EQ(controller.Q("SELECT MAX(attempts) FROM jobs" + r), 1) << Logs(controller, {&a, &b});
  EXPECT_EQ(controller.Q("SELECT COUNT(*) FROM (SELECT 1 FROM samples" + r +
                         " GROUP BY arm, iteration, job_id, metric, series HAVING COUNT(*) > 1)"),
            0);
  EXPECT_FALSE(watcher.seen()) << watcher.what();
  EXPECT_NE(controller.Log().find("extended by 20 s for their agents to reconnect"),
            std::string::npos);
  EXPECT_TRUE(WaitFor([&] { return a.SpooledLeases() == 0 && b.SpooledLeases() == 0; }, 10s));
}

TEST_F(RestartFaultTest, AgentKilledMidJobAndRestartedGetsItsJobBackAndKeepsItsSlot) {
  // A long lease: what takes the job back is the agent's return, not an expiry.
  FaultController controller(dir_.path(), {"--lease-seconds", "60"});
  ASSERT_TRUE(controller.Start()) << controller.Log();
  FaultAgent a(dir_.path(), "a", {}), b(dir_.path(), "b", {});
  a.Start(controller.address());
  b.Start(controller.address());
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 2; }, 30s));
  TwoLeaseWatcher watcher(controller.db_path());
  std::string run_id;
  ASSERT_TRUE(controller.Submit(kOneSlot, &run_id).ok());
  std::string holder;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (FaultAgent* agent : {&a, &b}) {
          if (controller.Q("SELECT COUNT(*) FROM jobs WHERE state = 'leased' AND agent_id = '" +
                           agent->agent_id() + "'") == 1) {
            holder = agent->agent_id();
          }
        }
        return !holder.empty();
      },
      30s));
  FaultAgent& victim = a.agent_id() == holder ? a : b;
  victim.Kill9();
  victim.Start(controller.address());  // same state dir, same agent id

  v1::Run run = controller.WaitForRunEnd(run_id, 90s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << Logs(controller, {&a, &b});
  const std::string r = " WHERE run_id = " + run_id;
  EXPECT_EQ(controller.Q("SELECT COUNT(*) FROM samples" + r), 8);
  // One agent per slot: the other agent never took over, the restarted one kept its slot.
  EXPECT_EQ(controller.Q("SELECT COUNT(DISTINCT agent_id) FROM samples" + r), 1);
  EXPECT_EQ(controller.Q("SELECT COUNT(*) FROM samples" + r + " AND agent_id = '" + holder + "'"),
            8);
  // The killed job ran again (once), nothing else did.
  EXPECT_EQ(controller.Q("SELECT COUNT(*) FROM jobs" + r + " AND attempts = 2"), 1);
  EXPECT_EQ(controller.Q("SELECT MAX(attempts) FROM jobs" + r), 2);
  EXPECT_FALSE(watcher.seen()) << watcher.what();
  EXPECT_NE(controller.Log().find("the agent came back without it; re-queued"), std::string::npos)
      << controller.Log();
}

TEST_F(RestartFaultTest, ASecondAgentOnTheSameStateDirRefusesToStart) {
  FaultController controller(dir_.path(), {});
  ASSERT_TRUE(controller.Start()) << controller.Log();
  FaultAgent first(dir_.path(), "shared", {});
  first.Start(controller.address());
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 1; }, 30s));
  FaultAgent second(dir_.path(), "shared", {});
  second.Start(controller.address());
  const int status = second.process().Wait(30s);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(second.Log().find("--state-dir " + first.state_dir() +
                              " is in use by another tlbfleet-agent (pid "),
            std::string::npos)
      << second.Log();
  EXPECT_TRUE(first.Running());
  EXPECT_EQ(controller.ConnectedHosts(), 1);
}

// Exit code and output of `script` run by /bin/sh in a private mount namespace.
int InMountNamespace(const std::string& script, std::string* output) {
  return RunTool({"/usr/bin/unshare", "--mount", "/bin/sh", "-c", script}, output);
}

TEST_F(RestartFaultTest, ConfigurationThatCannotWorkIsRefusedAtStartNamingTheFlag) {
  const std::string controller = BinPath("tlbfleet-controller");
  const std::string agent = BinPath("tlbfleet-agent");
  std::string out;
  // A lease shorter than two heartbeats.
  EXPECT_EQ(
      RunTool({controller, "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--db",
               dir_.path() + "/x.db", "--lease-seconds", "2", "--heartbeat-seconds", "5"},
              &out),
      2);
  EXPECT_NE(out.find("--heartbeat-seconds 5: must be at most half of --lease-seconds 2"),
            std::string::npos)
      << out;
  // A store transaction budget out of range: refused before the database is made.
  EXPECT_EQ(RunTool({controller, "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0",
                     "--db", dir_.path() + "/y.db", "--store-batch-ms", "-5"},
                    &out),
            2);
  EXPECT_NE(out.find("--store-batch-ms: Value -5 not in range 0 to 60000"), std::string::npos)
      << out;
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/y.db"));
  // A database on a read-only file system: new, and existing.
  const std::string ro = dir_.path() + "/ro";
  std::filesystem::create_directories(ro);
  const std::string start = controller + " --grpc-listen 127.0.0.1:0 --http-listen 127.0.0.1:0";
  EXPECT_EQ(InMountNamespace("mount -t tmpfs -o ro,size=1m tmpfs " + ro + " && " + start +
                                 " --db " + ro + "/new.db",
                             &out),
            2);
  EXPECT_NE(out.find("--db " + ro + "/new.db: cannot create or open"), std::string::npos) << out;
  EXPECT_EQ(InMountNamespace("mount -t tmpfs -o size=1m tmpfs " + ro + " && /usr/bin/sqlite3 " +
                                 ro + "/old.db 'CREATE TABLE t(x)' && mount -o remount,ro " + ro +
                                 " && " + start + " --db " + ro + "/old.db",
                             &out),
            2);
  EXPECT_NE(out.find("--db " + ro + "/old.db: " + ro + "/old.db is read-only"), std::string::npos)
      << out;
  // An agent whose state dir cannot be written.
  EXPECT_EQ(InMountNamespace("mount -t tmpfs -o ro,size=1m tmpfs " + ro + " && " + agent +
                                 " --controller 127.0.0.1:1 --state-dir " + ro + "/state",
                             &out),
            2);
  EXPECT_NE(out.find("--state-dir " + ro + "/state: cannot create it"), std::string::npos) << out;
}

}  // namespace
}  // namespace tlbfleet::testing
