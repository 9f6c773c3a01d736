// Per-iteration parameters (RunSpec.param_policies): the `mmtests` policy for tlbflush's
// entries, from parsing through validation to the values the jobs carry.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/run_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::scheduler {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kTlbflush[] = R"(name: tlbflush-ceilings
benchmark: tlbflush
params: {entries: {policy: mmtests, max: 512}, region_mb: 8}
sweep: {threads: [1, 2]}
iterations: 16
arms:
  - {name: default, ceiling: default}
  - {name: ceiling-1, ceiling: 1}
)";

int64_t Entries(const JobPlan& job) {
  int64_t n = 0;
  EXPECT_TRUE(absl::SimpleAtoi(job.params.at("entries"), &n)) << job.params.at("entries");
  return n;
}

TEST(MmtestsSectionTest, Max512IsEightSectionsOf64) {
  for (uint32_t i = 1; i <= 16; ++i) {
    const IntRange s = MmtestsSection(i, 512);
    const int64_t k = (i - 1) % 8;
    EXPECT_EQ(s.lo, 64 * k + 1) << "iteration " << i;
    EXPECT_EQ(s.hi, 64 * (k + 1)) << "iteration " << i;
  }
}

TEST(MmtestsSectionTest, MaxNotDivisibleByEightCoversEveryValueOnce) {
  // 100 = sections of 12 or 13 values: 1-12, 13-25, 26-37, 38-50, 51-62, 63-75, 76-87, 88-100.
  std::vector<std::pair<int64_t, int64_t>> got;
  for (uint32_t i = 1; i <= 8; ++i) {
    const IntRange s = MmtestsSection(i, 100);
    got.emplace_back(s.lo, s.hi);
  }
  EXPECT_THAT(got, ::testing::ElementsAre(::testing::Pair(1, 12), ::testing::Pair(13, 25),
                                          ::testing::Pair(26, 37), ::testing::Pair(38, 50),
                                          ::testing::Pair(51, 62), ::testing::Pair(63, 75),
                                          ::testing::Pair(76, 87), ::testing::Pair(88, 100)));
}

TEST(MmtestsSectionTest, MaxBelowEightCyclesThroughEachValue) {
  for (uint32_t i = 1; i <= 12; ++i) {
    const IntRange s = MmtestsSection(i, 5);
    EXPECT_EQ(s.lo, (i - 1) % 5 + 1);
    EXPECT_EQ(s.hi, s.lo);
  }
  EXPECT_EQ(MmtestsSection(7, 1).lo, 1);
  EXPECT_EQ(MmtestsSection(7, 1).hi, 1);
  EXPECT_EQ(MmtestsSection(3, 8).lo, 3);  // exactly one value per section
  EXPECT_EQ(MmtestsSection(3, 8).hi, 3);
}

TEST(MmtestsPolicyValueTest, StaysInItsSectionAndIsReproducible) {
  std::set<int64_t> distinct;
  for (uint32_t i = 1; i <= 2000; ++i) {
    const int64_t v = MmtestsPolicyValue("run", "entries", i, 512);
    const IntRange s = MmtestsSection(i, 512);
    ASSERT_GE(v, s.lo) << "iteration " << i;
    ASSERT_LE(v, s.hi) << "iteration " << i;
    EXPECT_EQ(v, MmtestsPolicyValue("run", "entries", i, 512));
    distinct.insert(v);
  }
  // Random within the sections, not a fixed point of each: most of the 512 values occur.
  EXPECT_GT(distinct.size(), 400u);
  // Another run draws differently (with 16 iterations, all equal by chance is ~64^-16).
  int same = 0;
  for (uint32_t i = 1; i <= 16; ++i) {
    same += MmtestsPolicyValue("run", "entries", i, 512) ==
                    MmtestsPolicyValue("other-run", "entries", i, 512)
                ? 1
                : 0;
  }
  EXPECT_LT(same, 16);
}

TEST(ParamPolicyTest, ParsesIntoParamPolicies) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(kTlbflush, "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->params().count("entries"), 0u);
  ASSERT_EQ(spec->param_policies().count("entries"), 1u);
  EXPECT_EQ(spec->param_policies().at("entries").policy(), "mmtests");
  EXPECT_EQ(spec->param_policies().at("entries").max(), 512);
}

TEST(ParamPolicyTest, JobsOfIterationsOneToSixteenDrawFromTheirSection) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(kTlbflush, "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::vector<JobPlan> jobs = ExpandRun(*spec);
  ASSERT_EQ(jobs.size(), 16u * 2 * 2);
  std::map<uint32_t, int64_t> per_iteration;
  for (const JobPlan& job : jobs) {
    const int64_t entries = Entries(job);
    const int64_t k = (job.iteration - 1) % 8;
    EXPECT_GE(entries, 64 * k + 1) << "iteration " << job.iteration;
    EXPECT_LE(entries, 64 * (k + 1)) << "iteration " << job.iteration;
    // Every arm (and sweep value) of an iteration flushes the same number of pages.
    auto [it, inserted] = per_iteration.emplace(job.iteration, entries);
    EXPECT_EQ(it->second, entries) << "iteration " << job.iteration << " arm " << job.arm;
    // The sweep still groups by threads; entries is an ordinary parameter of the job.
    EXPECT_EQ(job.param_name, "threads");
    EXPECT_EQ(job.params.at("threads"), job.param_value);
    EXPECT_EQ(job.params.at("region_mb"), "8");
  }
  EXPECT_EQ(per_iteration.size(), 16u);
  // Re-expansion (a controller restart, another host slot) gives the same values.
  const std::vector<JobPlan> again = ExpandRun(*spec);
  ASSERT_EQ(again.size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(again[i].params, jobs[i].params);
}

TEST(ParamPolicyTest, HostSlotsDrawTheSameValues) {
  absl::StatusOr<v1::RunSpec> spec =
      ParseRunSpec(std::string(kTlbflush) + "hosts: {count: 2}\n", "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::vector<JobPlan> jobs = ExpandRun(*spec);
  ASSERT_EQ(jobs.size() % 2, 0u);
  const size_t half = jobs.size() / 2;
  for (size_t i = 0; i < half; ++i) {
    EXPECT_EQ(jobs[i].slot, 0u);
    EXPECT_EQ(jobs[half + i].slot, 1u);
    EXPECT_EQ(jobs[i].params, jobs[half + i].params);
  }
}

TEST(ParamPolicyTest, ArmPolicyAndArmValueOverrideTheRun) {
  const std::string yaml = R"(name: arms
benchmark: tlbflush
params: {entries: 33}
iterations: 8
arms:
  - {name: fixed}
  - {name: drawn, params: {entries: {policy: mmtests, max: 8}}}
)";
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(yaml, "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  for (const JobPlan& job : ExpandRun(*spec)) {
    if (job.arm == "fixed") {
      EXPECT_EQ(job.params.at("entries"), "33");
    } else {
      // 8 in 8 sections of one value: iteration i draws exactly i.
      EXPECT_EQ(Entries(job), job.iteration);
    }
  }
  // And the other way round: an arm's fixed value replaces the run's policy.
  absl::StatusOr<v1::RunSpec> other = ParseRunSpec(R"(name: arms
benchmark: tlbflush
params: {entries: {policy: mmtests, max: 512}}
arms:
  - {name: fixed, params: {entries: 7}}
)",
                                                   "t.yaml");
  ASSERT_TRUE(other.ok()) << other.status();
  for (const JobPlan& job : ExpandRun(*other)) EXPECT_EQ(job.params.at("entries"), "7");
}

TEST(ParamPolicyTest, PresetDrawsEntriesPerIteration) {
  absl::StatusOr<v1::RunSpec> spec =
      ParseRunSpec("preset: tlbflush-performance/tlbflush\nsweep: ~\niterations: 9\n", "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::vector<JobPlan> jobs = ExpandRun(*spec);
  ASSERT_EQ(jobs.size(), 9u);
  for (const JobPlan& job : jobs) {
    const IntRange s = MmtestsSection(job.iteration, 512);
    EXPECT_GE(Entries(job), s.lo);
    EXPECT_LE(Entries(job), s.hi);
  }
}

struct BadPolicy {
  const char* test_name;
  std::string params;  // replaces the run's params line of kTlbflush
  std::string message_prefix;
};

class BadPolicyTest : public ::testing::TestWithParam<BadPolicy> {};

TEST_P(BadPolicyTest, IsInvalidArgumentNamingTheField) {
  std::string yaml = kTlbflush;
  const std::string line = "params: {entries: {policy: mmtests, max: 512}, region_mb: 8}";
  yaml.replace(yaml.find(line), line.size(), GetParam().params);
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(yaml, "t.yaml");
  ASSERT_FALSE(spec.ok()) << yaml;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()), StartsWith(GetParam().message_prefix));
}

INSTANTIATE_TEST_SUITE_P(
    RunSpec, BadPolicyTest,
    ::testing::Values(
        BadPolicy{"UnknownPolicy", "params: {entries: {policy: random, max: 512}}",
                  "params.entries.policy: unknown policy \"random\" (known: mmtests)"},
        BadPolicy{"MissingPolicy", "params: {entries: {max: 512}}",
                  "params.entries.policy: required"},
        BadPolicy{"MissingMax", "params: {entries: {policy: mmtests}}",
                  "params.entries.max: required"},
        BadPolicy{"MaxNotAnInteger", "params: {entries: {policy: mmtests, max: lots}}",
                  "params.entries.max: expected an integer, got \"lots\""},
        BadPolicy{"MaxZero", "params: {entries: {policy: mmtests, max: 0}}",
                  "params.entries.max: must be an integer in [1, 1000000], got \"0\""},
        BadPolicy{"MaxNcpusExpression", "params: {entries: {policy: mmtests, max: 2*ncpus}}",
                  "params.entries.max: expected an integer"},
        BadPolicy{"SweptParameter", "params: {threads: {policy: mmtests, max: 5000}}",
                  "params.threads: is the swept parameter"},
        BadPolicy{"UnknownField", "params: {entries: {policy: mmtests, max: 8, min: 2}}",
                  "params.entries.min: unknown field (expected one of: policy, max)"},
        BadPolicy{"UnknownParameter", "params: {entrys: {policy: mmtests, max: 8}}",
                  "params.entrys: unknown parameter for tlbflush"},
        BadPolicy{"NotAnInteger", "params: {write: {policy: mmtests, max: 1}}",
                  "params.write: the mmtests policy needs an integer parameter"},
        BadPolicy{"ListIsNotAPolicy", "params: {entries: [1, 2]}",
                  "params.entries: expected a scalar value, got a list"}),
    [](const ::testing::TestParamInfo<BadPolicy>& info) { return info.param.test_name; });

TEST(ParamPolicyTest, MaxBeyondTheWorkloadsBoundIsRefusedNamingMax) {
  // tlbflush's accesses stop at 65536.
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(R"(name: t
benchmark: tlbflush
params: {accesses: {policy: mmtests, max: 70000}}
arms: [{name: a}]
)",
                                                  "t.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              StartsWith("params.accesses.max: must be an integer in [1, 65536]"));
}

TEST(ParamPolicyTest, ArmErrorsNameTheArm) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(R"(name: t
benchmark: tlbflush
arms:
  - {name: a, params: {entries: {policy: fib, max: 8}}}
)",
                                                  "t.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              StartsWith("arms[0].params.entries.policy: unknown policy \"fib\""));
}

// The JSON API builds the proto directly; the same checks apply.
TEST(ParamPolicyTest, ValidateRefusesBadPoliciesBuiltInCode) {
  absl::StatusOr<v1::RunSpec> parsed = ParseRunSpec(kTlbflush, "t.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  v1::RunSpec spec = *parsed;
  (*spec.mutable_param_policies())["entries"].set_max(0);
  EXPECT_THAT(std::string(ValidateRunSpec(spec).message()),
              StartsWith("params.entries.max: must be an integer in [1, 1000000], got \"0\""));
  spec = *parsed;
  (*spec.mutable_params())["entries"] = "5";
  EXPECT_THAT(std::string(ValidateRunSpec(spec).message()),
              StartsWith("params.entries: given both as a value and as a policy"));
  spec = *parsed;
  (*spec.mutable_param_policies())["entries"].clear_policy();
  EXPECT_THAT(std::string(ValidateRunSpec(spec).message()),
              HasSubstr("params.entries.policy: required"));
}

}  // namespace
}  // namespace tlbfleet::scheduler
