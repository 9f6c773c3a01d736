#include "controller/cli/app.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "controller/cli/exit_codes.h"
#include "controller/cli/fake_fleet_for_test.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace v1 = tlbfleet::v1;

constexpr char kNowhere[] = "unix:/nonexistent-tlbfleet-test/controller.sock";

class AppTest : public ::testing::Test {
 protected:
  int Run(std::vector<std::string> args) {
    args.insert(args.begin(), "tlbfleet");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    out_.str("");
    err_.str("");
    return RunCli(static_cast<int>(argv.size()), argv.data(), out_, err_, env_, clock_);
  }

  CliEnvironment env_;
  FakeClock clock_;
  std::ostringstream out_, err_;
};

TEST_F(AppTest, NoCommandIsUsageError) {
  EXPECT_EQ(Run({}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("subcommand"));
}

TEST_F(AppTest, HelpListsCommandsAndExitCodes) {
  EXPECT_EQ(Run({"--help"}), kExitOk);
  for (const char* command :
       {"submit", "runs", "run", "wait", "cancel", "hosts", "results", "compare", "Exit codes"}) {
    EXPECT_THAT(out_.str(), HasSubstr(command));
  }
}

TEST_F(AppTest, BadFormatIsUsageError) {
  EXPECT_EQ(Run({"runs", "--format", "xml"}), kExitUsage);
  EXPECT_EQ(Run({"results", "7", "--format", "text"}), kExitUsage);
  EXPECT_EQ(Run({"run"}), kExitUsage);  // RUN missing
}

TEST_F(AppTest, CompareNeedsExactlyOneSource) {
  EXPECT_EQ(Run({"compare"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("RUN or --from-csv"));
  EXPECT_EQ(Run({"compare", "7", "--from-csv", "x.csv"}), kExitUsage);
  EXPECT_EQ(Run({"compare", "7", "--lower-is-better"}), kExitUsage);  // needs --from-csv
  EXPECT_EQ(Run({"compare", "--from-csv", "x.csv", "--format", "xml"}), kExitUsage);
}

TEST_F(AppTest, CompareFromCsvRunsOfflineWithoutAController) {
  const std::string path = ::testing::TempDir() + "/app_compare.csv";
  std::ofstream(path) << "arm,boot,param,iteration,metric,value\n"
                         "a,1,,0,lat,10\na,1,,1,lat,11\nb,1,,0,lat,20\nb,1,,1,lat,21\n";
  EXPECT_EQ(Run({"--controller", kNowhere, "compare", "--from-csv", path, "--lower-is-better",
                 "--format", "json"}),
            kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("\"arm\": \"b\""));
  EXPECT_THAT(out_.str(), HasSubstr("\"better\": \"lower\""));
}

TEST_F(AppTest, UnreachableControllerExitsFour) {
  EXPECT_EQ(Run({"--controller", kNowhere, "hosts"}), kExitUnreachable);
  EXPECT_THAT(err_.str(),
              StartsWith(std::string("tlbfleet: cannot reach controller at ") + kNowhere + ": "));
}

TEST_F(AppTest, ControllerFromEnvironmentAndGlobalOptionAfterCommand) {
  env_.controller = kNowhere;
  EXPECT_EQ(Run({"runs"}), kExitUnreachable);
  EXPECT_THAT(err_.str(), HasSubstr(kNowhere));

  FakeFleet fleet;
  EXPECT_EQ(
      Run({"--controller", kNowhere, "runs", "--controller", fleet.address(), "--limit", "3"}),
      kExitOk);
  EXPECT_EQ(fleet.last_limit(), 3u);
  EXPECT_THAT(out_.str(), StartsWith("ID  NAME"));
}

TEST_F(AppTest, SubmitThenWaitAgainstFakeController) {
  FakeFleet fleet;
  v1::SubmitRunResponse submitted;
  submitted.set_run_id("7");
  submitted.set_jobs(1);
  fleet.SetSubmitResponse(submitted);
  v1::Run done;
  done.set_id("7");
  done.set_state(v1::RUN_STATE_SUCCEEDED);
  done.mutable_jobs()->set_total(1);
  done.mutable_jobs()->set_succeeded(1);
  fleet.ScriptGetRun({{grpc::Status::OK, done}});

  std::string path = ::testing::TempDir() + "/app_spec.yaml";
  std::ofstream(path) << "benchmark: ebizzy\n";
  EXPECT_EQ(Run({"--controller", fleet.address(), "submit", path}), kExitOk);
  EXPECT_EQ(out_.str(), "submitted run 7 (1 job)\n7\n");

  EXPECT_EQ(Run({"--controller", fleet.address(), "wait", "7", "--timeout", "10"}), kExitOk);
  EXPECT_EQ(err_.str(), "run 7: 1/1 jobs done, 0 running\nrun 7 succeeded: 1/1 jobs done\n");
}

TEST_F(AppTest, CompareBaselineIsPassedThrough) {
  FakeFleet fleet;
  v1::CompareResponse response;
  response.set_text("table\n");
  fleet.SetCompare(response);
  EXPECT_EQ(Run({"--controller", fleet.address(), "compare", "7", "--baseline", "c33"}), kExitOk);
  EXPECT_EQ(fleet.last_compare().run_id(), "7");
  EXPECT_EQ(fleet.last_compare().baseline(), "c33");
  EXPECT_EQ(out_.str(), "table\n");
}

}  // namespace
}  // namespace tlbfleet::cli
