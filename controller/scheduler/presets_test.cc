// The presets shipped in deploy/presets/: each document must be a valid run spec for a
// registered workload, on the host sizes a lab has. A preset whose benchmark is not (yet)
// registered fails here by design.

#include "controller/scheduler/presets.h"

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/run_spec.h"
#include "controller/scheduler/run_spec_internal.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::StartsWith;

HostTopology Host(int64_t cpus, int64_t smt, int64_t llc, int64_t numa) {
  HostTopology t;
  t.cpus = cpus;
  t.cpus_per_core = smt;
  t.cpus_per_llc = llc;
  t.cpus_per_numa_node = numa;
  return t;
}

TEST(PresetsTest, ShipsTheThreeMmtestsConfigs) {
  EXPECT_THAT(
      PresetReferences(),
      ElementsAre("network-performance/udp-stream", "network-performance/tcp-stream",
                  "network-performance/tcp-rr", "network-performance/udp-rr",
                  "scheduler-performance/hackbench-pipe", "scheduler-performance/hackbench-socket",
                  "scheduler-performance/pipetest", "tlbflush-performance/pft",
                  "tlbflush-performance/ebizzy", "tlbflush-performance/tlbflush"));
}

TEST(PresetsTest, EveryDocumentIsAValidRunSpecOfARegisteredWorkload) {
  std::set<std::string> benchmarks;
  for (const PresetFile& file : EmbeddedPresets()) {
    std::vector<YAML::Node> docs = YAML::LoadAll(file.yaml);
    ASSERT_FALSE(docs.empty()) << file.name;
    for (const YAML::Node& doc : docs) {
      const std::string where = file.name + "/" + doc["name"].as<std::string>("?");
      const std::string benchmark = doc["benchmark"].as<std::string>("");
      // Not a skip: a preset for a workload that is not registered is a failure.
      ASSERT_NE(FindWorkload(benchmark), nullptr)
          << where << ": benchmark \"" << benchmark << "\" is not registered";
      absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(YAML::Dump(doc), where);
      ASSERT_TRUE(spec.ok()) << spec.status();
      benchmarks.insert(spec->benchmark());
      // Host-dependent sweeps must expand on a 1-CPU VM and on a big two-socket machine.
      for (const HostTopology& host : {Host(1, 1, 1, 1), Host(16, 2, 8, 8), Host(256, 2, 32, 64)}) {
        absl::StatusOr<SlotExpansion> slot = ExpandSlotForHost(*spec, host);
        ASSERT_TRUE(slot.ok()) << where << " on " << host.cpus << " CPUs: " << slot.status();
        EXPECT_FALSE(slot->jobs.empty()) << where;
      }
    }
  }
  EXPECT_THAT(benchmarks,
              ElementsAre("ebizzy", "hackbench", "netperf", "pft", "pipetest", "tlbflush"));
}

TEST(PresetsTest, PresetsSayWhatTheIssueAsks) {
  absl::StatusOr<v1::RunSpec> ebizzy =
      ParseRunSpec("preset: tlbflush-performance/ebizzy\n", "t.yaml");
  ASSERT_TRUE(ebizzy.ok()) << ebizzy.status();
  EXPECT_EQ(ebizzy->iterations(), 100u);
  EXPECT_EQ(ebizzy->params().at("seconds"), "10");
  EXPECT_EQ(ebizzy->sweep().max_expr(), "2*ncpus");
  absl::StatusOr<v1::RunSpec> tlbflush =
      ParseRunSpec("preset: tlbflush-performance/tlbflush\n", "t.yaml");
  ASSERT_TRUE(tlbflush.ok()) << tlbflush.status();
  EXPECT_EQ(tlbflush->iterations(), 320u);
  EXPECT_EQ(tlbflush->sweep().policy(), "fib");
  EXPECT_EQ(tlbflush->params().count("entries"), 0u);
  EXPECT_EQ(tlbflush->param_policies().at("entries").policy(), "mmtests");
  EXPECT_EQ(tlbflush->param_policies().at("entries").max(), 512);
  absl::StatusOr<v1::RunSpec> hackbench =
      ParseRunSpec("preset: scheduler-performance/hackbench-socket\n", "t.yaml");
  ASSERT_TRUE(hackbench.ok()) << hackbench.status();
  absl::StatusOr<v1::SweepSpec> groups = ResolveSweepForHost(hackbench->sweep(), Host(16, 2, 8, 8));
  ASSERT_TRUE(groups.ok());
  EXPECT_THAT(SweepValues(*groups), ElementsAre("1", "3", "8", "13"));
  absl::StatusOr<v1::RunSpec> stream =
      ParseRunSpec("preset: network-performance/udp-stream\n", "t.yaml");
  ASSERT_TRUE(stream.ok()) << stream.status();
  EXPECT_THAT(SweepValues(stream->sweep()),
              ElementsAre("64", "128", "256", "1024", "2048", "3312", "4096", "8192", "16384"));
}

TEST(PresetsTest, RunSpecOverridesPresetFields) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(R"(
preset: tlbflush-performance/ebizzy
name: ebizzy-ceiling
params: {mmap: never}
iterations: 3
arms:
  - {name: default, ceiling: default}
  - {name: one, ceiling: 1}
hosts: {count: 2}
)",
                                                  "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "ebizzy-ceiling");
  EXPECT_EQ(spec->benchmark(), "ebizzy");
  EXPECT_EQ(spec->params().at("seconds"), "10");  // params merge key by key
  EXPECT_EQ(spec->params().at("mmap"), "never");
  EXPECT_EQ(spec->iterations(), 3u);
  ASSERT_EQ(spec->arms_size(), 2);
  EXPECT_EQ(spec->arms(1).ceiling(), "1");
  EXPECT_EQ(spec->hosts().count(), 2u);
  EXPECT_EQ(spec->sweep().policy(), "topology");
}

TEST(PresetsTest, NullRemovesAPresetField) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(
      "preset: tlbflush-performance/ebizzy\nsweep: ~\nparams: {threads: 4}\n", "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->sweep().param().empty());
  EXPECT_EQ(spec->params().at("threads"), "4");
}

TEST(PresetsTest, BadReferencesNameThePresetField) {
  struct Case {
    std::string yaml;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {"preset: nope\n", "preset: unknown preset \"nope\" (known: network-performance/"},
           {"preset: tlbflush-performance\n",
            "preset: preset \"tlbflush-performance\" holds 3 run specs; name one as "
            "tlbflush-performance/NAME"},
           {"preset: tlbflush-performance/ebizy\n",
            "preset: preset \"tlbflush-performance\" has no run spec named \"ebizy\""},
           {"preset: [a]\n", "preset: expected the name of a preset"},
           {"preset: tlbflush-performance/ebizzy\nparams: {threads: 4}\n",
            "params.threads: is the swept parameter"},
           {"preset: tlbflush-performance/ebizzy\niterations: 1\niterations: 2\n",
            "iterations: duplicate key"},
           {"preset: tlbflush-performance/ebizzy\nparams: {thread: 4}\n",
            "params.thread: unknown parameter for ebizzy"},
       }) {
    absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(c.yaml, "t.yaml");
    ASSERT_FALSE(spec.ok()) << c.yaml;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(spec.status().message()), StartsWith(c.error)) << c.yaml;
  }
}

}  // namespace
}  // namespace tlbfleet::scheduler
