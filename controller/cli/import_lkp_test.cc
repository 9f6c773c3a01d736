#include "controller/cli/import_lkp.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "controller/cli/exit_codes.h"
#include "controller/scheduler/run_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::cli {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

std::string LkpFixture(const std::string& name) {
  const std::filesystem::path path = std::filesystem::path(__FILE__).parent_path() / ".." / ".." /
                                     "tests" / "fixtures" / "lkp" / name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<v1::RunSpec> LkpSpecs(const LkpImport& imported) {
  std::vector<v1::RunSpec> out;
  for (const YAML::Node& doc : YAML::LoadAll(imported.yaml)) {
    absl::StatusOr<v1::RunSpec> spec = scheduler::ParseRunSpec(YAML::Dump(doc), "import");
    EXPECT_TRUE(spec.ok()) << spec.status() << "\n" << imported.yaml;
    if (spec.ok()) out.push_back(*spec);
  }
  return out;
}

TEST(ImportLkpTest, WillItScaleTlbTestsInBothModesAtAllCpus) {
  absl::StatusOr<LkpImport> imported =
      ImportLkpJob(LkpFixture("will-it-scale-tlb.yaml"), "wis.yaml");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = LkpSpecs(*imported);
  // 2 modes x 4 tests, less read1 in each mode; LKP's order: mode outermost.
  ASSERT_EQ(specs.size(), 6u);
  EXPECT_EQ(specs[0].name(), "will-it-scale-100pct-process-tlb_flush1");
  EXPECT_EQ(specs[0].benchmark(), "willitscale");
  EXPECT_EQ(specs[0].params().at("test"), "tlb_flush1");
  EXPECT_EQ(specs[0].params().at("mode"), "process");
  EXPECT_EQ(specs[0].params().at("duration"), "295");  // runtime - WARMUP_ITERATIONS
  EXPECT_EQ(specs[0].sweep().param(), "tasks");        // 100%: ncpus, known on the host
  EXPECT_EQ(specs[0].sweep().min_expr(), "ncpus");
  EXPECT_EQ(specs[0].sweep().max_expr(), "ncpus");
  EXPECT_EQ(specs[5].name(), "will-it-scale-100pct-thread-tlb_flush3");
  EXPECT_EQ(specs[5].params().at("mode"), "thread");
  EXPECT_EQ(specs[5].params().at("test"), "tlb_flush3");
  EXPECT_THAT(imported->warnings,
              ElementsAre(StartsWith("wis.yaml: will-it-scale.test: \"read1\" has no tlbfleet "
                                     "workload"),
                          "wis.yaml: perf-profile.delay: not used by tlbfleet's willitscale; "
                          "ignored"));
}

TEST(ImportLkpTest, WillItScaleWithoutNrTaskSweepsTheHostAndRunsBothModes) {
  absl::StatusOr<LkpImport> imported =
      ImportLkpJob(LkpFixture("will-it-scale-sweep.yaml"), "sweep");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = LkpSpecs(*imported);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name(), "will-it-scale-process");
  EXPECT_EQ(specs[1].name(), "will-it-scale-thread");
  EXPECT_EQ(specs[1].params().at("no_affinity"), "true");
  EXPECT_EQ(specs[1].sweep().policy(), "topology");
  EXPECT_EQ(specs[1].sweep().max_expr(), "ncpus");
  EXPECT_EQ(specs[1].params().count("duration"), 0u);
  EXPECT_THAT(imported->warnings, IsEmpty());
}

TEST(ImportLkpTest, Ebizzy) {
  absl::StatusOr<LkpImport> imported = ImportLkpJob(LkpFixture("ebizzy.yaml"), "ebizzy.yaml");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = LkpSpecs(*imported);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].benchmark(), "ebizzy");
  EXPECT_EQ(specs[0].params().at("seconds"), "10");
  EXPECT_EQ(specs[0].params().at("mmap"), "auto");  // LKP runs it without -m
  EXPECT_EQ(specs[0].iterations(), 100u);
  EXPECT_EQ(specs[0].sweep().param(), "threads");
  EXPECT_EQ(specs[0].sweep().min_expr(), "2*ncpus");
  EXPECT_THAT(imported->warnings, IsEmpty());
}

TEST(ImportLkpTest, HackbenchMatrixAndWhatLkpComputesOnTheHost) {
  absl::StatusOr<LkpImport> imported = ImportLkpJob(LkpFixture("hackbench.yaml"), "hb");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = LkpSpecs(*imported);
  ASSERT_EQ(specs.size(), 8u);  // 2 nr_threads x 2 modes x 2 ipc
  EXPECT_EQ(specs[0].name(), "hackbench-100pct-process-pipe");
  EXPECT_EQ(specs[0].params().at("mode"), "processes");
  EXPECT_EQ(specs[0].params().at("ipc"), "pipe");
  EXPECT_EQ(specs[0].iterations(), 8u);
  EXPECT_EQ(specs[0].sweep().param(), "groups");
  EXPECT_EQ(specs[7].name(), "hackbench-1600pct-threads-socket");
  EXPECT_EQ(specs[7].params().at("mode"), "threads");
  EXPECT_EQ(specs[7].sweep().min_expr(), "16*ncpus");
  EXPECT_THAT(imported->warnings,
              ElementsAre(StartsWith("hb: hackbench.loops: not set, and LKP then computes")));
}

TEST(ImportLkpTest, NetperfDocumentsMergeOverTheBaseAndClientRoleIsRead) {
  absl::StatusOr<LkpImport> imported = ImportLkpJob(LkpFixture("netperf.yaml"), "np");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = LkpSpecs(*imported);
  // Base: 2 nr_threads x (TCP_RR, UDP_RR, TCP_STREAM; not SCTP_RR); second document:
  // 2 nr_threads x UDP_STREAM (not TCP_SENDFILE), with send_size.
  ASSERT_EQ(specs.size(), 8u) << imported->yaml << testing::PrintToString(imported->warnings);
  EXPECT_EQ(specs[0].name(), "netperf-ipv4-1-TCP_RR");
  EXPECT_EQ(specs[0].params().at("test"), "tcp_rr");
  EXPECT_EQ(specs[0].params().at("seconds"), "300");
  EXPECT_EQ(specs[0].params().count("message_size"), 0u);
  EXPECT_EQ(specs[6].name(), "netperf-ipv4-1-UDP_STREAM");
  EXPECT_EQ(specs[6].params().at("test"), "udp_stream");
  EXPECT_EQ(specs[6].params().at("message_size"), "10240");
  EXPECT_THAT(imported->warnings, Contains(StartsWith("np: netperf.test: \"SCTP_RR\" has no")));
  EXPECT_THAT(imported->warnings, Contains(StartsWith("np: netperf.test: \"TCP_SENDFILE\"")));
  EXPECT_THAT(imported->warnings,
              Contains("np: set_nic_irq_affinity: not used by tlbfleet's netperf; ignored"));
  EXPECT_THAT(imported->warnings,
              Contains(StartsWith("np: nr_threads: LKP runs 200% netperf clients at once")));
  for (const std::string& w : imported->warnings) {
    EXPECT_THAT(w, Not(HasSubstr("netserver")));  // tlbfleet's netperf has its own server
    EXPECT_THAT(w, Not(HasSubstr("cluster")));    // cs-localhost is what it does
  }
}

TEST(ImportLkpTest, PftAndPerfBenchSchedPipe) {
  absl::StatusOr<LkpImport> imported = ImportLkpJob(LkpFixture("pft.yaml"), "pft");
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::vector<v1::RunSpec> specs = LkpSpecs(*imported);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].params().at("threads"), "1");
  EXPECT_EQ(specs[0].params().at("size_mb"), "512");
  EXPECT_EQ(specs[0].iterations(), 5u);
  EXPECT_EQ(specs[1].sweep().min_expr(), "ncpus*50/100");
  EXPECT_THAT(imported->warnings, ElementsAre(StartsWith("pft: perf-profile.delay: not used")));

  imported = ImportLkpJob(LkpFixture("perf-bench-sched-pipe.yaml"), "pipe");
  ASSERT_TRUE(imported.ok()) << imported.status();
  specs = LkpSpecs(*imported);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].benchmark(), "pipetest");
  EXPECT_EQ(specs[0].params().at("loops"), "10000000");
  EXPECT_THAT(imported->warnings,
              ElementsAre(StartsWith("pipe: perf-bench-sched-pipe.mode: \"threads\": tlbfleet's "
                                     "pipetest runs two processes only; not imported")));
}

TEST(ImportLkpTest, BadJobsAreRefusedNamingTheField) {
  struct Case {
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"suite: fio\ntestcase: fio\nfio:\n  rw: read\n",
       "job.yaml: suite: \"fio\" has no tlbfleet workload (import-lkp knows ebizzy, hackbench, "
       "netperf, perf-bench-sched-pipe, pft, will-it-scale)"},
      {"testcase: ebizzy\nebizzy:\n  duration: 10s\n",
       "job.yaml: suite: required (the LKP suite, e.g. will-it-scale)"},
      {"suite: will-it-scale\nwill-it-scale:\n  test: [read1, brk1]\n",
       "job.yaml: none of its jobs can be imported (will-it-scale.test: \"read1\" has no "
       "tlbfleet workload (willitscale runs tlb_flush1, tlb_flush2 and tlb_flush3))"},
      {"suite: [unclosed\n", "job.yaml: not YAML: "},
      {"- a list\n", "job.yaml: not an LKP job: expected a map of keys such as suite:"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<LkpImport> imported = ImportLkpJob(c.text, "job.yaml");
    ASSERT_FALSE(imported.ok()) << c.text;
    EXPECT_EQ(imported.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(imported.status().message()), StartsWith(c.error));
  }
}

TEST(ImportLkpTest, ValuesThatDoNotParseAreWarningsNamingTheField) {
  absl::StatusOr<LkpImport> imported =
      ImportLkpJob("suite: ebizzy\nnr_threads: lots\nebizzy:\n  duration: 10 minutes\n", "e");
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_THAT(imported->warnings,
              ElementsAre(StartsWith("e: nr_threads: \"lots\" is neither a count nor a share"),
                          StartsWith("e: ebizzy.duration: \"10 minutes\" is not a duration")));
  // Out of the workload's range: reported by the catalogue's check, naming the parameter.
  imported = ImportLkpJob(
      "suite: will-it-scale\nnr_task: 5000\nwill-it-scale:\n  test: "
      "tlb_flush2\n  mode: thread\n",
      "w");
  ASSERT_FALSE(imported.ok());
  EXPECT_THAT(std::string(imported.status().message()), HasSubstr("tasks"));
}

TEST(ImportLkpCommandTest, PrintsSpecsAndWarningsAndExitsTwoOnAnUnknownSuite) {
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/lkp-good.yaml";
  std::ofstream(good) << LkpFixture("will-it-scale-tlb.yaml");
  std::ostringstream out, err;
  EXPECT_EQ(ImportLkpCommand(good, out, err), kExitOk);
  EXPECT_THAT(out.str(), HasSubstr("benchmark: willitscale\n"));
  EXPECT_THAT(err.str(), HasSubstr("tlbfleet: " + good + ": will-it-scale.test: \"read1\""));

  const std::string bad = dir + "/lkp-bad.yaml";
  std::ofstream(bad) << "suite: fio\n";
  std::ostringstream out2, err2;
  EXPECT_EQ(ImportLkpCommand(bad, out2, err2), kExitUsage);
  EXPECT_EQ(out2.str(), "");
  EXPECT_THAT(err2.str(), HasSubstr("suite: \"fio\" has no tlbfleet workload"));

  std::ostringstream out3, err3;
  EXPECT_EQ(ImportLkpCommand(dir + "/missing.yaml", out3, err3), kExitUsage);
  EXPECT_THAT(err3.str(), HasSubstr("cannot read LKP job"));
}

}  // namespace
}  // namespace tlbfleet::cli
