// End to end: a real controller and two real agent processes on loopback, with separate
// state dirs, running real ebizzy; results checked straight from the SQLite file.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "tests/integration/harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

class FleetIntegrationTest : public ::testing::Test {
 protected:
  void StartFleet(int agents, std::vector<std::string> controller_args = {}) {
    controller_ = std::make_unique<ControllerProcess>(dir_.path(), controller_args);
    ASSERT_GT(controller_->grpc_port(), 0) << controller_->process().Log();
    for (int i = 0; i < agents; ++i) StartAgent(i);
    ASSERT_TRUE(WaitFor([&] { return controller_->ConnectedHosts() == agents; }, 30s))
        << "agents did not connect\n"
        << controller_->process().Log();
  }

  void StartAgent(int i) {
    std::string state = dir_.path() + "/agent" + std::to_string(i);
    agents_.push_back(std::make_unique<Process>(
        std::vector<std::string>{BinPath("tlbfleet-agent"), "--controller", controller_->address(),
                                 "--state-dir", state, "--label", "index=" + std::to_string(i),
                                 "--max-backoff-seconds", "2"},
        dir_.path() + "/agent" + std::to_string(i) + ".log"));
  }

  grpc::Status SubmitYaml(const std::string& yaml, std::string* run_id) {
    return controller_->Submit(yaml, run_id);
  }

  v1::Run GetRun(const std::string& run_id) { return controller_->GetRun(run_id); }

  bool WaitTerminal(const std::string& run_id, std::chrono::seconds timeout) {
    return WaitFor(
        [&] {
          v1::RunState s = GetRun(run_id).state();
          return s == v1::RUN_STATE_SUCCEEDED || s == v1::RUN_STATE_FAILED ||
                 s == v1::RUN_STATE_CANCELLED;
        },
        timeout);
  }

  std::string Logs() {
    std::string all = "--- controller\n" + controller_->process().Log();
    for (size_t i = 0; i < agents_.size(); ++i) {
      all += "--- agent" + std::to_string(i) + "\n" + agents_[i]->Log();
    }
    return all;
  }

  int64_t Q(const std::string& sql) { return QueryInt(controller_->db_path(), sql); }

  TempDir dir_;
  std::unique_ptr<ControllerProcess> controller_;
  std::vector<std::unique_ptr<Process>> agents_;
};

constexpr char kTwoArmsSpec[] = R"(
name: it-two-arms
benchmark: ebizzy
params: {seconds: 1, chunks: 4, chunk_size: 65536}
sweep: {threads: [1, 2]}
iterations: 3
arms:
  - {name: mmap,   params: {mmap: always}}
  - {name: malloc, params: {mmap: never}}
hosts: {count: 1}
)";

TEST_F(FleetIntegrationTest, TwoArmsTwoThreadCountsThreeIterationsStoreExactlyTheExpectedSamples) {
  StartFleet(2);
  std::string run_id;
  grpc::Status s = SubmitYaml(kTwoArmsSpec, &run_id);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(WaitTerminal(run_id, 180s)) << Logs();
  v1::Run run = GetRun(run_id);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << "\n" << Logs();
  EXPECT_EQ(run.jobs().total(), 12u);
  EXPECT_EQ(run.jobs().succeeded(), 12u);

  const std::string r = " WHERE run_id = " + run_id;
  // One aggregate records_per_sec per (arm, threads, iteration)...
  EXPECT_EQ(Q("SELECT COUNT(*) FROM samples" + r + " AND series = ''"), 12);
  EXPECT_EQ(Q("SELECT COUNT(DISTINCT arm || '/' || param_value || '/' || iteration) FROM samples" +
              r + " AND series = ''"),
            12);
  // ...plus one per thread: threads=1 gives 1, threads=2 gives 2, for 2 arms x 3 iterations.
  EXPECT_EQ(Q("SELECT COUNT(*) FROM samples" + r + " AND series != ''"), 2 * 3 * (1 + 2));
  // No duplicates of any logical sample.
  EXPECT_EQ(Q("SELECT COUNT(*) FROM (SELECT 1 FROM samples" + r +
              " GROUP BY arm, param_value, iteration, metric, series HAVING COUNT(*) > 1)"),
            0);
  EXPECT_EQ(Q("SELECT COUNT(*) FROM samples" + r + " AND metric = 'records_per_sec' AND value > 0"),
            30);
  EXPECT_EQ(Q("SELECT COUNT(DISTINCT arm) FROM samples" + r), 2);
  // hosts.count 1: every sample of the run came from one host.
  EXPECT_EQ(Q("SELECT COUNT(DISTINCT agent_id) FROM samples" + r), 1);
  EXPECT_EQ(Q("SELECT COUNT(*) FROM samples" + r + " AND boot_id = ''"), 0);

  // The comparison table names both arms and both thread counts.
  grpc::ClientContext ctx;
  v1::CompareRequest compare;
  compare.set_run_id(run_id);
  v1::CompareResponse response;
  ASSERT_TRUE(controller_->fleet().Compare(&ctx, compare, &response).ok());
  EXPECT_NE(response.text().find("mmap"), std::string::npos) << response.text();
  EXPECT_NE(response.text().find("malloc"), std::string::npos) << response.text();
  EXPECT_NE(response.text().find("Hmean"), std::string::npos) << response.text();
  EXPECT_NE(response.text().find("threads=2"), std::string::npos) << response.text();
}

TEST_F(FleetIntegrationTest, KilledAgentsSlotIsMeasuredAgainWholeByTheOtherAgentWithoutDuplicates) {
  StartFleet(2, {"--lease-seconds", "3"});
  constexpr char kSpec[] = R"(
name: it-kill
benchmark: ebizzy
params: {seconds: 2, chunks: 4, chunk_size: 65536, threads: 1}
iterations: 3
arms:
  - {name: a, params: {mmap: always}}
  - {name: b, params: {mmap: never}}
hosts: {count: 1}
on_host_lost: {action: restart, after: 5s}
)";
  std::string run_id;
  ASSERT_TRUE(SubmitYaml(kSpec, &run_id).ok());

  // Wait until some agent holds a lease, then kill -9 that agent mid-job.
  std::string victim_agent_id;
  ASSERT_TRUE(WaitFor(
      [&] {
        grpc::ClientContext ctx;
        v1::ListHostsResponse hosts;
        controller_->fleet().ListHosts(&ctx, v1::ListHostsRequest(), &hosts);
        for (const v1::Host& h : hosts.hosts()) {
          if (!h.current_lease().empty()) victim_agent_id = h.agent_id();
        }
        return !victim_agent_id.empty();
      },
      30s))
      << Logs();
  int victim = -1;
  for (size_t i = 0; i < agents_.size(); ++i) {
    std::ifstream id_file(dir_.path() + "/agent" + std::to_string(i) + "/agent-id");
    std::string id;
    id_file >> id;
    if (id == victim_agent_id) victim = static_cast<int>(i);
  }
  ASSERT_GE(victim, 0) << "no agent state dir holds id " << victim_agent_id;
  agents_[static_cast<size_t>(victim)]->Signal(SIGKILL);

  ASSERT_TRUE(WaitTerminal(run_id, 180s)) << Logs();
  v1::Run run = GetRun(run_id);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << "\n" << Logs();

  // The slot is one machine: the survivor measured all of it again, from the first job; what
  // the victim had measured is kept, marked, and never counted.
  const std::string counted =
      " FROM samples s JOIN jobs j ON j.id = s.job_id WHERE s.run_id = " + run_id +
      " AND j.abandoned = ''";
  EXPECT_EQ(Q("SELECT COUNT(*)" + counted + " AND s.series = ''"), 6);
  EXPECT_EQ(Q("SELECT COUNT(*)" + counted), 12);  // aggregate + thread0 per job
  EXPECT_EQ(Q("SELECT COUNT(*)" + counted + " AND s.agent_id = '" + victim_agent_id + "'"), 0);
  EXPECT_EQ(Q("SELECT COUNT(*) FROM (SELECT 1" + counted +
              " GROUP BY s.arm, s.param_value, s.iteration, s.metric, s.series"
              " HAVING COUNT(*) > 1)"),
            0);
  ASSERT_EQ(run.abandoned_size(), 1);
  EXPECT_EQ(run.abandoned(0).agent_id(), victim_agent_id);
  EXPECT_NE(controller_->process().Log().find("restarted"), std::string::npos);
}

TEST_F(FleetIntegrationTest, BadSpecsAreRefusedNamingTheFieldAndNothingIsStored) {
  StartFleet(0);
  struct Case {
    std::string yaml;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"name: x\nbenchmark: ebizy\niterations: 1\narms: [{name: a}]\n", "benchmark"},
      {"name: x\nbenchmark: ebizzy\nparams: {colour: red}\narms: [{name: a}]\n", "colour"},
      {"name: x\nbenchmark: ebizzy\nparams: {threads: 0}\narms: [{name: a}]\n", "threads"},
      {"name: x\nbenchmark: ebizzy\narms: []\n", "arms"},
      {"name: x\nbenchmark: ebizzy\narms: [{name: a}, {name: a}]\n", "arms[1].name"},
      {"name: x\nbenchmark: ebizzy\narms: [{name: a\n", "test.yaml:"},
      {"name: x\nbenchmark: ebizzy\narms: [{name: a}]\non_host_lost: {action: retry}\n",
       "on_host_lost.action"},
      {"name: x\nbenchmark: ebizzy\narms: [{name: a}]\non_host_lost: {action: fail, after: 0}\n",
       "on_host_lost.after"},
      {"name: x\nbenchmark: ebizzy\narms: [{name: a}]\non_host_lost: {action: wait, after: 8d}\n",
       "on_host_lost.after"},
      {"name: x\nbenchmark: ebizzy\narms: [{name: a}]\nhosts: {names: [h1]}\n"
       "on_host_lost: {action: restart}\n",
       "on_host_lost.action"},
  };
  for (const Case& c : cases) {
    grpc::Status s = SubmitYaml(c.yaml, nullptr);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.yaml;
    EXPECT_NE(s.error_message().find(c.field), std::string::npos)
        << "message \"" << s.error_message() << "\" does not name " << c.field;
  }
  EXPECT_EQ(Q("SELECT COUNT(*) FROM runs"), 0);
  EXPECT_EQ(Q("SELECT COUNT(*) FROM jobs"), 0);

  // The CLI shows the same message and exits non-zero.
  std::string spec = dir_.path() + "/bad.yaml";
  std::ofstream(spec) << cases[2].yaml;
  std::string out;
  int rc = RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "submit", spec},
                      &out, /*merge_stderr=*/true);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("threads"), std::string::npos) << out;
  // A bad on_host_lost: exit 2 naming the field.
  std::ofstream(spec, std::ios::trunc) << cases[6].yaml;
  rc = RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "submit", spec},
                  &out, /*merge_stderr=*/true);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("on_host_lost.action: unknown action \"retry\""), std::string::npos) << out;
}

TEST_F(FleetIntegrationTest, CliSubmitWaitResultsAndCompare) {
  StartFleet(1);
  std::string spec = dir_.path() + "/spec.yaml";
  std::ofstream(spec) << "name: cli\nbenchmark: ebizzy\nparams: {seconds: 1, chunks: 2, "
                         "chunk_size: 65536, threads: 1}\niterations: 2\narms:\n"
                         "  - {name: mmap, params: {mmap: always}}\n"
                         "  - {name: malloc, params: {mmap: never}}\n";
  const std::string tlbfleet = BinPath("tlbfleet");
  const std::string addr = controller_->address();
  std::string out;
  ASSERT_EQ(RunCommand({tlbfleet, "--controller", addr, "submit", spec}, &out), 0) << out;
  // The run id is alone on the last line.
  std::string trimmed = out.substr(0, out.find_last_not_of('\n') + 1);
  std::string run_id = trimmed.substr(trimmed.find_last_of('\n') + 1);
  ASSERT_FALSE(run_id.empty());
  ASSERT_EQ(RunCommand({tlbfleet, "--controller", addr, "wait", run_id, "--timeout", "120"}, &out),
            0)
      << out << Logs();
  ASSERT_EQ(
      RunCommand({tlbfleet, "--controller", addr, "results", run_id, "--format", "csv"}, &out), 0);
  // Header + 2 arms x 2 iterations x (aggregate + thread0).
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1 + 8) << out;
  ASSERT_EQ(RunCommand({tlbfleet, "--controller", addr, "compare", run_id}, &out), 0);
  EXPECT_NE(out.find("malloc"), std::string::npos) << out;
  EXPECT_NE(out.find("Hmean"), std::string::npos) << out;
  ASSERT_EQ(RunCommand({tlbfleet, "--controller", addr, "hosts", "--format", "json"}, &out), 0);
  EXPECT_NE(out.find("logical_cpus"), std::string::npos) << out;
  // `wait` on a missing run fails.
  EXPECT_NE(RunCommand({tlbfleet, "--controller", addr, "wait", "999", "--timeout", "5"}, &out), 0);
}

// Every workload of the catalogue runs once through a real controller and agent, and its
// primary metric arrives in the store with a plausible value.
TEST_F(FleetIntegrationTest, EveryWorkloadRunsOnceThroughControllerAndAgent) {
  StartFleet(1);
  struct Case {
    std::string benchmark;
    std::string params;
    std::string metric;
  };
  const std::vector<Case> cases = {
      {"ebizzy", "{seconds: 1, threads: 1, chunks: 2, chunk_size: 65536}", "records_per_sec"},
      {"tlbflush", "{threads: 1, entries: 16, region_mb: 8}", "cost_ns"},
      {"pft", "{threads: 1, size_mb: 16}", "faults_per_sec"},
      {"hackbench", "{groups: 1, fds: 2, loops: 20, ipc: socket, mode: threads}", "time"},
      {"pipetest", "{loops: 5000}", "usecs_per_op"},
      {"netperf", "{test: tcp_rr, message_size: 1, seconds: 1}", "trans_per_sec"},
      {"usemem", "{processes: 1, size_mb: 4}", "mb_per_sec"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.benchmark);
    std::string run_id;
    grpc::Status s = SubmitYaml("name: it-" + c.benchmark + "\nbenchmark: " + c.benchmark +
                                    "\nparams: " + c.params + "\narms: [{name: only}]\n",
                                &run_id);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_TRUE(WaitTerminal(run_id, 120s)) << Logs();
    v1::Run run = GetRun(run_id);
    ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << "\n" << Logs();
    EXPECT_EQ(Q("SELECT COUNT(*) FROM samples WHERE run_id = " + run_id + " AND metric = '" +
                c.metric + "' AND series = '' AND value > 0"),
              1);
  }
}

// On a host whose kernel is locked down (these project machines: integrity), the agent
// process reports exactly that as the reason it cannot write the flush ceiling.
TEST_F(FleetIntegrationTest, AgentReportsWhyTheCeilingIsNotWritable) {
  std::ifstream lockdown_file("/sys/kernel/security/lockdown");
  std::string lockdown((std::istreambuf_iterator<char>(lockdown_file)),
                       std::istreambuf_iterator<char>());
  StartFleet(1);
  grpc::ClientContext ctx;
  v1::ListHostsResponse hosts;
  ASSERT_TRUE(controller_->fleet().ListHosts(&ctx, v1::ListHostsRequest(), &hosts).ok());
  ASSERT_EQ(hosts.hosts_size(), 1);
  const v1::CeilingInfo& ceiling = hosts.hosts(0).info().ceiling();
  // The agent mounts securityfs itself when it is missing, so read the mode after it ran.
  if (lockdown.empty()) {
    std::ifstream again("/sys/kernel/security/lockdown");
    lockdown.assign(std::istreambuf_iterator<char>(again), std::istreambuf_iterator<char>());
  }
  if (lockdown.find("[integrity]") != std::string::npos) {
    EXPECT_FALSE(ceiling.writable());
    EXPECT_EQ(ceiling.reason(), "kernel lockdown (integrity)");
    EXPECT_EQ(ceiling.lockdown(), "integrity");
  } else if (lockdown.find("[confidentiality]") != std::string::npos) {
    EXPECT_EQ(ceiling.reason(), "kernel lockdown (confidentiality)");
  } else {
    // Not locked down: either writable, or a precise other reason.
    EXPECT_TRUE(ceiling.writable() || !ceiling.reason().empty());
  }
  // A run that needs the ceiling fails at once with the host's reason when it cannot be
  // written here, instead of running both arms with the same setting.
  if (!ceiling.writable()) {
    std::string run_id;
    ASSERT_TRUE(SubmitYaml("name: c\nbenchmark: ebizzy\nparams: {seconds: 1}\narms:\n"
                           "  - {name: low, ceiling: 1}\n  - {name: high, ceiling: 512}\n",
                           &run_id)
                    .ok());
    ASSERT_TRUE(WaitTerminal(run_id, 30s));
    v1::Run run = GetRun(run_id);
    EXPECT_EQ(run.state(), v1::RUN_STATE_FAILED);
    EXPECT_NE(run.error().find(ceiling.reason()), std::string::npos) << run.error();
    EXPECT_EQ(Q("SELECT COUNT(*) FROM samples WHERE run_id = " + run_id), 0);
  }
}

}  // namespace
}  // namespace tlbfleet::testing
