#include "controller/cli/export_command.h"

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/files.h"
#include "common/temp_dir_for_test.h"
#include "controller/cli/app.h"
#include "controller/cli/exit_codes.h"
#include "controller/cli/fake_fleet_for_test.h"
#include "gmock/gmock.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "tlbfleet/v1/nightly.grpc.pb.h"

namespace tlbfleet::cli {
namespace {

namespace v1 = tlbfleet::v1;
using ::testing::HasSubstr;

// ListSeries answers one series with two points; nothing else.
class FakeNightlyForExport final : public v1::NightlyService::Service {
 public:
  FakeNightlyForExport() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeNightlyForExport() override { server_->Shutdown(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  grpc::Status ListSeries(grpc::ServerContext*, const v1::ListSeriesRequest* request,
                          v1::ListSeriesResponse* response) override {
    v1::Series* s = response->add_series();
    s->set_id("3");
    s->mutable_key()->set_metric("records_per_sec");
    s->set_better(v1::BETTER_HIGHER);
    if (!request->with_points()) return grpc::Status::OK;
    for (int i = 0; i < 2; ++i) {
      v1::SeriesPoint* p = s->add_points();
      p->set_run_id(std::to_string(10 + i));
      p->set_finished_unix_ms(1769824800000 + i * 86400000LL);
      p->set_estimate(1000 + i);
      p->set_kernel_release("6.1");
    }
    return grpc::Status::OK;
  }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

v1::Run ExportTestRun(v1::RunState state) {
  v1::Run run;
  run.set_id("7");
  run.set_state(state);
  run.mutable_spec()->set_benchmark("ebizzy");
  run.mutable_spec()->add_arms()->set_name("base");
  run.mutable_spec()->add_arms()->set_name("c512");
  return run;
}

v1::GetResultsResponse ExportTestSamples() {
  v1::GetResultsResponse results;
  for (const char* arm : {"base", "c512"}) {
    for (uint32_t i = 0; i < 3; ++i) {
      v1::Sample* s = results.add_samples();
      s->set_run_id("7");
      s->set_job_id(i + (arm[0] == 'b' ? 1 : 10));
      s->set_arm(arm);
      s->set_iteration(i);
      s->set_param_name("threads");
      s->set_param_value("2");
      s->set_metric("records_per_sec");
      s->set_value(1000 + 10 * i + (arm[0] == 'b' ? 0 : 100));
      s->set_better(v1::BETTER_HIGHER);
      s->set_boot_id("b1");
      s->set_host("ivy1");
    }
  }
  return results;
}

class ExportCommandTest : public ::testing::Test {
 protected:
  int Run(std::vector<std::string> args, const std::string& controller = "") {
    args.insert(args.begin(), {"tlbfleet", "--controller",
                               controller.empty() ? fleet_.address() : controller, "export"});
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    out_.str("");
    err_.str("");
    return RunCli(static_cast<int>(argv.size()), argv.data(), out_, err_, env_, clock_);
  }
  std::string Out(const std::string& name) { return dir_.path() + "/" + name; }

  FakeFleet fleet_;
  TempDir dir_{"tlbfleet-export-test"};
  CliEnvironment env_;
  FakeClock clock_;
  std::ostringstream out_, err_;
};

TEST_F(ExportCommandTest, MmtestsWritesTheLayoutAndSaysHowToCompare) {
  fleet_.ScriptGetRun({{grpc::Status::OK, ExportTestRun(v1::RUN_STATE_SUCCEEDED)}});
  fleet_.SetResults(ExportTestSamples());
  ASSERT_EQ(Run({"7", "--format", "mmtests", "--out", Out("mm")}), kExitOk) << err_.str();
  absl::StatusOr<std::string> log = ReadFile(Out("mm/c512/iter-0/ebizzy/logs/ebizzy-2-3.log"));
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(*log, "1120 records/s\n");
  EXPECT_THAT(out_.str(), HasSubstr("bin/compare-mmtests.pl --directory " + Out("mm") +
                                    " --benchmark ebizzy --names base,c512"));
}

TEST_F(ExportCommandTest, LkpAndBmfWriteTheirFiles) {
  fleet_.ScriptGetRun({{grpc::Status::OK, ExportTestRun(v1::RUN_STATE_SUCCEEDED)}});
  fleet_.SetResults(ExportTestSamples());
  ASSERT_EQ(Run({"7", "--format", "lkp", "--out", Out("lkp")}), kExitOk) << err_.str();
  EXPECT_TRUE(std::filesystem::exists(Out("lkp/base/threads=2/matrix.json")));
  EXPECT_TRUE(std::filesystem::exists(Out("lkp/c512/threads=2/2/stats.json")));
  ASSERT_EQ(Run({"7", "--format", "bmf", "--out", Out("bmf")}), kExitOk) << err_.str();
  absl::StatusOr<std::string> bmf = ReadFile(Out("bmf/bmf.json"));
  ASSERT_TRUE(bmf.ok()) << bmf.status();
  EXPECT_THAT(*bmf, HasSubstr("\"ebizzy/threads=2/c512\""));
  EXPECT_THAT(*bmf, HasSubstr("\"records_per_sec_ratio\""));
}

TEST_F(ExportCommandTest, ARunStillRunningIsRefusedNamingRun) {
  fleet_.ScriptGetRun({{grpc::Status::OK, ExportTestRun(v1::RUN_STATE_RUNNING)}});
  fleet_.SetResults(ExportTestSamples());
  EXPECT_EQ(Run({"7", "--format", "mmtests", "--out", Out("mm")}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("RUN: run 7 is running, not finished"));
  EXPECT_FALSE(std::filesystem::exists(Out("mm")));
}

TEST_F(ExportCommandTest, AMissingRunIsRefusedNamingRun) {
  EXPECT_EQ(Run({"99", "--format", "lkp", "--out", Out("x")}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("RUN: run 99 not found"));
}

TEST_F(ExportCommandTest, BadCommandLinesAreUsageErrorsNamingTheField) {
  EXPECT_EQ(Run({"7", "--format", "csv", "--out", Out("x")}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--format"));
  EXPECT_EQ(Run({"--format", "mmtests", "--out", Out("x")}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("RUN: format mmtests needs a run id"));
  EXPECT_EQ(Run({"7", "--format", "otava", "--out", Out("x")}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("RUN: format otava exports history series"));
  EXPECT_EQ(Run({"--series", "3", "--format", "bmf", "--out", Out("x")}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--series: only format otava"));
  EXPECT_EQ(Run({"7", "--format", "mmtests"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--out"));
}

TEST_F(ExportCommandTest, ANonEmptyOutIsRefused) {
  ASSERT_TRUE(WriteFileAtomic(Out("full/old"), "x").ok() ||
              (MakeDirs(Out("full")).ok() && WriteFileAtomic(Out("full/old"), "x").ok()));
  fleet_.ScriptGetRun({{grpc::Status::OK, ExportTestRun(v1::RUN_STATE_SUCCEEDED)}});
  EXPECT_EQ(Run({"7", "--format", "mmtests", "--out", Out("full")}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--out: " + Out("full") + " is not empty"));
}

TEST_F(ExportCommandTest, OtavaExportsTheChosenSeries) {
  FakeNightlyForExport nightly;
  ASSERT_EQ(Run({"--series", "3", "--format", "otava", "--out", Out("otava")}, nightly.address()),
            kExitOk)
      << err_.str();
  absl::StatusOr<std::string> csv = ReadFile(Out("otava/tlbfleet.csv"));
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_EQ(*csv,
            "time,run,kernel,boot_entry,arm,records_per_sec\n"
            "2026-01-31 02:00:00 +0000,10,6.1,,,1000\n"
            "2026-02-01 02:00:00 +0000,11,6.1,,,1001\n");
  EXPECT_TRUE(std::filesystem::exists(Out("otava/otava.yaml")));
  EXPECT_EQ(Run({"--series", "42", "--format", "otava", "--out", Out("none")}, nightly.address()),
            kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--series: no series 42"));
}

}  // namespace
}  // namespace tlbfleet::cli
