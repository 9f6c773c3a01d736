#include "controller/cli/import_mmtests.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "controller/scheduler/expand.h"
#include "controller/scheduler/run_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

std::string Fixture(const std::string& name) {
  const std::filesystem::path path = std::filesystem::path(__FILE__).parent_path() / ".." / ".." /
                                     "tests" / "fixtures" / "mmtests" / name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Every document of the import, parsed as a run spec.
std::vector<v1::RunSpec> Specs(const MmtestsImport& imported) {
  std::vector<v1::RunSpec> out;
  for (const YAML::Node& doc : YAML::LoadAll(imported.yaml)) {
    absl::StatusOr<v1::RunSpec> spec = scheduler::ParseRunSpec(YAML::Dump(doc), "import");
    EXPECT_TRUE(spec.ok()) << spec.status() << "\n" << imported.yaml;
    if (spec.ok()) out.push_back(*spec);
  }
  return out;
}

std::vector<std::string> Sweep(const v1::RunSpec& spec, int64_t ncpus) {
  scheduler::HostTopology t;
  t.cpus = ncpus;
  absl::StatusOr<v1::SweepSpec> sweep = scheduler::ResolveSweepForHost(spec.sweep(), t);
  EXPECT_TRUE(sweep.ok()) << sweep.status();
  return sweep.ok() ? scheduler::SweepValues(*sweep) : std::vector<std::string>{};
}

TEST(ImportMmtestsTest, TlbflushPerformance) {
  absl::StatusOr<MmtestsImport> imported =
      ImportMmtestsConfig(Fixture("config-tlbflush-performance"), "config-tlbflush");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = Specs(*imported);
  ASSERT_EQ(specs.size(), 3u);

  EXPECT_EQ(specs[0].benchmark(), "pft");
  EXPECT_EQ(specs[0].params().at("size_mb"), "512");
  EXPECT_EQ(specs[0].iterations(), 10u);
  EXPECT_EQ(specs[0].sweep().max_expr(), "ncpus");

  EXPECT_EQ(specs[1].benchmark(), "ebizzy");
  EXPECT_EQ(specs[1].params().at("seconds"), "10");
  // mmtests' shellpack runs ebizzy without -m: the allocator path of the published numbers.
  EXPECT_EQ(specs[1].params().at("mmap"), "auto");
  EXPECT_EQ(specs[1].iterations(), 100u);
  EXPECT_EQ(specs[1].sweep().policy(), "topology");
  EXPECT_EQ(specs[1].sweep().max_expr(), "ncpus*2");
  EXPECT_THAT(Sweep(specs[1], 4), ElementsAre("1", "4", "8"));

  EXPECT_EQ(specs[2].benchmark(), "tlbflush");
  EXPECT_EQ(specs[2].params().count("entries"), 0u);
  EXPECT_EQ(specs[2].param_policies().at("entries").policy(), "mmtests");
  EXPECT_EQ(specs[2].param_policies().at("entries").max(), 512);
  EXPECT_EQ(specs[2].iterations(), 320u);
  EXPECT_EQ(specs[2].sweep().policy(), "fib");
  EXPECT_THAT(Sweep(specs[2], 4), ElementsAre("1", "2", "3", "5", "8"));

  // Not silently dropped: the lines and variables no run spec uses.
  EXPECT_THAT(imported->warnings,
              ElementsAre(HasSubstr("config-tlbflush:11: not an assignment (. $SHELLPACK_INCLUDE"),
                          StartsWith("config-tlbflush:12: not an assignment (get_numa_details)"),
                          StartsWith("config-tlbflush:15: RUN_MONITOR: not used"),
                          StartsWith("config-tlbflush:16: MONITORS_ALWAYS: not used"),
                          StartsWith("config-tlbflush:23: PFT_USE_PROCESSES: not used"),
                          StartsWith("config-tlbflush:24: PFT_PAGESIZES: not used")));
}

TEST(ImportMmtestsTest, SchedulerPerformance) {
  absl::StatusOr<MmtestsImport> imported =
      ImportMmtestsConfig(Fixture("config-scheduler-performance"), "sched");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = Specs(*imported);
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].name(), "hackbench-pipes");
  EXPECT_EQ(specs[0].params().at("ipc"), "pipe");
  EXPECT_EQ(specs[0].params().at("loops"), "1000");
  EXPECT_EQ(specs[1].params().at("ipc"), "socket");
  EXPECT_EQ(specs[1].iterations(), 5u);
  EXPECT_THAT(Sweep(specs[1], 16), ElementsAre("1", "3", "8", "13"));
  EXPECT_EQ(specs[2].benchmark(), "pipetest");
  EXPECT_EQ(specs[2].iterations(), 30u);
  EXPECT_THAT(imported->warnings, IsEmpty());
}

TEST(ImportMmtestsTest, NetworkPerformance) {
  absl::StatusOr<MmtestsImport> imported =
      ImportMmtestsConfig(Fixture("config-network-performance"), "net");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = Specs(*imported);
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_EQ(specs[0].params().at("test"), "udp_stream");
  EXPECT_THAT(scheduler::SweepValues(specs[0].sweep()),
              ElementsAre("64", "128", "256", "1024", "2048", "3312", "4096", "8192", "16384"));
  EXPECT_EQ(specs[1].params().at("test"), "tcp_stream");
  EXPECT_EQ(specs[2].params().at("test"), "udp_rr");
  EXPECT_TRUE(specs[2].sweep().param().empty());
  EXPECT_EQ(specs[3].params().at("test"), "tcp_rr");
  EXPECT_EQ(specs[3].params().at("seconds"), "10");
  EXPECT_EQ(specs[3].iterations(), 5u);
  EXPECT_EQ(specs[3].params().at("message_size"), "1");  // netperf's rr default, as mmtests runs it
  EXPECT_THAT(imported->warnings,
              ElementsAre(StartsWith("net:4: NETPERF_BUFFER_SIZES: an rr test runs 1-byte"),
                          StartsWith("net:7: NETPERF_NET_DEVICE: not used")));
}

TEST(ImportMmtestsTest, ReportsWhatItCannotImportAndNeverRunsIt) {
  absl::StatusOr<MmtestsImport> imported = ImportMmtestsConfig(Fixture("config-awkward"), "awk");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = Specs(*imported);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].benchmark(), "ebizzy");
  EXPECT_EQ(specs[0].params().at("mmap"), "auto");
  EXPECT_EQ(specs[0].sweep().min(), 4);  // $BASE_THREADS
  EXPECT_EQ(specs[0].sweep().max_expr(), "(ncpus+(4))*2");
  EXPECT_EQ(specs[0].params().count("seconds"), 0u);
  EXPECT_EQ(specs[0].iterations(), 1u);
  EXPECT_EQ(specs[1].benchmark(), "tlbflush");
  EXPECT_EQ(specs[1].sweep().max_expr(), "2*ncpus");  // the default, MEMTOTAL is unknown
  EXPECT_THAT(
      imported->warnings,
      ElementsAre(
          "awk:2: MMTESTS: benchmark \"dbench4\" has no tlbfleet workload; not imported",
          "awk:6: EBIZZY_DURATION: runs a command, and import-mmtests never runs the config; "
          "left at the default",
          "awk:7: EBIZZY_ITERATIONS: depends on NUMCPUS, which only a sweep bound may; left at "
          "the default",
          "awk:8: TLBFLUSH_MAX_THREADS: uses MEMTOTAL_BYTES, which tlbfleet cannot know before "
          "the job runs; left at the default",
          "awk:9: TLBFLUSH_MAX_ENTRIES: uses UNDEFINED_ENTRIES, which the config does not set; "
          "left at the default",
          "awk:10: DBENCH_DURATION: not used by any imported benchmark; ignored",
          StartsWith("awk:11: not an assignment (if [ \"$NUMCPUS\" -gt 8 ]; then)"),
          "awk:12: EBIZZY_ITERATIONS: set inside a conditional or a loop, which import-mmtests "
          "does not evaluate; ignored",
          StartsWith("awk:13: not an assignment (fi)")));
}

TEST(ImportMmtestsTest, RefusesAConfigWithoutBenchmarks) {
  absl::StatusOr<MmtestsImport> none = ImportMmtestsConfig("export FOO=1\n", "c");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "c: no MMTESTS variable: which benchmarks does it run?");
  absl::StatusOr<MmtestsImport> unknown = ImportMmtestsConfig("export MMTESTS=dbench4\n", "c");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(std::string(unknown.status().message()),
              HasSubstr("none of the benchmarks in MMTESTS"));
}

TEST(ImportMmtestsTest, OutOfRangeValuesAreReportedNotEmitted) {
  absl::StatusOr<MmtestsImport> imported = ImportMmtestsConfig(
      "export MMTESTS=\"tlbflush pipetest\"\nexport TLBFLUSH_MAX_ENTRIES=0\n", "c");
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_THAT(Specs(*imported), ::testing::SizeIs(1));
  EXPECT_THAT(imported->warnings,
              ElementsAre(StartsWith("c:1: MMTESTS: benchmark \"tlbflush\" not imported: "
                                     "params.entries.max: must be an integer in [1, ")));
}

// Today's mmtests names (configs/config-network-netperf-*-unbound): IPv6 on ::1, rr tests
// with netperf's 1-byte messages, and netperf-unix refused for a reason, not as unknown.
TEST(ImportMmtestsTest, TodaysNetperfNames) {
  absl::StatusOr<MmtestsImport> imported =
      ImportMmtestsConfig(Fixture("config-netperf-today"), "n");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = Specs(*imported);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name(), "netperf-ipv4-tcp");
  EXPECT_EQ(specs[0].params().at("test"), "tcp_stream");
  EXPECT_EQ(specs[0].params().count("server"), 0u);  // 127.0.0.1, the default
  EXPECT_THAT(scheduler::SweepValues(specs[0].sweep()), ElementsAre("256", "4096"));
  EXPECT_EQ(specs[0].iterations(), 7u);
  EXPECT_EQ(specs[1].name(), "netperf-ipv6-udp-rr");
  EXPECT_EQ(specs[1].params().at("test"), "udp_rr");
  EXPECT_EQ(specs[1].params().at("server"), "::1");
  EXPECT_EQ(specs[1].params().at("message_size"), "1");
  EXPECT_TRUE(specs[1].sweep().param().empty());
  EXPECT_THAT(
      imported->warnings,
      ElementsAre(
          "n:3: MMTESTS: benchmark \"netperf-unix\" not imported: it is netperf's "
          "STREAM_STREAM over AF_UNIX sockets, and tlbfleet's netperf has only TCP and UDP "
          "tests (tcp_stream, udp_stream, tcp_rr, udp_rr)",
          StartsWith("n:5: RUN_MONITOR: not used"),
          StartsWith("n:6: NETPERF_BUFFER_SIZES: an rr test runs 1-byte requests"),
          StartsWith("n:8: NETPERF_CONFIDENCE_MIN: netperf's own confidence repetitions"),
          StartsWith("n:9: NETPERF_CONFIDENCE_LEVEL: netperf's own confidence repetitions")));
}

TEST(ImportMmtestsTest, TodaysHackbenchNamesAndNumLogicalCpus) {
  absl::StatusOr<MmtestsImport> imported =
      ImportMmtestsConfig(Fixture("config-hackbench-today"), "h");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = Specs(*imported);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name(), "hackbench-process-pipes");
  EXPECT_EQ(specs[0].params().at("ipc"), "pipe");
  EXPECT_EQ(specs[0].params().count("mode"), 0u);  // processes, the default
  EXPECT_EQ(specs[0].params().at("loops"), "250");
  EXPECT_EQ(specs[0].iterations(), 12u);
  EXPECT_EQ(specs[0].sweep().policy(), "topology");
  EXPECT_EQ(specs[0].sweep().max_expr(), "ncpus*2");  // $((NUM_LOGICAL_CPUS*2))
  EXPECT_EQ(specs[1].params().at("ipc"), "socket");
  EXPECT_EQ(specs[1].params().at("mode"), "threads");
  EXPECT_THAT(imported->warnings,
              ElementsAre(StartsWith("h:8: not an assignment (if [ $HACKBENCH_MAX_GROUPS"),
                          StartsWith("h:9: HACKBENCH_MAX_GROUPS: set inside a conditional"),
                          StartsWith("h:10: not an assignment (fi)")));
}

TEST(ImportMmtestsTest, PerfpipeIsPipetest) {
  absl::StatusOr<MmtestsImport> imported =
      ImportMmtestsConfig(Fixture("config-perfpipe-today"), "p");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = Specs(*imported);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].name(), "perfpipe");
  EXPECT_EQ(specs[0].benchmark(), "pipetest");
  EXPECT_EQ(specs[0].params().at("loops"), "200000");
  EXPECT_EQ(specs[0].iterations(), 15u);
  EXPECT_THAT(imported->warnings,
              ElementsAre(StartsWith("p:7: PERFPIPE_BINDING: pipetest does not pin"),
                          StartsWith("p:8: not an assignment (cpupower frequency-set")));
}

TEST(ImportMmtestsTest, UsememSizeInRamAndLargeStride) {
  absl::StatusOr<MmtestsImport> imported = ImportMmtestsConfig(Fixture("config-usemem-today"), "u");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = Specs(*imported);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].benchmark(), "usemem");
  EXPECT_EQ(specs[0].params().at("size"), "0.75x_ram");  // $((MEMTOTAL_BYTES*3/4))
  EXPECT_EQ(specs[0].iterations(), 4u);
  // generate-stride-range --stride-large --min 1 --max 12: 1 3 5 7, then 12.
  EXPECT_THAT(scheduler::SweepValues(specs[0].sweep()), ElementsAre("1", "3", "5", "7", "12"));
  EXPECT_THAT(imported->warnings,
              ElementsAre(StartsWith("u:6: USEMEM_PERCENTAGE_ANON: 60% anonymous in mmtests"),
                          StartsWith("u:7: USEMEM_LOOPS: usemem -r 20 repeats the pass")));
}

TEST(ImportMmtestsTest, RamFactorRefusesWhatIsNotAMultipleOfRam) {
  absl::StatusOr<MmtestsImport> imported = ImportMmtestsConfig(
      "export MMTESTS=usemem\nexport USEMEM_WORKLOAD_SIZE=$((MEMTOTAL_BYTES+1048576))\n", "c");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = Specs(*imported);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].params().count("size"), 0u);
  EXPECT_THAT(imported->warnings,
              ElementsAre("c:2: USEMEM_WORKLOAD_SIZE: not a positive multiple of MEMTOTAL_BYTES; "
                          "left at the default"));
}

// config-serverpair-network-*: the netserver on a second machine becomes another agent's.
TEST(ImportMmtestsTest, ServerPairUsesAPeer) {
  absl::StatusOr<MmtestsImport> imported = ImportMmtestsConfig(
      "export MMTESTS=netperf-tcp-rr\nexport REMOTE_SERVER_USER=root\n"
      "export REMOTE_SERVER_HOST=bench2\n",
      "c");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = Specs(*imported);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].params().at("server"), "peer");
  EXPECT_THAT(imported->warnings,
              ElementsAre(StartsWith("c:2: REMOTE_SERVER_USER: the peer is reached through"),
                          "c:3: REMOTE_SERVER_HOST: the controller picks another agent's "
                          "netserver (server: peer) instead of bench2"));
}

TEST(ImportMmtestsTest, TodaysEbizzyConfig) {
  absl::StatusOr<MmtestsImport> imported = ImportMmtestsConfig(Fixture("config-ebizzy-today"), "e");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = Specs(*imported);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].sweep().max_expr(), "ncpus*4");
  EXPECT_EQ(specs[0].params().at("seconds"), "30");
  EXPECT_THAT(imported->warnings, IsEmpty());
}

}  // namespace
}  // namespace tlbfleet::cli
