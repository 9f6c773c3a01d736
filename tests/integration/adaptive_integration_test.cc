// Adaptive runs and multi-boot runs through a real controller and agent on loopback: the
// controller grows an adaptive run until it settles or hits its maximum and stores why it
// stopped; a run with several boots fails at once, naming the missing reboot command, when
// the only agent cannot reboot. (Real reboots are in tests/vm: this machine must never
// reboot.)

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

int64_t QueryInt(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  int64_t value = -1;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      value = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return value;
}

class AdaptiveIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controller_ = std::make_unique<ControllerProcess>(dir_.path());
    ASSERT_GT(controller_->grpc_port(), 0) << controller_->process().Log();
    agent_ = std::make_unique<Process>(
        std::vector<std::string>{BinPath("tlbfleet-agent"), "--controller", controller_->address(),
                                 "--state-dir", dir_.path() + "/agent", "--max-backoff-seconds",
                                 "2"},
        dir_.path() + "/agent.log");
    ASSERT_TRUE(WaitFor([&] { return controller_->ConnectedHosts() == 1; }, 30s)) << Logs();
  }

  std::string Logs() {
    return "--- controller\n" + controller_->process().Log() + "\n--- agent\n" + agent_->Log();
  }

  std::string Submit(const std::string& yaml) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::SubmitRunRequest request;
    request.set_spec_yaml(yaml);
    request.set_source_name("it.yaml");
    v1::SubmitRunResponse response;
    grpc::Status s = controller_->fleet().SubmitRun(&ctx, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.run_id();
  }

  v1::Run GetRun(const std::string& run_id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::GetRunRequest request;
    request.set_run_id(run_id);
    v1::Run run;
    controller_->fleet().GetRun(&ctx, request, &run);
    return run;
  }

  v1::Run WaitForEnd(const std::string& run_id, std::chrono::milliseconds timeout) {
    v1::Run run;
    WaitFor(
        [&] {
          run = GetRun(run_id);
          return run.state() == v1::RUN_STATE_SUCCEEDED || run.state() == v1::RUN_STATE_FAILED ||
                 run.state() == v1::RUN_STATE_CANCELLED;
        },
        timeout);
    return run;
  }

  TempDir dir_;
  std::unique_ptr<ControllerProcess> controller_;
  std::unique_ptr<Process> agent_;
};

TEST_F(AdaptiveIntegrationTest, GrowsUntilSettledOrAtMaxAndSaysWhy) {
  // Two arms that differ little (pipetest's µs/op hardly depends on the loop count), and a
  // target no 2-CPU machine meets with 2 iterations: the run must grow at least once.
  const std::string run_id = Submit(R"(
name: it-adaptive
benchmark: pipetest
params: {loops: 2000}
iterations: {min: 2, max: 8, target_ci: 0.05%}
arms:
  - {name: short, params: {loops: 2000}}
  - {name: long,  params: {loops: 4000}}
)");
  ASSERT_FALSE(run_id.empty());
  v1::Run run = WaitForEnd(run_id, 180s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << "\n" << Logs();
  EXPECT_GT(run.iterations_per_boot(), 2u) << run.stop_reason();
  EXPECT_LE(run.iterations_per_boot(), 8u);
  EXPECT_GE(run.adaptive_rounds(), 1u);
  EXPECT_EQ(run.boots(), 1u);
  const bool why_known = run.stop_reason().rfind("verdicts settled", 0) == 0 ||
                         run.stop_reason().rfind("maximum reached (8 iterations", 0) == 0 ||
                         run.stop_reason().rfind("target reached", 0) == 0;
  EXPECT_TRUE(why_known) << run.stop_reason();
  // Every planned job ran, each arm once per iteration, and nothing else was stored.
  EXPECT_EQ(run.jobs().total(), 2 * run.iterations_per_boot());
  EXPECT_EQ(run.jobs().succeeded(), run.jobs().total());
  const std::string where =
      " FROM samples WHERE run_id = " + run_id + " AND metric = 'usecs_per_op' AND series = ''";
  const std::string db = controller_->db_path();
  EXPECT_EQ(QueryInt(db, "SELECT COUNT(*)" + where + " AND arm = 'short'"),
            static_cast<int64_t>(run.iterations_per_boot()));
  EXPECT_EQ(QueryInt(db, "SELECT COUNT(*)" + where + " AND arm = 'long'"),
            static_cast<int64_t>(run.iterations_per_boot()));
  EXPECT_EQ(QueryInt(db, "SELECT COUNT(DISTINCT iteration)" + where),
            static_cast<int64_t>(run.iterations_per_boot()));
  // The CLI shows the plan and the reason.
  std::string out;
  ASSERT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "run", run_id},
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("(adaptive 2..8)"), std::string::npos) << out;
  EXPECT_NE(out.find("stopped:"), std::string::npos) << out;
  EXPECT_NE(out.find(run.stop_reason()), std::string::npos) << out;
}

TEST_F(AdaptiveIntegrationTest, SeveralBootsNeedAnAgentThatCanReboot) {
  const std::string run_id = Submit(R"(
name: it-boots
benchmark: pipetest
params: {loops: 1000}
boots: 3
arms: [{name: a}, {name: b, params: {loops: 2000}}]
)");
  ASSERT_FALSE(run_id.empty());
  v1::Run run = WaitForEnd(run_id, 30s);
  EXPECT_EQ(run.state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run.error().find("no selected host can reboot"), std::string::npos) << run.error();
  EXPECT_NE(run.error().find("--reboot-command"), std::string::npos) << run.error();
  EXPECT_EQ(run.jobs().succeeded(), 0u);
}

}  // namespace
}  // namespace tlbfleet::testing
