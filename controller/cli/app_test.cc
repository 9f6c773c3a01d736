#include "controller/cli/app.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "common/clock.h"
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

// --table mmtests: today's mmtests rows for the run's benchmark (hackbench: Multiops of times,
// 4 decimals), from the run's samples in the report's groups. mmtests' compare printed
// Amean 1.0875 / 1.0800 (0.69%) and BAmean.95 1.0639 / 1.0611 (0.26%) for these times.
TEST_F(AppTest, CompareTableMmtestsPrintsTodaysMmtestsRows) {
  FakeFleet fleet;
  v1::CompareResponse response;
  v1::Report* report = response.mutable_report();
  report->set_title("run 7");
  report->add_arms("A");
  report->add_arms("B");
  v1::Report::Group* g = report->add_groups();
  g->set_metric("time_seconds");
  g->set_param_value("4");
  g->set_better(v1::BETTER_LOWER);
  fleet.SetCompare(response);
  v1::Run run;
  run.set_id("7");
  run.mutable_spec()->set_benchmark("hackbench");
  fleet.ScriptGetRun({{grpc::Status::OK, run}});
  v1::GetResultsResponse results;
  const std::vector<std::pair<std::string, std::vector<double>>> times = {
      {"A", {1.0, 1.1, 1.21, 0.98, 1.05, 1.3, 1.02, 0.99, 1.075, 1.15}},
      {"B", {0.9, 1.2, 1.18, 1.01, 1.04, 1.25, 1.005, 0.995, 1.1, 1.12}}};
  for (const auto& [arm, values] : times) {
    for (double v : values) {
      v1::Sample* s = results.add_samples();
      s->set_arm(arm);
      s->set_metric("time_seconds");
      s->set_param_value("4");
      s->set_value(v);
    }
  }
  fleet.SetResults(results);
  EXPECT_EQ(Run({"--controller", fleet.address(), "compare", "7", "--table", "mmtests"}), kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("Amean     time_seconds-4       1.0875 (   0.00%)       "
                                    "1.0800 (   0.69%)\n"));
  EXPECT_THAT(
      out_.str(),
      HasSubstr("Stddev    time_seconds-4       0.1049 (   0.00%)       0.1091 (  -3.95%)\n"));
  EXPECT_THAT(out_.str(), HasSubstr("BAmean.95 time_seconds-4       1.0639 (   0.00%)       "
                                    "1.0611 (   0.26%)\n"));
  EXPECT_EQ(Run({"--controller", fleet.address(), "compare", "7", "--table", "mmtests", "--format",
                 "json"}),
            kExitUsage);
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

// A ceiling sweep's samples as GetResults returns them: ebizzy on IvyBridge over 1..512,
// throughput 900 below ceiling 33 and 1000 from it on, two boots of five iterations.
v1::GetResultsResponse SweepResults() {
  v1::GetResultsResponse results;
  uint64_t seq = 0;
  for (int boot = 0; boot < 2; ++boot) {
    for (int iteration = 1; iteration <= 5; ++iteration) {
      for (int ceiling : {1, 2, 4, 8, 16, 33, 64, 128, 256, 512}) {
        v1::Sample* s = results.add_samples();
        s->set_seq(seq++);
        s->set_arm("ebizzy");
        s->set_microarch("IvyBridge");
        s->set_boot_id("boot" + std::to_string(boot));
        s->set_param_name("ceiling");
        s->set_param_value(std::to_string(ceiling));
        s->set_iteration(iteration);
        s->set_metric("records_per_sec");
        s->set_unit("records/s");
        s->set_better(v1::BETTER_HIGHER);
        // A small deterministic wobble: iterations differ, the knee dominates.
        s->set_value((ceiling >= 33 ? 1000.0 : 900.0) + (iteration - 3) * 1.5 + boot);
      }
    }
  }
  return results;
}

TEST_F(AppTest, CeilingsRecommendsTheSmallestCeilingNotWorseThanTheBest) {
  FakeFleet fleet;
  fleet.SetResults(SweepResults());
  EXPECT_EQ(Run({"--controller", fleet.address(), "ceilings", "7"}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("recommended ceiling for IvyBridge: 33"));
  EXPECT_THAT(out_.str(), HasSubstr("<- recommended"));

  EXPECT_EQ(Run({"--controller", fleet.address(), "ceilings", "7", "--format", "json"}), kExitOk);
  // The report's CeilingRecommendation messages, in protobuf's JSON mapping.
  EXPECT_THAT(out_.str(), HasSubstr(R"("microarch": "IvyBridge")"));
  EXPECT_THAT(out_.str(), HasSubstr(R"("recommended": "33")"));

  // Another metric than the run has: nothing to recommend, said so, exit 1.
  EXPECT_EQ(Run({"--controller", fleet.address(), "ceilings", "7", "--metric", "nope"}),
            kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("run 7 has no samples of nope yet"));
}

TEST_F(AppTest, CeilingsOfARunThatIsNotASweepOrUnknown) {
  FakeFleet fleet;
  v1::GetResultsResponse plain = SweepResults();
  for (v1::Sample& s : *plain.mutable_samples()) {
    s.clear_param_name();
    s.clear_param_value();
  }
  fleet.SetResults(plain);
  EXPECT_EQ(Run({"--controller", fleet.address(), "ceilings", "7"}), kExitFailed);
  EXPECT_THAT(err_.str(), HasSubstr("not a ceiling sweep"));
  EXPECT_EQ(Run({"--controller", fleet.address(), "ceilings", "7", "--format", "xml"}), kExitUsage);

  fleet.SetStatus(grpc::Status(grpc::StatusCode::NOT_FOUND, "run 8: no such run"));
  EXPECT_EQ(Run({"--controller", fleet.address(), "ceilings", "8"}),
            ExitCodeForStatus(grpc::StatusCode::NOT_FOUND));
  EXPECT_THAT(err_.str(), HasSubstr("8"));
}

}  // namespace
}  // namespace tlbfleet::cli
