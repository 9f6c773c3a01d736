#include "controller/report/export_mmtests.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

namespace v1 = tlbfleet::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A run of `benchmark` with these arms (name -> params), created at 1764456601 and finished
// at 1764456700.
ExportRun MakeRun(
    const std::string& benchmark,
    const std::vector<std::pair<std::string, std::map<std::string, std::string>>>& arms,
    std::map<std::string, std::string> params = {}) {
  ExportRun run;
  run.run.set_id("7");
  run.run.set_state(v1::RUN_STATE_SUCCEEDED);
  run.run.set_created_unix(1764456601);
  run.run.set_finished_unix(1764456700);
  v1::RunSpec* spec = run.run.mutable_spec();
  spec->set_benchmark(benchmark);
  for (const auto& [k, v] : params) (*spec->mutable_params())[k] = v;
  for (const auto& [name, arm_params] : arms) {
    v1::ArmSpec* arm = spec->add_arms();
    arm->set_name(name);
    for (const auto& [k, v] : arm_params) (*arm->mutable_params())[k] = v;
  }
  return run;
}

void Add(ExportRun* run, const std::string& arm, int64_t job, uint32_t iteration,
         const std::string& metric, double value, const std::string& param_name = "",
         const std::string& param_value = "", const std::string& series = "",
         const std::string& boot = "boot-a") {
  v1::Sample s;
  s.set_run_id("7");
  s.set_arm(arm);
  s.set_job_id(job);
  s.set_iteration(iteration);
  s.set_metric(metric);
  s.set_value(value);
  s.set_param_name(param_name);
  s.set_param_value(param_value);
  s.set_series(series);
  s.set_host("ivy1");
  s.set_agent_id("0d60fd02");
  s.set_machine_id("4c4c4544");
  s.set_boot_id(boot);
  s.set_kernel_release("6.1.0-13-amd64");
  s.set_microarch("IvyBridge");
  s.set_ceiling(33);
  s.set_ceiling_observed(true);
  run->samples.push_back(s);
}

std::map<std::string, std::string> Files(const MmtestsExport& e) {
  std::map<std::string, std::string> files;
  for (const ExportFile& f : e.files) files[f.path] = f.content;
  return files;
}

TEST(ExportMmtestsTest, EbizzyLogsAreWhatMmtestsPatchedEbizzyPrints) {
  // mmtests' ebizzy-bench: ebizzy -t N > ebizzy-N-ITERATION.log; its patched ebizzy prints
  // "TOTAL records/s" and each thread's records/s on one line.
  ExportRun run = MakeRun("ebizzy", {{"base", {}}, {"c512", {}}});
  Add(&run, "base", 1, 0, "records_per_sec", 1234.5, "threads", "2");
  Add(&run, "base", 1, 0, "records_per_sec", 617.25, "threads", "2", "thread0");
  Add(&run, "base", 1, 0, "records_per_sec", 617.25, "threads", "2", "thread1");
  Add(&run, "base", 1, 1, "records_per_sec", 1000000, "threads", "2");
  Add(&run, "base", 2, 0, "records_per_sec", 700, "threads", "1");
  Add(&run, "c512", 3, 0, "records_per_sec", 1300, "threads", "1");
  absl::StatusOr<MmtestsExport> e = ExportMmtests(run);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT(e->names, ElementsAre("base", "c512"));
  EXPECT_THAT(e->benchmarks, ElementsAre("ebizzy", "ebizzy"));
  std::map<std::string, std::string> files = Files(*e);
  EXPECT_EQ(files["base/iter-0/ebizzy/logs/ebizzy-2-1.log"], "1234.5 records/s 617.25 617.25\n");
  // Never "1e+06": the parsers read digits.
  EXPECT_EQ(files["base/iter-0/ebizzy/logs/ebizzy-2-2.log"], "1000000 records/s\n");
  EXPECT_EQ(files["base/iter-0/ebizzy/logs/ebizzy-1-1.log"], "700 records/s\n");
  EXPECT_EQ(files["c512/iter-0/ebizzy/logs/ebizzy-1-1.log"], "1300 records/s\n");
  EXPECT_EQ(files["base/iter-0/kernel.version"], "Linux ivy1 6.1.0-13-amd64\n");
  EXPECT_EQ(files["base/iter-0/tests-timestamp"],
            "start :: 1764456601\ntest begin :: ebizzy 1764456601\n"
            "test end :: ebizzy 1764456700 0\n");
  EXPECT_THAT(files["base/iter-0/tlbfleet-host"], HasSubstr("machine_id :: 4c4c4544\n"));
  EXPECT_THAT(files["base/iter-0/tlbfleet-host"],
              HasSubstr("tlb_single_page_flush_ceiling :: 33 (observed)\n"));
  EXPECT_THAT(files["base/iter-0/tlbfleet-host"], HasSubstr("commit :: unknown\n"));
}

TEST(ExportMmtestsTest, EachBootIsAnIterDirectoryAndExcludedSamplesAreLeftOut) {
  ExportRun run = MakeRun("ebizzy", {{"base", {}}});
  Add(&run, "base", 1, 0, "records_per_sec", 10, "", "", "", "boot-a");
  Add(&run, "base", 2, 0, "records_per_sec", 20, "", "", "", "boot-b");
  Add(&run, "base", 3, 1, "records_per_sec", 30, "", "", "", "boot-a");
  Add(&run, "base", 4, 0, "records_per_sec", 99, "", "", "", "boot-c");
  run.samples.back().set_excluded("slot 0 restarted");
  absl::StatusOr<MmtestsExport> e = ExportMmtests(run);
  ASSERT_TRUE(e.ok()) << e.status();
  std::map<std::string, std::string> files = Files(*e);
  // No sweep: the thread count the arm ran with (the catalogue's default, 1) is the factor.
  EXPECT_EQ(files["base/iter-0/ebizzy/logs/ebizzy-1-1.log"], "10 records/s\n");
  EXPECT_EQ(files["base/iter-0/ebizzy/logs/ebizzy-1-2.log"], "30 records/s\n");
  EXPECT_EQ(files["base/iter-1/ebizzy/logs/ebizzy-1-1.log"], "20 records/s\n");
  EXPECT_FALSE(files.count("base/iter-2/kernel.version"));
  for (const auto& [path, content] : files) EXPECT_THAT(content, ::testing::Not(HasSubstr("99")));
}

TEST(ExportMmtestsTest, HackbenchIsPerfBenchSchedMessagingAppended) {
  ExportRun run = MakeRun("hackbench", {{"base", {{"ipc", "pipe"}}}}, {{"fds", "20"}});
  Add(&run, "base", 1, 0, "time", 0.123, "groups", "4");
  Add(&run, "base", 1, 1, "time", 0.25, "groups", "4");
  absl::StatusOr<MmtestsExport> e = ExportMmtests(run);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT(e->benchmarks, ElementsAre("hackbench-process-pipes"));
  const std::string one =
      "# Running 'sched/messaging' benchmark:\n# 20 sender and receiver processes per group\n"
      "# 4 groups == 160 processes run\n\n     Total time: ";
  EXPECT_EQ(Files(*e)["base/iter-0/hackbench-process-pipes/logs/hackbench-4"],
            one + "0.123 [sec]\n" + one + "0.25 [sec]\n");
}

TEST(ExportMmtestsTest, NetperfStreamAndRrAreNetperfReports) {
  ExportRun stream = MakeRun("netperf", {{"base", {}}}, {{"test", "tcp_stream"}, {"seconds", "2"}});
  Add(&stream, "base", 1, 0, "mbit_per_sec", 12345.67, "message_size", "64");
  absl::StatusOr<MmtestsExport> e = ExportMmtests(stream);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT(e->benchmarks, ElementsAre("netperf-ipv4-tcp"));
  std::map<std::string, std::string> files = Files(*e);
  EXPECT_EQ(files["base/iter-0/netperf-ipv4-tcp/logs/protocols"], "TCP_STREAM\n");
  EXPECT_EQ(files["base/iter-0/netperf-ipv4-tcp/logs/units-TCP_STREAM"], "m\n");
  EXPECT_EQ(files["base/iter-0/netperf-ipv4-tcp/logs/TCP_STREAM-64.1"],
            "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 127.0.0.1 () "
            "port 0 AF_INET\n"
            "Recv   Send    Send\nSocket Socket  Message  Elapsed\n"
            "Size   Size    Size     Time     Throughput\n"
            "bytes  bytes   bytes    secs.    10^6bits/sec\n\n"
            "     0      0     64     2.00 12345.67\n");

  ExportRun rr = MakeRun("netperf", {{"base", {}}}, {{"test", "udp_rr"}, {"message_size", "1"}});
  Add(&rr, "base", 1, 0, "trans_per_sec", 45000.5);
  e = ExportMmtests(rr);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT(e->benchmarks, ElementsAre("netperf-ipv4-udp-rr"));
  files = Files(*e);
  EXPECT_EQ(files["base/iter-0/netperf-ipv4-udp-rr/logs/units-UDP_RR"], "k\n");
  EXPECT_EQ(files["base/iter-0/netperf-ipv4-udp-rr/logs/UDP_RR-1.1"],
            "MIGRATED UDP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to "
            "127.0.0.1 () port 0 AF_INET : first burst 0\n"
            "Local /Remote\nSocket Size   Request  Resp.   Elapsed  Trans.\n"
            "Send   Recv   Size     Size    Time     Rate\n"
            "bytes  Bytes  bytes    bytes   secs.    per sec\n\n"
            "0      0      1        1       10.00    45000.5\n"
            "0      0     \n");
}

// What extract-report.pl (mmtests' netperf parser) reads from one file: lines without a
// letter, the last field of the first with more than four (TCP/RR), or of six (UDP send).
double NetperfParse(const std::string& text, bool udp_stream) {
  double send = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.find_first_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") !=
        absl::string_view::npos) {
      continue;
    }
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.empty()) continue;
    if ((!udp_stream && f.size() > 4) || (udp_stream && f.size() == 6)) {
      EXPECT_TRUE(absl::SimpleAtod(f.back(), &send)) << line;
    }
  }
  return send;
}

TEST(ExportMmtestsTest, NetperfValuesReadBackExactlyAsMmtestsParsesThem) {
  for (const std::string test : {"tcp_stream", "udp_stream", "tcp_rr"}) {
    const std::string metric = test == "tcp_rr" ? "trans_per_sec" : "mbit_per_sec";
    ExportRun run = MakeRun("netperf", {{"base", {}}}, {{"test", test}});
    Add(&run, "base", 1, 0, metric, 9413.123456789012, "message_size", "16384");
    absl::StatusOr<MmtestsExport> e = ExportMmtests(run);
    ASSERT_TRUE(e.ok()) << e.status();
    for (const ExportFile& f : e->files) {
      if (f.path.find("-16384.1") == std::string::npos) continue;
      EXPECT_EQ(NetperfParse(f.content, test == "udp_stream"), 9413.123456789012) << test;
    }
  }
}

TEST(ExportMmtestsTest, PipetestIsPerfpipeBenchlog) {
  ExportRun run = MakeRun("pipetest", {{"base", {}}}, {{"loops", "100000"}});
  Add(&run, "base", 1, 0, "usecs_per_op", 5.123456);
  Add(&run, "base", 1, 0, "ops_per_sec", 195180.6);
  absl::StatusOr<MmtestsExport> e = ExportMmtests(run);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT(e->benchmarks, ElementsAre("perfpipe"));
  EXPECT_EQ(Files(*e)["base/iter-0/perfpipe/logs/benchlog-_-_-1"],
            "# Running 'sched/pipe' benchmark:\n"
            "# Executed 100000 pipe operations between two processes\n\n"
            "     Total time: 0.512 [sec]\n\n"
            "      5.123456 usecs/op\n"
            "        195180 ops/sec\n");
}

TEST(ExportMmtestsTest, UsememIsGnuTimesReport) {
  ExportRun run = MakeRun("usemem", {{"base", {}}}, {{"processes", "2"}});
  Add(&run, "base", 1, 0, "elapsed_seconds", 1.25);
  Add(&run, "base", 1, 1, "elapsed_seconds", 75.5);
  absl::StatusOr<MmtestsExport> e = ExportMmtests(run);
  ASSERT_TRUE(e.ok()) << e.status();
  std::map<std::string, std::string> files = Files(*e);
  const std::string rest =
      "elapsed 0%CPU (0avgtext+0avgdata 0maxresident)k\n"
      "0inputs+0outputs (0major+0minor)pagefaults 0swaps\n";
  EXPECT_EQ(files["base/iter-0/usemem/logs/time-2-1"], "0.00user 0.00system 0:01.25" + rest);
  EXPECT_EQ(files["base/iter-0/usemem/logs/time-2-2"], "0.00user 0.00system 1:15.5" + rest);
}

TEST(ExportMmtestsTest, PftAndTlbflushAreWrittenAsMmtestsParsedThemBeforeRemovingThem) {
  ExportRun pft = MakeRun("pft", {{"base", {}}}, {{"size_mb", "2048"}});
  Add(&pft, "base", 1, 0, "faults_per_sec", 808136.012, "threads", "2");
  Add(&pft, "base", 1, 0, "faults_per_cpu", 903296.946, "threads", "2");
  Add(&pft, "base", 1, 0, "wall_seconds", 0.04, "threads", "2");
  Add(&pft, "base", 1, 0, "system_seconds", 0.03, "threads", "2");
  Add(&pft, "base", 1, 0, "user_seconds", 0.01, "threads", "2");
  absl::StatusOr<MmtestsExport> e = ExportMmtests(pft);
  ASSERT_TRUE(e.ok()) << e.status();
  const std::string row = Files(*e)["base/iter-0/pft/logs/pft-2.log"];
  EXPECT_EQ(row,
            "  Gb  Thr CLine   User      System     Wall    flt/cpu/s fault/wsec\n"
            "    2    2    1     0.01s     0.03s     0.04s 903296.946 808136.012\n");
  // ExtractPft: drop every 's', skip lines with a letter, split on blanks (a leading empty
  // field), faults/sec is the 9th field.
  std::vector<std::string> lines = absl::StrSplit(row, '\n');
  ASSERT_GE(lines.size(), 2u);
  std::string data = lines[1];
  data.erase(std::remove(data.begin(), data.end(), 's'), data.end());
  std::vector<std::string> fields = absl::StrSplit(data, absl::ByAnyChar(" "));
  std::vector<std::string> perl;  // Perl's split(/\s+/) keeps one leading empty field
  perl.push_back("");
  for (const std::string& f : fields) {
    if (!f.empty()) perl.push_back(f);
  }
  ASSERT_EQ(perl.size(), 9u);
  EXPECT_EQ(perl[7], "903296.946");
  EXPECT_EQ(perl[8], "808136.012");

  ExportRun tlb = MakeRun("tlbflush", {{"base", {}}}, {{"entries", "33"}});
  Add(&tlb, "base", 1, 0, "cost_ns", 12.9, "threads", "4");
  Add(&tlb, "base", 1, 0, "flush_ms", 38.2, "threads", "4");
  Add(&tlb, "base", 1, 0, "flush_ns", 9350.7, "threads", "4");
  Add(&tlb, "base", 1, 0, "accesses_per_thread_ms", 1072043.2, "threads", "4");
  e = ExportMmtests(tlb);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(Files(*e)["base/iter-0/tlbflush/logs/tlbflush-4.log"],
            "munmap use 38ms 9350ns/time, memory access uses 1072043 times/thread/ms, cost "
            "12ns/time nr_entries 33\n");
}

TEST(ExportMmtestsTest, ArmsThatDifferInTheFactorShareTheNoFactorKey) {
  // mmtests compares rows of one key: usemem with 1 process against 2 would be two rows
  // ("Elapsed-1", "Elapsed-2") each missing an arm.
  ExportRun run = MakeRun("usemem", {{"one", {}}, {"two", {{"processes", "2"}}}});
  Add(&run, "one", 1, 0, "elapsed_seconds", 1.5);
  Add(&run, "two", 2, 0, "elapsed_seconds", 2.5);
  absl::StatusOr<MmtestsExport> e = ExportMmtests(run);
  ASSERT_TRUE(e.ok()) << e.status();
  std::map<std::string, std::string> files = Files(*e);
  EXPECT_TRUE(files.count("one/iter-0/usemem/logs/time-_-1"));
  EXPECT_TRUE(files.count("two/iter-0/usemem/logs/time-_-1"));
  ASSERT_EQ(e->warnings.size(), 1u);
  EXPECT_THAT(e->warnings[0], HasSubstr("the arms differ in processes (1, 2)"));
}

TEST(ExportMmtestsTest, RefusesWhatMmtestsCannotRead) {
  ExportRun run = MakeRun("nosuch", {{"base", {}}});
  Add(&run, "base", 1, 0, "x", 1);
  absl::StatusOr<MmtestsExport> e = ExportMmtests(run);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("format: mmtests has no parser"));

  ExportRun comma = MakeRun("ebizzy", {{"a,b", {}}});
  Add(&comma, "a,b", 1, 0, "records_per_sec", 1);
  e = ExportMmtests(comma);
  EXPECT_THAT(e.status().message(), HasSubstr("arm: \"a,b\""));

  ExportRun dash = MakeRun("ebizzy", {{"base", {}}});
  Add(&dash, "base", 1, 0, "records_per_sec", 1, "mode", "a-b");
  e = ExportMmtests(dash);
  EXPECT_THAT(e.status().message(), HasSubstr("sweep.mode"));

  ExportRun empty = MakeRun("ebizzy", {{"base", {}}});
  e = ExportMmtests(empty);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(e.status().message(), HasSubstr("RUN: run 7 has no samples"));
}

TEST(ExportMmtestsTest, AJobWithoutItsPrimaryMetricIsAWarningNotALine) {
  ExportRun run = MakeRun("ebizzy", {{"base", {}}});
  Add(&run, "base", 1, 0, "records_per_sec", 5);
  Add(&run, "base", 2, 0, "something_else", 6);
  absl::StatusOr<MmtestsExport> e = ExportMmtests(run);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->warnings.size(), 1u);
  EXPECT_THAT(e->warnings[0], HasSubstr("job 2 iteration 0: no finite records_per_sec"));
}

}  // namespace
}  // namespace tlbfleet::report
