#include "controller/report/export_lkp.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

namespace v1 = tlbfleet::v1;
using ::testing::HasSubstr;

void AddLkpSample(ExportRun* run, const std::string& arm, int64_t job, uint32_t iteration,
                  const std::string& metric, double value, const std::string& series = "") {
  v1::Sample s;
  s.set_arm(arm);
  s.set_job_id(job);
  s.set_iteration(iteration);
  s.set_metric(metric);
  s.set_value(value);
  s.set_series(series);
  s.set_param_name("threads");
  s.set_param_value("2");
  s.set_host("ivy1");
  s.set_microarch("IvyBridge");
  s.set_kernel_release("6.1.0-13-amd64");
  run->samples.push_back(s);
}

ExportRun LkpEbizzyRun() {
  ExportRun run;
  run.run.set_id("7");
  run.run.set_state(v1::RUN_STATE_SUCCEEDED);
  run.run.mutable_spec()->set_benchmark("ebizzy");
  run.run.mutable_spec()->add_arms()->set_name("base");
  // lkp-tests' programs/ebizzy/parse: "throughput: TOTAL", and of the per-thread values
  // "throughput.per_thread.min/max" and "stddev_percent" = 100 * stddev / TOTAL.
  AddLkpSample(&run, "base", 1, 0, "records_per_sec", 300);
  AddLkpSample(&run, "base", 1, 0, "records_per_sec", 100, "thread0");
  AddLkpSample(&run, "base", 1, 0, "records_per_sec", 200, "thread1");
  AddLkpSample(&run, "base", 1, 1, "records_per_sec", 500);
  return run;
}

std::map<std::string, std::string> LkpFiles(const LkpExport& e) {
  std::map<std::string, std::string> files;
  for (const ExportFile& f : e.files) files[f.path] = f.content;
  return files;
}

TEST(ExportLkpTest, StatsAndMatrixUseLkpsKeys) {
  absl::StatusOr<LkpExport> e = ExportLkp(LkpEbizzyRun());
  ASSERT_TRUE(e.ok()) << e.status();
  std::map<std::string, std::string> files = LkpFiles(*e);
  EXPECT_EQ(files["base/threads=2/0/stats.json"],
            "{\n"
            "  \"ebizzy.throughput\": 300,\n"
            "  \"ebizzy.throughput.per_thread.max\": 200,\n"
            "  \"ebizzy.throughput.per_thread.min\": 100,\n"
            "  \"ebizzy.throughput.per_thread.stddev_percent\": 16.666666666666668\n"
            "}\n");
  EXPECT_EQ(files["base/threads=2/1/stats.json"], "{\n  \"ebizzy.throughput\": 500\n}\n");
  EXPECT_EQ(files["base/threads=2/1/ebizzy.json"], "{\n  \"ebizzy.throughput\": [500]\n}\n");
  // A key a run lacks is 0 in the matrix, as LKP's matrix_fill_missing_zeros.
  EXPECT_EQ(files["base/threads=2/matrix.json"],
            "{\n"
            "  \"ebizzy.throughput\": [300, 500],\n"
            "  \"ebizzy.throughput.per_thread.max\": [200, 0],\n"
            "  \"ebizzy.throughput.per_thread.min\": [100, 0],\n"
            "  \"ebizzy.throughput.per_thread.stddev_percent\": [16.666666666666668, 0],\n"
            "  \"stats_source\": [\"base/threads=2/0/stats.json\", "
            "\"base/threads=2/1/stats.json\"]\n"
            "}\n");
  EXPECT_THAT(files["base/threads=2/avg.json"], HasSubstr("\"ebizzy.throughput\": 400,"));
  // LKP's standard_deviation divides by n.
  EXPECT_THAT(files["base/threads=2/stddev.json"], HasSubstr("\"ebizzy.throughput\": 100,"));
  EXPECT_THAT(files["base/threads=2/0/job.yaml"], HasSubstr("testcase: \"ebizzy\"\n"));
  EXPECT_THAT(files["base/threads=2/0/job.yaml"], HasSubstr("  threads: \"2\"\n"));
  EXPECT_THAT(files["base/threads=2/0/job.yaml"],
              HasSubstr("kernel_release: \"6.1.0-13-amd64\"\n"));
  // Every JSON file parses.
  for (const auto& [path, content] : files) {
    if (path.size() < 5 || path.substr(path.size() - 5) != ".json") continue;
    google::protobuf::Value parsed;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(content, &parsed).ok()) << path;
  }
}

TEST(ExportLkpTest, KeysAreLkpsWhereItsParserHasOne) {
  EXPECT_EQ(LkpStatKey("netperf", "mbit_per_sec"), "netperf.Throughput_Mbps");
  EXPECT_EQ(LkpStatKey("netperf", "trans_per_sec"), "netperf.Throughput_tps");
  EXPECT_EQ(LkpStatKey("pipetest", "ops_per_sec"), "perf-bench-sched-pipe.ops_per_sec");
  EXPECT_EQ(LkpStatKey("pipetest", "usecs_per_op"), "perf-bench-sched-pipe.usecs_per_op");
  EXPECT_EQ(LkpStatKey("pft", "faults_per_cpu"), "pft.faults_per_sec_per_cpu");
  EXPECT_EQ(LkpStatKey("hackbench", "time"), "hackbench.time");
}

TEST(ExportLkpTest, ARunWithoutSamplesIsNotFound) {
  ExportRun run = LkpEbizzyRun();
  run.samples.clear();
  EXPECT_EQ(ExportLkp(run).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tlbfleet::report
