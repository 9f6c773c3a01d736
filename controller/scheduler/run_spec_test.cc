#include "controller/scheduler/run_spec.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "controller/scheduler/expand.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

std::string ReadRepoFile(const std::string& relative) {
  const std::filesystem::path path =
      std::filesystem::path(__FILE__).parent_path() / ".." / ".." / relative;
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// A small valid spec; tests append or replace lines to break one thing at a time.
constexpr char kBase[] = R"(name: test-run
benchmark: ebizzy
params: {seconds: 1}
iterations: 2
arms:
  - {name: a, params: {mmap: always}}
  - {name: b, params: {mmap: never}}
)";

TEST(ParseRunSpecTest, ParsesTheExampleFile) {
  const std::string yaml = ReadRepoFile("examples/ebizzy-mmap-vs-malloc.yaml");
  ASSERT_FALSE(yaml.empty()) << "examples/ebizzy-mmap-vs-malloc.yaml not found";
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(yaml, "ebizzy-mmap-vs-malloc.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "ebizzy-mmap-vs-malloc");
  EXPECT_EQ(spec->benchmark(), "ebizzy");
  EXPECT_THAT(spec->params(), UnorderedElementsAre(Pair("seconds", "1")));
  EXPECT_EQ(spec->sweep().param(), "threads");
  EXPECT_THAT(spec->sweep().values(), ElementsAre("1", "2"));
  EXPECT_EQ(spec->sweep().policy(), "");
  EXPECT_EQ(spec->iterations(), 3u);
  ASSERT_EQ(spec->arms_size(), 2);
  EXPECT_EQ(spec->arms(0).name(), "mmap");
  EXPECT_THAT(spec->arms(0).params(), UnorderedElementsAre(Pair("mmap", "always")));
  EXPECT_EQ(spec->arms(0).ceiling(), "");
  EXPECT_EQ(spec->arms(1).name(), "malloc");
  EXPECT_THAT(spec->arms(1).params(), UnorderedElementsAre(Pair("mmap", "never")));
  EXPECT_EQ(spec->hosts().count(), 1u);
  EXPECT_EQ(spec->job_timeout_seconds(), 0u);
}

// Every complete spec (a ```yaml block with a benchmark, or one that starts from a preset) in
// the documentation must parse.
TEST(ParseRunSpecTest, DocumentedExamplesParse) {
  const std::string doc = ReadRepoFile("docs/run-spec.md");
  ASSERT_FALSE(doc.empty()) << "docs/run-spec.md not found";
  int parsed = 0;
  for (size_t at = doc.find("```yaml\n"); at != std::string::npos;
       at = doc.find("```yaml\n", at + 1)) {
    const size_t begin = at + 8;
    const size_t end = doc.find("```", begin);
    ASSERT_NE(end, std::string::npos);
    const std::string block = doc.substr(begin, end - begin);
    const bool from_preset = block.rfind("preset:", 0) == 0;
    if (block.find("\nbenchmark:") == std::string::npos && !from_preset) continue;
    absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(block, "docs/run-spec.md");
    EXPECT_TRUE(spec.ok()) << spec.status() << "\n" << block;
    ++parsed;
  }
  EXPECT_GE(parsed, 3);
}

TEST(ParseRunSpecTest, FillsDefaults) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(R"(name: r
benchmark: ebizzy
arms: [{name: only}]
)",
                                                  "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->iterations(), 1u);
  EXPECT_EQ(spec->hosts().count(), 1u);
  EXPECT_EQ(spec->sweep().param(), "");
  EXPECT_TRUE(spec->params().empty());
}

TEST(ParseRunSpecTest, ParsesPolicySweepHostsCeilingAndTimeout) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(R"(name: full.run_1
benchmark: ebizzy
params: {seconds: 2, random_size: yes, linear_search: false}
sweep:
  threads: {policy: pow2, min: 2, max: 16}
iterations: 5
job_timeout_seconds: 120
arms:
  - name: kernel-default
    ceiling: default
  - name: ceiling-1
    ceiling: 1
  - name: big
    ceiling: 2147483647
hosts:
  count: 2
  labels: {rack: r1, lab: tlb}
  microarch: [ivybridge, haswell]
  names: [h1, h2, h3]
)",
                                                  "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  // Scalars stay as written: the workload canonicalises them later.
  EXPECT_THAT(spec->params(), UnorderedElementsAre(Pair("seconds", "2"), Pair("random_size", "yes"),
                                                   Pair("linear_search", "false")));
  EXPECT_EQ(spec->sweep().param(), "threads");
  EXPECT_TRUE(spec->sweep().values().empty());
  EXPECT_EQ(spec->sweep().policy(), "pow2");
  EXPECT_EQ(spec->sweep().min(), 2);
  EXPECT_EQ(spec->sweep().max(), 16);
  EXPECT_EQ(spec->iterations(), 5u);
  EXPECT_EQ(spec->job_timeout_seconds(), 120u);
  ASSERT_EQ(spec->arms_size(), 3);
  EXPECT_EQ(spec->arms(0).ceiling(), "default");
  EXPECT_EQ(spec->arms(1).ceiling(), "1");
  EXPECT_EQ(spec->arms(2).ceiling(), "2147483647");
  EXPECT_EQ(spec->hosts().count(), 2u);
  EXPECT_THAT(spec->hosts().labels(), UnorderedElementsAre(Pair("rack", "r1"), Pair("lab", "tlb")));
  EXPECT_THAT(spec->hosts().microarch(), ElementsAre("ivybridge", "haswell"));
  EXPECT_THAT(spec->hosts().names(), ElementsAre("h1", "h2", "h3"));
}

TEST(ParseRunSpecTest, PolicyMinDefaultsToOne) {
  absl::StatusOr<v1::RunSpec> spec =
      ParseRunSpec(std::string(kBase) + "sweep: {threads: {policy: linear, max: 3}}\n", "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->sweep().min(), 1);
  EXPECT_EQ(spec->sweep().max(), 3);
}

TEST(ParseRunSpecTest, CeilingIsStoredInCanonicalSpelling) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(R"(name: r
benchmark: ebizzy
arms: [{name: a, ceiling: 033}, {name: b, ceiling: 0}]
)",
                                                  "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->arms(0).ceiling(), "33");
  EXPECT_EQ(spec->arms(1).ceiling(), "0");
}

struct BadSpec {
  const char* test_name;
  std::string yaml;
  std::string message_prefix;  // the field path, and as much of the message as is ours
};

class BadSpecTest : public ::testing::TestWithParam<BadSpec> {};

TEST_P(BadSpecTest, IsInvalidArgumentNamingTheField) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(GetParam().yaml, "t.yaml");
  ASSERT_FALSE(spec.ok()) << GetParam().yaml;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()), StartsWith(GetParam().message_prefix));
}

// Everything from "arms:" on.
std::string ArmsSection() {
  const std::string base = kBase;
  return base.substr(base.find("arms:"));
}

std::string WithLine(const std::string& line) { return std::string(kBase) + line + "\n"; }

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos) return "REPLACE FAILED: " + from;
  return text.replace(at, from.size(), to);
}

INSTANTIATE_TEST_SUITE_P(
    RunSpec, BadSpecTest,
    ::testing::Values(
        BadSpec{"UnknownBenchmark", Replace(kBase, "ebizzy", "ebizy"),
                "benchmark: unknown benchmark \"ebizy\" (known: "},
        BadSpec{"MissingBenchmark", Replace(kBase, "benchmark: ebizzy\n", ""),
                "benchmark: required"},
        BadSpec{"MissingName", Replace(kBase, "name: test-run\n", ""), "name: required"},
        BadSpec{"NameWithSpace", Replace(kBase, "test-run", "\"my run\""),
                "name: may only contain letters, digits"},
        BadSpec{"UnknownRunParameter", Replace(kBase, "{seconds: 1}", "{seconds: 1, foo: 2}"),
                "params.foo: unknown parameter for ebizzy (known: "},
        BadSpec{"UnknownArmParameter", Replace(kBase, "{mmap: never}", "{mmap: never, bar: 1}"),
                "arms[1].params.bar: unknown parameter"},
        BadSpec{"ZeroThreadsInArm", Replace(kBase, "{mmap: always}", "{mmap: always, threads: 0}"),
                "arms[0].params.threads: must be an integer in [1, 4096], got \"0\""},
        BadSpec{"NegativeThreadsInParams", Replace(kBase, "{seconds: 1}", "{threads: -2}"),
                "params.threads: must be an integer in [1, 4096], got \"-2\""},
        BadSpec{"ZeroThreadsInSweep", WithLine("sweep: {threads: [1, 0]}"),
                "sweep.threads[1]: must be an integer in [1, 4096], got \"0\""},
        BadSpec{"ZeroPolicyMin", WithLine("sweep: {threads: {policy: linear, min: 0, max: 4}}"),
                "sweep.threads.min: must be an integer in [1, 1000000], got \"0\""},
        BadSpec{"PolicyMaxAboveParameterBound",
                WithLine("sweep: {threads: {policy: pow2, min: 1, max: 8192}}"),
                "sweep.threads.max: must be an integer in [1, 4096], got \"8192\""},
        BadSpec{"PolicyMinAboveMax", WithLine("sweep: {threads: {policy: fib, min: 8, max: 4}}"),
                "sweep.threads.max: must be an integer in [8, 1000000], got \"4\""},
        BadSpec{
            "UnknownPolicy", WithLine("sweep: {threads: {policy: exp, min: 1, max: 4}}"),
            "sweep.threads.policy: unknown policy \"exp\" (known: linear, pow2, fib, topology)"},
        BadSpec{"PolicyOnEnumParameter",
                WithLine("sweep: {prevent_coalescing: {policy: linear, min: 1, max: 2}}"),
                "sweep.prevent_coalescing: a linear sweep needs an integer parameter"},
        BadSpec{"PolicyWithoutMax", WithLine("sweep: {threads: {policy: linear}}"),
                "sweep.threads.max: required"},
        BadSpec{"UnknownSweepParameter", WithLine("sweep: {thread: [1]}"),
                "sweep.thread: unknown parameter"},
        BadSpec{"EmptySweepList", WithLine("sweep: {threads: []}"),
                "sweep.threads: at least one value"},
        BadSpec{"DuplicateSweepValue", WithLine("sweep: {threads: [1, 2, 1]}"),
                "sweep.threads[2]: duplicate value \"1\""},
        BadSpec{"SweepValuesEqualAfterCanonicalisation", WithLine("sweep: {threads: [\"01\", 1]}"),
                "sweep.threads[1]: duplicate value \"1\" (same as \"01\")"},
        BadSpec{"TwoSweptParameters", WithLine("sweep: {threads: [1], chunks: [1]}"),
                "sweep: expected exactly one swept parameter, got 2"},
        BadSpec{"SweepScalar", WithLine("sweep: {threads: 3}"),
                "sweep.threads: expected a list or a map"},
        BadSpec{"SweptParameterAlsoInArm",
                Replace(WithLine("sweep: {threads: [1, 2]}"), "{mmap: never}",
                        "{mmap: never, threads: 4}"),
                "arms[1].params.threads: is the swept parameter"},
        BadSpec{"UnknownSweepPolicyField",
                WithLine("sweep: {threads: {policy: linear, min: 1, max: 2, step: 1}}"),
                "sweep.threads.step: unknown field"},
        BadSpec{"NoArms", Replace(kBase, ArmsSection(), ""), "arms: at least one arm is required"},
        BadSpec{"EmptyArmList", Replace(kBase, ArmsSection(), "arms: []\n"),
                "arms: at least one arm is required"},
        BadSpec{"DuplicateArmName", Replace(kBase, "{name: b,", "{name: a,"),
                "arms[1].name: duplicate arm name \"a\""},
        BadSpec{"EmptyArmName", Replace(kBase, "{name: b,", "{name: \"\","),
                "arms[1].name: required"},
        BadSpec{"ArmWithoutName", Replace(kBase, "{name: b, params:", "{params:"),
                "arms[1].name: required"},
        BadSpec{"ArmNameWithSlash", Replace(kBase, "{name: b,", "{name: b/c,"),
                "arms[1].name: may only contain"},
        BadSpec{"BadEnumValue", Replace(kBase, "{mmap: never}", "{mmap: sometimes}"),
                "arms[1].params.mmap: must be one of always|never|auto, got \"sometimes\""},
        BadSpec{"MisspelledArmField", Replace(kBase, "params: {mmap: always}", "parms: {}"),
                "arms[0].parms: unknown field"},
        BadSpec{"UnknownTopLevelField", WithLine("itterations: 3"), "itterations: unknown field"},
        BadSpec{"UnknownHostsField", WithLine("hosts: {cout: 2}"), "hosts.cout: unknown field"},
        BadSpec{"NegativeCeiling", Replace(kBase, "{name: b,", "{name: b, ceiling: -1,"),
                "arms[1].ceiling: must be \"default\" or an integer in [0, 2147483647], got "
                "\"-1\""},
        BadSpec{"CeilingAboveIntMax", Replace(kBase, "{name: a,", "{name: a, ceiling: 2147483648,"),
                "arms[0].ceiling: must be \"default\" or an integer"},
        BadSpec{"CeilingNotAnInteger", Replace(kBase, "{name: a,", "{name: a, ceiling: 1.5,"),
                "arms[0].ceiling: must be \"default\" or an integer"},
        BadSpec{"CeilingWord", Replace(kBase, "{name: a,", "{name: a, ceiling: kernel,"),
                "arms[0].ceiling: must be \"default\" or an integer"},
        BadSpec{"CeilingMissingValue", Replace(kBase, "{name: a,", "{name: a, ceiling: ,"),
                "arms[0].ceiling: value is missing"},
        BadSpec{"IterationsZero", Replace(kBase, "iterations: 2", "iterations: 0"),
                "iterations: must be an integer in [1, 100000], got \"0\""},
        BadSpec{"IterationsHuge", Replace(kBase, "iterations: 2", "iterations: 4294967297"),
                "iterations: must be an integer in [1, 100000]"},
        BadSpec{"IterationsWord", Replace(kBase, "iterations: 2", "iterations: three"),
                "iterations: expected an integer, got \"three\""},
        BadSpec{"IterationsList", Replace(kBase, "iterations: 2", "iterations: [2]"),
                "iterations: expected a scalar value, got a list"},
        BadSpec{"NameIsAMap", Replace(kBase, "name: test-run", "name: {a: b}"),
                "name: expected a scalar value, got a map"},
        BadSpec{"ParamsIsAList", Replace(kBase, "params: {seconds: 1}", "params: [1, 2]"),
                "params: expected a map"},
        BadSpec{"ParamValueIsAList", Replace(kBase, "{seconds: 1}", "{seconds: [1]}"),
                "params.seconds: expected a scalar value, got a list"},
        BadSpec{"ArmsIsAMap", Replace(kBase, ArmsSection(), "arms: {name: a}\n"),
                "arms: expected a list"},
        BadSpec{"ArmIsAScalar", Replace(kBase, "  - {name: a, params: {mmap: always}}", "  - a"),
                "arms[0]: expected a map"},
        BadSpec{"HostsCountZero", WithLine("hosts: {count: 0}"),
                "hosts.count: must be an integer in [1, 1000], got \"0\""},
        BadSpec{"HostsCountTooLarge", WithLine("hosts: {count: 1001}"),
                "hosts.count: must be an integer in [1, 1000]"},
        BadSpec{"HostsNamesTooFew", WithLine("hosts: {count: 3, names: [h1, h2]}"),
                "hosts.count: 3 hosts requested but hosts.names lists only 2"},
        BadSpec{"MicroarchNotAList", WithLine("hosts: {microarch: ivybridge}"),
                "hosts.microarch: expected a list"},
        BadSpec{"TooManyJobs",
                Replace(WithLine("hosts: {count: 1000}"), "iterations: 2", "iterations: 1000"),
                "iterations: the run would have more than 1000000 jobs"},
        BadSpec{"TimeoutTooLarge", WithLine("job_timeout_seconds: 999999999"),
                "job_timeout_seconds: must be an integer in [0, 604800]"},
        BadSpec{"DuplicateKey", WithLine("iterations: 3"), "iterations: duplicate key"},
        BadSpec{"EmptyDocument", "", "t.yaml: the run spec is empty"},
        BadSpec{"CommentOnly", "# nothing here\n", "t.yaml: the run spec is empty"},
        BadSpec{"TopLevelList", "- a\n- b\n", "t.yaml: expected a map"},
        BadSpec{"TopLevelKeyIsAList", "? [a]\n: b\n", "t.yaml: keys must be plain strings"},
        BadSpec{"MalformedFlowSequence", "name: r\nbenchmark: ebizzy\narms: [a, b\n",
                "t.yaml:4:1: "},
        BadSpec{"MalformedIndentation", "name: r\n  benchmark: ebizzy\n", "t.yaml:2:"},
        BadSpec{"UndefinedAlias", "name: *nowhere\n", "t.yaml:1:"}),
    [](const ::testing::TestParamInfo<BadSpec>& info) { return info.param.test_name; });

TEST(ParseRunSpecTest, MalformedYamlNamesLineAndColumn) {
  absl::StatusOr<v1::RunSpec> spec =
      ParseRunSpec("name: r\nbenchmark: ebizzy\nparams: {seconds: 1\n", "spec.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(), "spec.yaml:4:1: end of map flow not found");
}

TEST(ParseRunSpecTest, NeverThrowsOnGarbage) {
  const char* inputs[] = {"[",
                          "{",
                          "]",
                          "\t",
                          ": :",
                          "a: b: c",
                          "&a [*a]",
                          "!!binary x",
                          "? [a]\n: b",
                          "name: !!int abc",
                          "\"unterminated",
                          "arms: [[[]]]",
                          "--- \n...\n---\nname: x",
                          "\xff\xfe"};
  for (const char* input : inputs) {
    absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(input, "garbage");
    EXPECT_FALSE(spec.ok()) << input;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << input;
  }
}

TEST(ValidateRunSpecTest, AcceptsASpecBuiltInCode) {
  v1::RunSpec spec;
  spec.set_name("nightly");
  spec.set_benchmark("ebizzy");
  spec.set_iterations(1);
  spec.mutable_hosts()->set_count(1);
  spec.mutable_sweep()->set_param("threads");
  spec.mutable_sweep()->set_policy("fib");
  spec.mutable_sweep()->set_min(1);
  spec.mutable_sweep()->set_max(8);
  v1::ArmSpec* arm = spec.add_arms();
  arm->set_name("c33");
  arm->set_ceiling("33");
  EXPECT_TRUE(ValidateRunSpec(spec).ok()) << ValidateRunSpec(spec);
}

TEST(ValidateRunSpecTest, ProtoDefaultsNeedFilling) {
  v1::RunSpec spec;
  spec.set_name("from-json");
  spec.set_benchmark("ebizzy");
  spec.add_arms()->set_name("a");
  absl::Status status = ValidateRunSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), StartsWith("iterations: "));
  FillRunSpecDefaults(&spec);
  EXPECT_EQ(spec.iterations(), 1u);
  EXPECT_EQ(spec.hosts().count(), 1u);
  EXPECT_TRUE(ValidateRunSpec(spec).ok()) << ValidateRunSpec(spec);
}

TEST(ValidateRunSpecTest, RefusesBadCeilingStrings) {
  v1::RunSpec spec;
  spec.set_name("r");
  spec.set_benchmark("ebizzy");
  FillRunSpecDefaults(&spec);
  spec.add_arms()->set_name("a");
  for (const char* ceiling :
       {"-1", "2147483648", "abc", "1e3", "Default", "99999999999999999999", "+33", " 33"}) {
    spec.mutable_arms(0)->set_ceiling(ceiling);
    absl::Status status = ValidateRunSpec(spec);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << ceiling;
    EXPECT_THAT(std::string(status.message()), StartsWith("arms[0].ceiling: ")) << ceiling;
  }
  for (const char* ceiling : {"", "default", "0", "33", "2147483647"}) {
    spec.mutable_arms(0)->set_ceiling(ceiling);
    EXPECT_TRUE(ValidateRunSpec(spec).ok()) << ceiling << ": " << ValidateRunSpec(spec);
  }
}

TEST(ValidateRunSpecTest, SweepNeedsAParameterName) {
  v1::RunSpec spec;
  spec.set_name("r");
  spec.set_benchmark("ebizzy");
  FillRunSpecDefaults(&spec);
  spec.add_arms()->set_name("a");
  spec.mutable_sweep()->add_values("1");
  absl::Status status = ValidateRunSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), StartsWith("sweep.param: required"));
}

TEST(ValidateRunSpecTest, UnknownBenchmarkListsKnownOnes) {
  v1::RunSpec spec;
  spec.set_name("r");
  spec.set_benchmark("ebizy");
  FillRunSpecDefaults(&spec);
  spec.add_arms()->set_name("a");
  absl::Status status = ValidateRunSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("(known: "));
  EXPECT_THAT(std::string(status.message()), HasSubstr("ebizzy"));
}

}  // namespace
}  // namespace tlbfleet::scheduler

namespace tlbfleet::scheduler {
namespace {

TEST(RunSpecMonitorsTest, ParsesKnownMonitorsAndCarriesThemIntoEveryJob) {
  auto spec = ParseRunSpec(
      "name: m\nbenchmark: ebizzy\nmonitors: [flush_profile, vmstat]\narms: [{name: a}]\n",
      "m.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->monitors_size(), 2);
  std::vector<JobPlan> jobs = ExpandRun(*spec);
  ASSERT_FALSE(jobs.empty());
  EXPECT_EQ(jobs[0].monitors, (std::vector<std::string>{"flush_profile", "vmstat"}));
}

TEST(RunSpecMonitorsTest, RefusesUnknownAndDuplicateMonitorsNamingTheEntry) {
  auto unknown = ParseRunSpec(
      "name: m\nbenchmark: ebizzy\nmonitors: [flush_profile, tea]\narms: [{name: a}]\n", "m");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("monitors[1]"), std::string::npos) << unknown.status();
  auto dup = ParseRunSpec(
      "name: m\nbenchmark: ebizzy\nmonitors: [vmstat, vmstat]\narms: [{name: a}]\n", "m");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("duplicate monitor"), std::string::npos);
}

}  // namespace
}  // namespace tlbfleet::scheduler
