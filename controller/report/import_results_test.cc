#include "controller/report/import_results.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/temp_dir_for_test.h"
#include "controller/report/export_files.h"
#include "controller/report/export_lkp.h"
#include "controller/report/export_mmtests.h"
#include "controller/report/import_lkp_results.h"
#include "controller/report/import_mmtests_results.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

namespace v1 = tlbfleet::v1;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A finished ebizzy run of two arms swept over threads 1 and 4, two boots per arm, three
// iterations each, with per-thread figures and the whole provenance an agent reports.
ExportRun EbizzyRun() {
  ExportRun run;
  run.run.set_id("7");
  run.run.set_state(v1::RUN_STATE_SUCCEEDED);
  run.run.set_created_unix(1764456601);
  run.run.set_finished_unix(1764456700);
  v1::RunSpec* spec = run.run.mutable_spec();
  spec->set_benchmark("ebizzy");
  spec->mutable_sweep()->set_param("threads");
  spec->add_arms()->set_name("mmap");
  spec->add_arms()->set_name("malloc");
  int64_t job = 0;
  for (const std::string arm : {"mmap", "malloc"}) {
    for (const std::string boot : {"boot-a", "boot-b"}) {
      for (const std::string threads : {"1", "4"}) {
        for (uint32_t it = 1; it <= 3; ++it) {
          ++job;
          const double total = 1000.0 * job + 0.25 * it + (arm == "malloc" ? 0.5 : 0);
          std::vector<std::pair<std::string, double>> values = {{"", total}};
          for (int t = 0; t < std::stoi(threads); ++t) {
            values.emplace_back(absl::StrCat("thread", t), total / 4 + t);
          }
          for (const auto& [series, value] : values) {
            v1::Sample& s = run.samples.emplace_back();
            s.set_run_id("7");
            s.set_job_id(job);
            s.set_arm(arm);
            s.set_param_name("threads");
            s.set_param_value(threads);
            s.set_iteration(it);
            s.set_metric("records_per_sec");
            s.set_series(series);
            s.set_value(value);
            s.set_host("ivy1");
            s.set_agent_id("0d60fd02");
            s.set_machine_id("4c4c4544");
            s.set_boot_id(arm + "-" + boot);
            s.set_boot_entry(arm == "mmap" ? "6.12" : "6.12-patched");
            s.set_kernel_release(arm == "mmap" ? "6.12.0" : "6.12.0+");
            s.set_kernel_cmdline("root=/dev/sda1 quiet");
            s.set_microarch("icelake");
            s.set_commit(arm == "mmap" ? "" : "a1b2c3d4");
            s.set_build_id(arm == "mmap" ? "" : "b17");
            s.set_ceiling_observed(true);
            s.set_ceiling(33);
          }
        }
      }
    }
  }
  return run;
}

ImportFiles FilesOf(const std::vector<ExportFile>& files) {
  ImportFiles out;
  for (const ExportFile& f : files) out[f.path] = f.content;
  return out;
}

// What both sides have of a sample: everything but the ids only tlbfleet's store assigns (job
// and lease ids, seq) and the iteration number, which mmtests keeps as file order.
using SampleKey =
    std::tuple<std::string, std::string, std::string, std::string, std::string, double, std::string,
               std::string, std::string, std::string, std::string, std::string, std::string,
               std::string, std::string, std::string, bool, bool, int64_t>;

std::vector<SampleKey> Keys(const std::vector<v1::Sample>& samples, bool with_series = true) {
  std::vector<SampleKey> keys;
  for (const v1::Sample& s : samples) {
    if (!with_series && !s.series().empty()) continue;
    keys.emplace_back(s.arm(), s.param_name(), s.param_value(), s.metric(), s.series(), s.value(),
                      s.host(), s.agent_id(), s.machine_id(), s.boot_id(), s.boot_entry(),
                      s.kernel_release(), s.kernel_cmdline(), s.microarch(), s.commit(),
                      s.build_id(), s.ceiling_applied(), s.ceiling_observed(), s.ceiling());
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

TEST(ImportMmtestsResultsTest, RoundTripOfOurExportKeepsEverySampleArmAndProvenance) {
  const ExportRun run = EbizzyRun();
  absl::StatusOr<MmtestsExport> exported = ExportMmtests(run);
  ASSERT_TRUE(exported.ok()) << exported.status();
  absl::StatusOr<ImportedRun> imported = ImportMmtestsResults(FilesOf(exported->files));
  ASSERT_TRUE(imported.ok()) << imported.status();

  EXPECT_EQ(imported->spec.benchmark(), "ebizzy");
  ASSERT_EQ(imported->spec.arms_size(), 2);
  std::vector<std::string> arms = {imported->spec.arms(0).name(), imported->spec.arms(1).name()};
  std::sort(arms.begin(), arms.end());
  EXPECT_THAT(arms, ElementsAre("malloc", "mmap"));
  EXPECT_EQ(imported->spec.sweep().param(), "threads");
  EXPECT_THAT(imported->spec.sweep().values(), ElementsAre("1", "4"));
  EXPECT_EQ(imported->started_unix, 1764456601);
  EXPECT_EQ(imported->finished_unix, 1764456700);
  EXPECT_FALSE(imported->failed);
  EXPECT_EQ(Keys(imported->samples), Keys(run.samples));
  // Units and directions come from the catalogue, as an agent's samples carry them.
  EXPECT_EQ(imported->samples[0].better(), v1::BETTER_HIGHER);
  EXPECT_FALSE(imported->samples[0].unit().empty());
  // Each iteration of each boot is a job of its own; iterations count from 1 per arm and value.
  std::set<int64_t> jobs;
  uint32_t max_iteration = 0;
  for (const v1::Sample& s : imported->samples) {
    jobs.insert(s.job_id());
    max_iteration = std::max(max_iteration, s.iteration());
  }
  EXPECT_EQ(jobs.size(), 24u);
  EXPECT_EQ(max_iteration, 6u);  // 3 per boot, 2 boots
}

TEST(ImportMmtestsResultsTest, RoundTripOfEveryOtherBenchmarkKeepsItsValues) {
  struct Case {
    std::string benchmark;
    std::map<std::string, std::string> params;
    std::vector<std::pair<std::string, double>> values;
  };
  const std::vector<Case> cases = {
      {"hackbench", {{"mode", "threads"}, {"ipc", "pipe"}, {"groups", "8"}}, {{"time", 0.123}}},
      {"netperf", {{"test", "tcp_rr"}, {"message_size", "64"}}, {{"trans_per_sec", 51234.5}}},
      {"netperf", {{"test", "udp_stream"}, {"message_size", "1024"}}, {{"mbit_per_sec", 812.25}}},
      {"pipetest", {}, {{"usecs_per_op", 5.125}, {"ops_per_sec", 195121}}},
      {"usemem", {{"processes", "4"}}, {{"elapsed_seconds", 71.5}}},
      {"pft",
       {{"threads", "2"}},
       {{"user_seconds", 0.01},
        {"system_seconds", 1.5},
        {"wall_seconds", 0.75},
        {"faults_per_cpu", 123456.5},
        {"faults_per_sec", 234567.25}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.benchmark);
    ExportRun run;
    run.run.set_id("9");
    run.run.set_state(v1::RUN_STATE_SUCCEEDED);
    run.run.mutable_spec()->set_benchmark(c.benchmark);
    for (const auto& [k, v] : c.params) (*run.run.mutable_spec()->mutable_params())[k] = v;
    run.run.mutable_spec()->add_arms()->set_name("base");
    for (int64_t job = 1; job <= 2; ++job) {
      for (const auto& [metric, value] : c.values) {
        v1::Sample& s = run.samples.emplace_back();
        s.set_job_id(job);
        s.set_arm("base");
        s.set_iteration(static_cast<uint32_t>(job));
        s.set_metric(metric);
        s.set_value(value * static_cast<double>(job));
        s.set_host("ivy1");
        s.set_boot_id("b");
      }
    }
    absl::StatusOr<MmtestsExport> exported = ExportMmtests(run);
    ASSERT_TRUE(exported.ok()) << exported.status();
    absl::StatusOr<ImportedRun> imported = ImportMmtestsResults(FilesOf(exported->files));
    ASSERT_TRUE(imported.ok()) << imported.status();
    EXPECT_EQ(imported->spec.benchmark(), c.benchmark);
    std::multiset<std::pair<std::string, double>> want, got;
    for (const v1::Sample& s : run.samples) want.emplace(s.metric(), s.value());
    for (const v1::Sample& s : imported->samples) got.emplace(s.metric(), s.value());
    EXPECT_EQ(got, want);
    for (const v1::Sample& s : imported->samples) EXPECT_EQ(s.param_name(), "");
  }
}

// mmtests' own layout, as run-mmtests.sh leaves it (no tlbfleet-host): ebizzy as its patched
// ebizzy prints, two thread counts, two iterations.
ImportFiles MmtestsEbizzyFixture() {
  return {
      {"6.1/iter-0/kernel.version", "Linux ivy1 6.1.0-13-amd64 #1 SMP PREEMPT_DYNAMIC\n"},
      {"6.1/iter-0/tests-timestamp",
       "start :: 1700000000\ntest begin :: ebizzy 1700000010\ntest end :: ebizzy 1700000500 0\n"},
      {"6.1/iter-0/ebizzy/logs/ebizzy-1-1.log", "3061 records/s 3061\n"},
      {"6.1/iter-0/ebizzy/logs/ebizzy-1-2.log", "3055 records/s 3055\n"},
      {"6.1/iter-0/ebizzy/logs/ebizzy-2-1.log", "6010 records/s 3004 3006\n"},
      {"6.1/iter-0/ebizzy/logs/ebizzy-2-2.log", "6002 records/s 3000 3002\n"},
      {"6.6/iter-0/kernel.version", "6.6.0\n"},
      {"6.6/iter-0/ebizzy/logs/ebizzy-1-1.log", "3161 records/s 3161\n"},
      {"6.6/iter-0/ebizzy/logs/ebizzy-1-2.log", "3155 records/s 3155\n"},
      {"6.6/iter-0/ebizzy/logs/ebizzy-2-1.log", "6210 records/s 3104 3106\n"},
      {"6.6/iter-0/ebizzy/logs/ebizzy-2-2.log", "6202 records/s 3100 3102\n"},
  };
}

TEST(ImportMmtestsResultsTest, MmtestsEbizzyLayoutWithWhatItRecordsAndNothingInvented) {
  absl::StatusOr<ImportedRun> imported = ImportMmtestsResults(MmtestsEbizzyFixture());
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->spec.benchmark(), "ebizzy");
  EXPECT_EQ(imported->spec.sweep().param(), "threads");
  EXPECT_EQ(imported->started_unix, 1700000000);
  EXPECT_EQ(imported->finished_unix, 1700000500);
  // 2 arms x 2 thread counts x 2 iterations, plus 1 or 2 per-thread figures each.
  size_t totals = 0;
  for (const v1::Sample& s : imported->samples) {
    if (!s.series().empty()) continue;
    ++totals;
    if (s.arm() == "6.1") {
      EXPECT_EQ(s.host(), "ivy1");
      EXPECT_EQ(s.kernel_release(), "6.1.0-13-amd64");
    } else {
      EXPECT_EQ(s.host(), "");  // uname -r alone: the host is unknown
      EXPECT_EQ(s.kernel_release(), "6.6.0");
    }
    EXPECT_EQ(s.boot_id(), "");  // mmtests does not record boots
    EXPECT_EQ(s.agent_id(), "");
    EXPECT_EQ(s.machine_id(), "");
    EXPECT_FALSE(s.ceiling_applied() || s.ceiling_observed());
  }
  EXPECT_EQ(totals, 8u);
  auto value_of = [&](const std::string& arm, const std::string& threads, uint32_t it,
                      const std::string& series) {
    for (const v1::Sample& s : imported->samples) {
      if (s.arm() == arm && s.param_value() == threads && s.iteration() == it &&
          s.series() == series) {
        return s.value();
      }
    }
    return -1.0;
  };
  EXPECT_EQ(value_of("6.6", "2", 1, ""), 6210);
  EXPECT_EQ(value_of("6.6", "2", 1, "thread1"), 3106);
  EXPECT_EQ(value_of("6.1", "1", 2, ""), 3055);
}

TEST(ImportMmtestsResultsTest, MmtestsHackbenchAndUsememLayouts) {
  const ImportFiles hackbench = {
      {"base/iter-0/hackbench-process-sockets/logs/hackbench-4",
       "# Running 'sched/messaging' benchmark:\n# 20 sender and receiver processes per group\n"
       "# 4 groups == 160 processes run\n\n     Total time: 0.089 [sec]\n"
       "# Running 'sched/messaging' benchmark:\n# 20 sender and receiver processes per group\n"
       "# 4 groups == 160 processes run\n\n     Total time: 0.091 [sec]\n"},
  };
  absl::StatusOr<ImportedRun> h = ImportMmtestsResults(hackbench);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->spec.benchmark(), "hackbench");
  EXPECT_EQ(h->spec.arms(0).params().at("mode"), "processes");
  EXPECT_EQ(h->spec.arms(0).params().at("ipc"), "socket");
  EXPECT_EQ(h->spec.params().at("groups"), "4");  // one group count: a parameter, not a sweep
  ASSERT_EQ(h->samples.size(), 2u);
  EXPECT_EQ(h->samples[0].metric(), "time");
  EXPECT_EQ(h->samples[0].value(), 0.089);
  EXPECT_EQ(h->samples[1].value(), 0.091);
  EXPECT_EQ(h->samples[1].iteration(), 2u);
  EXPECT_EQ(h->samples[0].better(), v1::BETTER_LOWER);

  const ImportFiles usemem = {
      {"a/iter-0/usemem/logs/time-4-1",
       "1.20user 30.50system 1:02.50elapsed 99%CPU (0avgtext+0avgdata 0maxresident)k\n"
       "0inputs+0outputs (0major+0minor)pagefaults 0swaps\n"},
  };
  absl::StatusOr<ImportedRun> u = ImportMmtestsResults(usemem);
  ASSERT_TRUE(u.ok()) << u.status();
  ASSERT_EQ(u->samples.size(), 1u);
  EXPECT_EQ(u->samples[0].metric(), "elapsed_seconds");
  EXPECT_DOUBLE_EQ(u->samples[0].value(), 62.5);
}

TEST(ImportMmtestsResultsTest, RefusesWhatIsNotAnMmtestsResultRoot) {
  absl::StatusOr<ImportedRun> r = ImportMmtestsResults({{"README", "hello\n"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("not an mmtests results directory"));

  r = ImportMmtestsResults({{"a/iter-0/sysbench/logs/x.log", "1\n"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("a/iter-0/sysbench"));
}

TEST(ImportMmtestsResultsTest, RefusesAMissingIterationDirectoryNamingIt) {
  ImportFiles files = MmtestsEbizzyFixture();
  files["6.1/iter-2/ebizzy/logs/ebizzy-1-1.log"] = "3000 records/s 3000\n";
  absl::StatusOr<ImportedRun> r = ImportMmtestsResults(files);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("6.1/iter-1: missing"));
}

TEST(ImportMmtestsResultsTest, ALogThatDoesNotParseNamesTheFileAndLine) {
  ImportFiles files = MmtestsEbizzyFixture();
  files["6.6/iter-0/ebizzy/logs/ebizzy-2-2.log"] = "starting\nfast records/s 3100 3102\n";
  absl::StatusOr<ImportedRun> r = ImportMmtestsResults(files);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("6.6/iter-0/ebizzy/logs/ebizzy-2-2.log:2:"));

  files = MmtestsEbizzyFixture();
  files["6.6/iter-0/ebizzy/logs/ebizzy-2-2.log"] = "Segmentation fault\n";
  r = ImportMmtestsResults(files);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("6.6/iter-0/ebizzy/logs/ebizzy-2-2.log: no"));

  files = MmtestsEbizzyFixture();
  files["6.1/iter-0/tests-timestamp"] = "start :: yesterday\n";
  r = ImportMmtestsResults(files);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("6.1/iter-0/tests-timestamp:1:"));
}

TEST(ImportMmtestsResultsTest, RefusesArmsOfDifferentBenchmarks) {
  ImportFiles files = MmtestsEbizzyFixture();
  files["7.0/iter-0/perfpipe/logs/benchlog-_-_-1"] = "     5.1 usecs/op\n";
  absl::StatusOr<ImportedRun> r = ImportMmtestsResults(files);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("one run is one benchmark"));
}

TEST(ImportMmtestsResultsTest, AFailedTestIsRecordedAsFailed) {
  ImportFiles files = MmtestsEbizzyFixture();
  files["6.1/iter-0/tests-timestamp"] =
      "start :: 1700000000\ntest begin :: ebizzy 1700000010\ntest end :: ebizzy 1700000500 1\n";
  absl::StatusOr<ImportedRun> r = ImportMmtestsResults(files);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->failed);
}

TEST(ImportLkpResultsTest, RoundTripOfOurExportKeepsSamplesArmsAndProvenance) {
  ExportRun run = EbizzyRun();
  absl::StatusOr<LkpExport> exported = ExportLkp(run);
  ASSERT_TRUE(exported.ok()) << exported.status();
  absl::StatusOr<ImportedRun> imported = ImportLkpResults(FilesOf(exported->files));
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->spec.benchmark(), "ebizzy");
  EXPECT_EQ(imported->spec.sweep().param(), "threads");
  EXPECT_EQ(imported->spec.arms_size(), 2);
  // LKP keeps the totals (its per-thread figures are derived min/max/stddev: left out, warned)
  // and, in job.yaml, where each ran; it records no ceiling.
  std::vector<v1::Sample> totals;
  for (v1::Sample s : run.samples) {
    if (!s.series().empty()) continue;
    s.set_ceiling_observed(false);
    s.set_ceiling(0);
    totals.push_back(s);
  }
  EXPECT_EQ(Keys(imported->samples), Keys(totals));
  EXPECT_THAT(absl::StrJoin(imported->warnings, "\n"), HasSubstr("per_thread"));
}

TEST(ImportLkpResultsTest, LkpResultRootOfItsOwnWithMatrixOnly) {
  const ImportFiles files = {
      {"ebizzy/200%-5x-10s/lkp-icl-2sp1/debian/x86_64-rhel/gcc-12/abcdef/matrix.json",
       "{\n  \"ebizzy.throughput\": [1105.96, 1110.5],\n  \"ebizzy.time.user\": [1, 2],\n"
       "  \"stats_source\": [\"a\", \"b\"]\n}\n"},
  };
  absl::StatusOr<ImportedRun> imported = ImportLkpResults(files);
  ASSERT_TRUE(imported.ok()) << imported.status();
  ASSERT_EQ(imported->samples.size(), 2u);
  EXPECT_EQ(imported->samples[0].metric(), "records_per_sec");
  EXPECT_EQ(imported->samples[1].value(), 1110.5);
  EXPECT_EQ(imported->samples[1].iteration(), 2u);
  EXPECT_EQ(imported->samples[0].host(), "");  // no job.yaml: unknown
}

TEST(ImportLkpResultsTest, RefusesBadInputNamingFileAndLine) {
  absl::StatusOr<ImportedRun> r = ImportLkpResults({{"notes.txt", "x"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("not an LKP result root"));

  r = ImportLkpResults({{"a/default/0/stats.json", "{\n  \"ebizzy.throughput\": [1,\n}\n"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("a/default/0/stats.json:"));

  r = ImportLkpResults({{"a/default/0/stats.json", "{\n  \"ebizzy.throughput\": \"fast\"\n}\n"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("a/default/0/stats.json:2: ebizzy.throughput"));

  r = ImportLkpResults({{"a/default/0/stats.json", "{\"ebizzy.throughput\": 1}"},
                        {"a/default/2/stats.json", "{\"ebizzy.throughput\": 2}"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("a/default/1: missing"));
}

TEST(ImportResultsTest, UnknownFormatAndDirectoryReading) {
  EXPECT_EQ(ImportResults("csv", {}).status().code(), absl::StatusCode::kInvalidArgument);
  TempDir dir("tlbfleet-import");
  const std::string root = dir.path();
  EXPECT_THAT(ReadImportDirectory(root + "/nope").status().message(), HasSubstr("DIR:"));
  std::filesystem::create_directories(root + "/a/iter-0/ebizzy/logs");
  absl::Status w =
      WriteExportFiles(root, {{"a/iter-0/ebizzy/logs/ebizzy-1-1.log", "1 records/s\n"}});
  ASSERT_TRUE(w.ok()) << w;
  absl::StatusOr<ImportFiles> files = ReadImportDirectory(root);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(files->size(), 1u);
  EXPECT_EQ(files->begin()->first, "a/iter-0/ebizzy/logs/ebizzy-1-1.log");
  // The digest's input depends on paths and bytes, not on where the directory is.
  ImportFiles other = *files;
  EXPECT_EQ(ImportDigestInput(other), ImportDigestInput(*files));
  other.begin()->second += " ";
  EXPECT_NE(ImportDigestInput(other), ImportDigestInput(*files));
}

// --- joining a series ---

ImportFiles OneArmOfTheEbizzyFixture(const std::string& arm) {
  ImportFiles files;
  for (const auto& [path, content] : MmtestsEbizzyFixture()) {
    if (path.rfind(arm + "/", 0) == 0) files[path] = content;
  }
  return files;
}

ImportJoin IvyJoin() {
  ImportJoin join;
  join.series_id = "7";
  join.benchmark = "ebizzy";
  join.microarch = "IvyBridge";
  join.boot_entry = "distro-latest";
  join.config = "ceiling=33 chunks=4 seconds=1";
  return join;
}

TEST(ImportJoinTest, TheJoinGivesTheSeriesHostClassAndConfigurationAndSaysItWasDeclared) {
  ImportFiles files = OneArmOfTheEbizzyFixture("6.1");
  files[kImportJoinPath] = FormatImportJoin(IvyJoin());
  absl::StatusOr<ImportedRun> run = ImportResults("mmtests", files);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->spec.arms_size(), 1);
  const v1::ArmSpec& arm = run->spec.arms(0);
  EXPECT_EQ(arm.ceiling(), "33");
  EXPECT_EQ(arm.boot_entry(), "distro-latest");
  EXPECT_EQ(arm.params().at("chunks"), "4");
  EXPECT_EQ(arm.params().at("seconds"), "1");
  EXPECT_EQ(arm.params().count("threads"), 0u);  // still the sweep
  EXPECT_EQ(run->spec.sweep().param(), "threads");
  for (const v1::Sample& s : run->samples) {
    EXPECT_EQ(s.microarch(), "IvyBridge");
    EXPECT_EQ(s.boot_entry(), "distro-latest");
    EXPECT_EQ(s.kernel_release(), "6.1.0-13-amd64");  // what the files say stays
    EXPECT_EQ(s.boot_id(), "");                       // and what they do not stays unknown
  }
  EXPECT_THAT(run->declared, HasSubstr("joined series 7"));
  EXPECT_THAT(run->declared, HasSubstr("declared at import"));
  // The same results with and without a join are the same content: one run.
  EXPECT_EQ(ImportDigestInput(files), ImportDigestInput(OneArmOfTheEbizzyFixture("6.1")));
  // Without a join nothing is declared.
  absl::StatusOr<ImportedRun> plain = ImportResults("mmtests", OneArmOfTheEbizzyFixture("6.1"));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->declared, "");
  EXPECT_EQ(plain->samples.front().microarch(), "");
}

TEST(ImportJoinTest, AJoinThatCannotHoldIsRefusedNamingSeries) {
  auto refused = [](ImportFiles files, const ImportJoin& join) {
    files[kImportJoinPath] = FormatImportJoin(join);
    absl::StatusOr<ImportedRun> run = ImportResults("mmtests", files);
    EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(run.status().message());
  };
  // Two arms would be two points of one run in one series.
  EXPECT_THAT(
      refused(MmtestsEbizzyFixture(), IvyJoin()),
      AllOf(HasSubstr("series: series 7"), HasSubstr("2 arms (6.1, 6.6)"), HasSubstr("--arm")));
  ImportJoin other = IvyJoin();
  other.benchmark = "pft";
  EXPECT_THAT(refused(OneArmOfTheEbizzyFixture("6.1"), other),
              HasSubstr("is a history of pft; the files hold ebizzy"));
  ImportJoin swept = IvyJoin();
  swept.config = "threads=4";
  EXPECT_THAT(refused(OneArmOfTheEbizzyFixture("6.1"), swept),
              HasSubstr("fixes threads=4; the files sweep threads"));
  ImportJoin built = IvyJoin();
  built.config = "kernel_config=defconfig";
  EXPECT_THAT(refused(OneArmOfTheEbizzyFixture("6.1"), built), HasSubstr("built from source"));
  // The files' own microarchitecture is never overridden.
  ImportFiles zen = OneArmOfTheEbizzyFixture("6.1");
  zen["6.1/iter-0/tlbfleet-host"] = "microarch :: Zen3\n";
  EXPECT_THAT(refused(zen, IvyJoin()),
              HasSubstr("was measured on IvyBridge; the files record Zen3"));
  // A join file that does not parse names itself and the line.
  ImportFiles bad = OneArmOfTheEbizzyFixture("6.1");
  bad[kImportJoinPath] = "benchmark :: ebizzy\ncolour: red\n";
  EXPECT_THAT(ImportResults("mmtests", bad).status().message(),
              HasSubstr(".tlbfleet-join:2: not \"KEY :: VALUE\""));
}

TEST(ImportJoinTest, TheJoinFileRoundTrips) {
  absl::StatusOr<ImportJoin> join = ParseImportJoin(FormatImportJoin(IvyJoin()));
  ASSERT_TRUE(join.ok()) << join.status();
  EXPECT_EQ(join->series_id, "7");
  EXPECT_EQ(join->microarch, "IvyBridge");
  EXPECT_EQ(join->boot_entry, "distro-latest");
  EXPECT_EQ(join->config, "ceiling=33 chunks=4 seconds=1");
  ImportJoin empty_parts = IvyJoin();
  empty_parts.boot_entry = "";
  empty_parts.config = "";
  join = ParseImportJoin(FormatImportJoin(empty_parts));
  ASSERT_TRUE(join.ok()) << join.status();
  EXPECT_EQ(join->boot_entry, "");
  EXPECT_EQ(join->config, "");
}

}  // namespace
}  // namespace tlbfleet::report
