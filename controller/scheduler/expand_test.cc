#include "controller/scheduler/expand.h"

#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "catalogue/catalogue.h"
#include "controller/scheduler/run_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

v1::SweepSpec Policy(const std::string& policy, int64_t min, int64_t max) {
  v1::SweepSpec sweep;
  sweep.set_param("threads");
  sweep.set_policy(policy);
  sweep.set_min(min);
  sweep.set_max(max);
  return sweep;
}

TEST(SweepValuesTest, NoSweepIsOneEmptyValue) {
  EXPECT_THAT(SweepValues(v1::SweepSpec()), ElementsAre(""));
}

TEST(SweepValuesTest, ExplicitListKeepsOrderAndSpelling) {
  v1::SweepSpec sweep;
  sweep.set_param("threads");
  for (const char* v : {"4", "1", "02"}) sweep.add_values(v);
  EXPECT_THAT(SweepValues(sweep), ElementsAre("4", "1", "02"));
}

TEST(SweepValuesTest, Linear) {
  EXPECT_THAT(SweepValues(Policy("linear", 1, 5)), ElementsAre("1", "2", "3", "4", "5"));
  EXPECT_THAT(SweepValues(Policy("linear", 3, 3)), ElementsAre("3"));
}

TEST(SweepValuesTest, Pow2) {
  EXPECT_THAT(SweepValues(Policy("pow2", 1, 10)), ElementsAre("1", "2", "4", "8", "10"));
  EXPECT_THAT(SweepValues(Policy("pow2", 1, 16)), ElementsAre("1", "2", "4", "8", "16"));
  EXPECT_THAT(SweepValues(Policy("pow2", 3, 20)), ElementsAre("3", "4", "8", "16", "20"));
  EXPECT_THAT(SweepValues(Policy("pow2", 4, 16)), ElementsAre("4", "8", "16"));
  EXPECT_THAT(SweepValues(Policy("pow2", 5, 7)), ElementsAre("5", "7"));
  EXPECT_THAT(SweepValues(Policy("pow2", 1, 1)), ElementsAre("1"));
  EXPECT_THAT(SweepValues(Policy("pow2", 1, 2)), ElementsAre("1", "2"));
}

TEST(SweepValuesTest, Fib) {
  EXPECT_THAT(SweepValues(Policy("fib", 1, 10)), ElementsAre("1", "2", "3", "5", "8", "10"));
  EXPECT_THAT(SweepValues(Policy("fib", 1, 13)), ElementsAre("1", "2", "3", "5", "8", "13"));
  EXPECT_THAT(SweepValues(Policy("fib", 4, 20)), ElementsAre("4", "5", "8", "13", "20"));
  EXPECT_THAT(SweepValues(Policy("fib", 2, 3)), ElementsAre("2", "3"));
  EXPECT_THAT(SweepValues(Policy("fib", 6, 7)), ElementsAre("6", "7"));
  EXPECT_THAT(SweepValues(Policy("fib", 9, 9)), ElementsAre("9"));
}

TEST(SweepValuesTest, HugeBoundsDoNotOverflow) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  std::vector<std::string> pow2 = SweepValues(Policy("pow2", 1, big));
  ASSERT_EQ(pow2.size(), 64u);  // 1, 2, ..., 2^62, max
  EXPECT_EQ(pow2[62], "4611686018427387904");
  EXPECT_EQ(pow2.back(), "9223372036854775807");
  std::vector<std::string> fib = SweepValues(Policy("fib", 1, big));
  EXPECT_EQ(fib.back(), "9223372036854775807");
  EXPECT_EQ(fib.front(), "1");
}

v1::RunSpec ExampleSpec(uint32_t hosts) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(absl::StrCat(R"(name: ebizzy-mmap-vs-malloc
benchmark: ebizzy
params: {seconds: 1}
sweep: {threads: [1, 2]}
iterations: 3
arms:
  - {name: mmap, params: {mmap: always}}
  - {name: malloc, params: {mmap: never}, ceiling: 033}
hosts: {count: )",
                                                               hosts, "}\n"),
                                                  "t.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : v1::RunSpec();
}

using JobKey = std::tuple<uint32_t, uint32_t, std::string, std::string>;  // slot, it, value, arm

std::vector<JobKey> Keys(const std::vector<JobPlan>& jobs) {
  std::vector<JobKey> keys;
  for (const JobPlan& job : jobs) {
    keys.emplace_back(job.slot, job.iteration, job.param_value, job.arm);
  }
  return keys;
}

std::vector<JobKey> ExpectedOrder(uint32_t slots) {
  std::vector<JobKey> keys;
  for (uint32_t slot = 0; slot < slots; ++slot) {
    for (uint32_t iteration = 1; iteration <= 3; ++iteration) {
      for (const char* threads : {"1", "2"}) {
        for (const char* arm : {"mmap", "malloc"}) keys.emplace_back(slot, iteration, threads, arm);
      }
    }
  }
  return keys;
}

TEST(ExpandRunTest, TwoArmsTwoValuesThreeIterationsIsTwelveJobsInterleaved) {
  const std::vector<JobPlan> jobs = ExpandRun(ExampleSpec(1));
  ASSERT_EQ(jobs.size(), 12u);
  EXPECT_THAT(Keys(jobs), ElementsAreArray(ExpectedOrder(1)));
  // Arms alternate job by job (A B A B), so host drift hits both alike.
  EXPECT_EQ(jobs[0].arm, "mmap");
  EXPECT_EQ(jobs[1].arm, "malloc");
  EXPECT_EQ(jobs[2].arm, "mmap");
}

TEST(ExpandRunTest, EveryHostSlotGetsTheFullSet) {
  const std::vector<JobPlan> jobs = ExpandRun(ExampleSpec(2));
  ASSERT_EQ(jobs.size(), 24u);
  EXPECT_THAT(Keys(jobs), ElementsAreArray(ExpectedOrder(2)));
}

TEST(ExpandRunTest, JobsCarryMergedCanonicalParamsCeilingAndTimeout) {
  const std::vector<JobPlan> jobs = ExpandRun(ExampleSpec(1));
  ASSERT_EQ(jobs.size(), 12u);
  const JobPlan& job = jobs[3];  // iteration 1, threads=2, malloc
  EXPECT_EQ(job.arm, "malloc");
  EXPECT_EQ(job.param_name, "threads");
  EXPECT_EQ(job.param_value, "2");
  EXPECT_THAT(job.params, UnorderedElementsAre(Pair("seconds", "1"), Pair("mmap", "never"),
                                               Pair("threads", "2")));
  EXPECT_EQ(job.ceiling, "33");
  EXPECT_EQ(jobs[0].ceiling, "");

  // No job_timeout_seconds: the workload's own bound for these parameters.
  const catalogue::WorkloadSchema* ebizzy = catalogue::FindWorkload("ebizzy");
  ASSERT_NE(ebizzy, nullptr);
  absl::StatusOr<catalogue::Params> resolved = catalogue::ResolveParams(*ebizzy, job.params);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(job.timeout_seconds, static_cast<uint32_t>(ebizzy->TimeoutSeconds(*resolved)));
  EXPECT_GT(job.timeout_seconds, 1u);
}

TEST(ExpandRunTest, ExplicitTimeoutWins) {
  v1::RunSpec spec = ExampleSpec(1);
  spec.set_job_timeout_seconds(600);
  for (const JobPlan& job : ExpandRun(spec)) EXPECT_EQ(job.timeout_seconds, 600u);
}

TEST(ExpandRunTest, ParamsAreMergedRunThenArmThenSweepInCanonicalSpelling) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(R"(name: merge
benchmark: ebizzy
params: {seconds: 1, mmap: auto, random_size: "yes"}
sweep: {threads: ["01"]}
arms:
  - {name: plain}
  - {name: override, params: {mmap: never, random_size: off}}
)",
                                                  "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::vector<JobPlan> jobs = ExpandRun(*spec);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].param_value, "1");
  EXPECT_THAT(jobs[0].params,
              UnorderedElementsAre(Pair("seconds", "1"), Pair("mmap", "auto"),
                                   Pair("random_size", "true"), Pair("threads", "1")));
  EXPECT_THAT(jobs[1].params,
              UnorderedElementsAre(Pair("seconds", "1"), Pair("mmap", "never"),
                                   Pair("random_size", "false"), Pair("threads", "1")));
}

TEST(ExpandRunTest, NoSweepMeansEmptyParamNameAndValue) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(R"(name: nosweep
benchmark: ebizzy
iterations: 2
arms: [{name: a}, {name: b}, {name: c}]
)",
                                                  "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const std::vector<JobPlan> jobs = ExpandRun(*spec);
  ASSERT_EQ(jobs.size(), 6u);
  for (const JobPlan& job : jobs) {
    EXPECT_EQ(job.param_name, "");
    EXPECT_EQ(job.param_value, "");
    EXPECT_THAT(job.params, IsEmpty());
  }
  EXPECT_EQ(jobs[3].iteration, 2u);
  EXPECT_EQ(jobs[3].arm, "a");
}

TEST(ExpandRunTest, PolicySweepExpandsInSequenceOrder) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(R"(name: fib
benchmark: ebizzy
sweep: {threads: {policy: fib, min: 1, max: 6}}
arms: [{name: a}]
)",
                                                  "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::vector<std::string> values;
  for (const JobPlan& job : ExpandRun(*spec)) values.push_back(job.param_value);
  EXPECT_THAT(values, ElementsAre("1", "2", "3", "5", "6"));
}

}  // namespace
}  // namespace tlbfleet::scheduler
