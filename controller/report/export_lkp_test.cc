#include "controller/report/export_lkp.h"

#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "controller/report/import_lkp_results.h"
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

// will-it-scale's TLB tests as lkp-tests' programs/will-it-scale/parse writes their stats
// (spec/fixtures/stats/will-it-scale/1.yaml there: "104.processes: 1200363", "104.threads: 0",
// "104.linear: 0", "per_process_ops: 11541", "per_thread_ops: 0", "workload: 1200363").
ExportRun WillItScaleRun() {
  ExportRun run;
  run.run.set_id("9");
  run.run.set_state(v1::RUN_STATE_SUCCEEDED);
  v1::RunSpec* spec = run.run.mutable_spec();
  spec->set_benchmark("willitscale");
  (*spec->mutable_params())["test"] = "tlb_flush2";
  spec->mutable_sweep()->set_param("tasks");
  spec->add_arms()->set_name("proc");  // mode: process, the default
  v1::ArmSpec* thr = spec->add_arms();
  thr->set_name("thr");
  (*thr->mutable_params())["mode"] = "thread";
  int64_t job = 0;
  auto add = [&](const std::string& arm, const std::string& tasks, uint32_t it, double ops) {
    ++job;
    for (const auto& [metric, value] : {std::pair<std::string, double>{"ops_per_sec", ops},
                                        {"ops_per_sec_per_task", ops / std::stod(tasks)}}) {
      v1::Sample s;
      s.set_arm(arm);
      s.set_job_id(job);
      s.set_iteration(it);
      s.set_metric(metric);
      s.set_value(value);
      s.set_param_name("tasks");
      s.set_param_value(tasks);
      run.samples.push_back(s);
    }
    v1::Sample task0;  // one task's own figure: not an LKP stat
    task0.set_arm(arm);
    task0.set_job_id(job);
    task0.set_iteration(it);
    task0.set_metric("ops_per_sec");
    task0.set_series("task0");
    task0.set_value(ops / std::stod(tasks));
    task0.set_param_name("tasks");
    task0.set_param_value(tasks);
    run.samples.push_back(task0);
  };
  add("proc", "1", 0, 1000.7);
  add("proc", "1", 1, 1001.3);
  add("proc", "4", 0, 3600.9);
  add("thr", "4", 0, 2000.5);
  return run;
}

TEST(ExportLkpTest, WillItScaleStatsAreLkpsKeysPerModeWithLinearAndScalability) {
  absl::StatusOr<LkpExport> e = ExportLkp(WillItScaleRun());
  ASSERT_TRUE(e.ok()) << e.status();
  std::map<std::string, std::string> files = LkpFiles(*e);
  // One task: linear is the 1-task mean (1001) times 1; no scalability at one task.
  EXPECT_EQ(files["proc/tasks=1/0/stats.json"],
            "{\n"
            "  \"will-it-scale.1.linear\": 1001,\n"
            "  \"will-it-scale.1.processes\": 1000,\n"
            "  \"will-it-scale.1.threads\": 0,\n"
            "  \"will-it-scale.per_process_ops\": 1000,\n"
            "  \"will-it-scale.per_thread_ops\": 0,\n"
            "  \"will-it-scale.workload\": 1000\n"
            "}\n");
  // Four processes: per-task ops truncated as "%d" does, scalability 3600 / 4004 to "%f".
  EXPECT_EQ(files["proc/tasks=4/0/stats.json"],
            "{\n"
            "  \"will-it-scale.4.linear\": 4004,\n"
            "  \"will-it-scale.4.processes\": 3600,\n"
            "  \"will-it-scale.4.threads\": 0,\n"
            "  \"will-it-scale.per_process_ops\": 900,\n"
            "  \"will-it-scale.per_thread_ops\": 0,\n"
            "  \"will-it-scale.scalability\": 0.899101,\n"
            "  \"will-it-scale.workload\": 3600\n"
            "}\n");
  // Threads without a 1-task run: the threads column, per_thread_ops, linear unknown (0) and
  // so no scalability, as runtest.py given one task count.
  EXPECT_EQ(files["thr/tasks=4/0/stats.json"],
            "{\n"
            "  \"will-it-scale.4.linear\": 0,\n"
            "  \"will-it-scale.4.processes\": 0,\n"
            "  \"will-it-scale.4.threads\": 2000,\n"
            "  \"will-it-scale.per_process_ops\": 0,\n"
            "  \"will-it-scale.per_thread_ops\": 500,\n"
            "  \"will-it-scale.workload\": 2000\n"
            "}\n");
  EXPECT_THAT(files["proc/tasks=4/0/job.yaml"], HasSubstr("testcase: \"will-it-scale\"\n"));
  EXPECT_THAT(files["thr/tasks=4/0/job.yaml"], HasSubstr("  mode: \"thread\"\n"));
  EXPECT_TRUE(files.contains("proc/tasks=4/0/will-it-scale.json"));
  EXPECT_THAT(files["proc/tasks=1/matrix.json"],
              HasSubstr("\"will-it-scale.workload\": [1000, 1001]"));
  EXPECT_EQ(LkpStatKey("willitscale", "ops_per_sec"), "will-it-scale.workload");
  EXPECT_EQ(LkpStatKey("willitscale", "ops_per_sec_per_task"), "will-it-scale.per_process_ops");

  // Read back: the totals and each mode's per-task figure (to LKP's integers).
  absl::StatusOr<ImportedRun> back = ImportLkpResults(ImportFiles(files.begin(), files.end()));
  ASSERT_TRUE(back.ok()) << back.status();
  std::map<std::tuple<std::string, std::string, std::string>, double> values;
  for (const v1::Sample& s : back->samples) {
    values[{s.arm(), s.param_value(), s.metric()}] += s.value();
  }
  EXPECT_EQ((values[{"thr", "4", "ops_per_sec"}]), 2000);
  EXPECT_EQ((values[{"thr", "4", "ops_per_sec_per_task"}]), 500);
  EXPECT_EQ((values[{"proc", "4", "ops_per_sec_per_task"}]), 900);
  EXPECT_EQ((values[{"proc", "1", "ops_per_sec"}]), 2001);  // two runs
}

TEST(ExportLkpTest, ARunWithoutSamplesIsNotFound) {
  ExportRun run = LkpEbizzyRun();
  run.samples.clear();
  EXPECT_EQ(ExportLkp(run).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tlbfleet::report
