// Boots per arm and adaptive iterations/boots in run specs: parsing, validation, expansion.
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/run_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kBase[] = R"(name: boots-run
benchmark: ebizzy
params: {seconds: 1}
iterations: 2
arms:
  - {name: a, params: {mmap: always}}
  - {name: b, params: {mmap: never}}
)";

std::string With(const std::string& from, const std::string& to) {
  std::string text = kBase;
  const size_t at = text.find(from);
  if (at == std::string::npos) return "REPLACE FAILED: " + from;
  return text.replace(at, from.size(), to);
}

TEST(RunSpecBootsTest, BootsDefaultToOneAndParseAsACount) {
  absl::StatusOr<v1::RunSpec> plain = ParseRunSpec(kBase, "t.yaml");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->boots(), 1u);
  EXPECT_FALSE(plain->has_adaptive());

  absl::StatusOr<v1::RunSpec> three = ParseRunSpec(std::string(kBase) + "boots: 3\n", "t.yaml");
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(three->boots(), 3u);
  EXPECT_EQ(three->iterations(), 2u);
}

TEST(RunSpecBootsTest, TheBootsExampleParses) {
  const std::string path =
      std::string(__FILE__).substr(0, std::string(__FILE__).rfind("/controller/")) +
      "/examples/ceiling-1-vs-512-over-boots.yaml";
  std::ifstream in(path);
  std::stringstream yaml;
  yaml << in.rdbuf();
  ASSERT_FALSE(yaml.str().empty()) << path;
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(yaml.str(), path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->boots(), 4u);
  EXPECT_EQ(ExpandRun(*spec).size(), 4u * 4u * 2u);
}

TEST(RunSpecBootsTest, AdaptiveIterationsStartAtMin) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(
      With("iterations: 2", "iterations: {min: 3, max: 40, target_ci: 1.5%}"), "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->iterations(), 3u);
  EXPECT_EQ(spec->adaptive().iterations().min(), 3u);
  EXPECT_EQ(spec->adaptive().iterations().max(), 40u);
  EXPECT_DOUBLE_EQ(spec->adaptive().target_ci(), 0.015);
  EXPECT_EQ(spec->adaptive().boots().max(), 0u);
  EXPECT_EQ(spec->boots(), 1u);
}

TEST(RunSpecBootsTest, AdaptiveBootsAndIterationsShareOneTarget) {
  absl::StatusOr<v1::RunSpec> spec =
      ParseRunSpec(With("iterations: 2",
                        "iterations: {min: 2, max: 10, target_ci: 0.02}\n"
                        "boots: {min: 2, max: 6, target_ci: 2%, metrics: [records_per_sec]}"),
                   "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->boots(), 2u);
  EXPECT_EQ(spec->adaptive().boots().max(), 6u);
  EXPECT_DOUBLE_EQ(spec->adaptive().target_ci(), 0.02);
  EXPECT_THAT(spec->adaptive().metrics(), ElementsAre("records_per_sec"));
}

struct BadCase {
  std::string yaml;
  std::string prefix;
};

class BadAdaptiveTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadAdaptiveTest, IsRefusedNamingTheField) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(GetParam().yaml, "t.yaml");
  ASSERT_FALSE(spec.ok()) << GetParam().yaml;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()), StartsWith(GetParam().prefix));
}

INSTANTIATE_TEST_SUITE_P(
    RunSpec, BadAdaptiveTest,
    ::testing::Values(
        BadCase{std::string(kBase) + "boots: 0\n", "boots: must be an integer in [1, 1000]"},
        BadCase{std::string(kBase) + "boots: 1001\n", "boots: must be an integer in [1, 1000]"},
        BadCase{std::string(kBase) + "boots: many\n", "boots: expected an integer"},
        BadCase{With("iterations: 2", "iterations: {min: 3, target_ci: 1%}"),
                "iterations.max: required"},
        BadCase{With("iterations: 2", "iterations: {min: 5, max: 3, target_ci: 1%}"),
                "iterations.min: must be between 1 and max (3), got 5"},
        BadCase{With("iterations: 2", "iterations: {min: 2, max: 9}"),
                "iterations.target_ci: required"},
        BadCase{With("iterations: 2", "iterations: {min: 2, max: 9, target_ci: 0}"),
                "iterations.target_ci: required"},
        BadCase{With("iterations: 2", "iterations: {min: 2, max: 9, target_ci: -1%}"),
                "iterations.target_ci: must be above 0 (a ratio CI half-width such as 1%), "
                "got -1%"},
        BadCase{With("iterations: 2", "boots: {min: 1, max: 4, target_ci: -0.5}"),
                "boots.target_ci: must be above 0"},
        BadCase{With("iterations: 2", "iterations: {min: 2, max: 9, target_ci: 90%}"),
                "iterations.target_ci: must be a ratio CI half-width between"},
        BadCase{With("iterations: 2", "iterations: {min: 2, max: 9, target_ci: lots}"),
                "iterations.target_ci: expected a fraction"},
        BadCase{With("iterations: 2", "iterations: {min: 2, max: 9, target_ci: 1%, step: 2}"),
                "iterations.step: unknown field"},
        BadCase{With("iterations: 2",
                     "iterations: {min: 2, max: 9, target_ci: 1%}\n"
                     "boots: {min: 1, max: 3, target_ci: 2%}"),
                "boots.target_ci: differs from the target_ci"},
        BadCase{With("iterations: 2",
                     "iterations: {min: 2, max: 9, target_ci: 1%, "
                     "metrics: [furlongs]}"),
                "iterations.metrics[0]: unknown metric \"furlongs\" of ebizzy"},
        BadCase{"name: one\nbenchmark: ebizzy\narms: [{name: a}]\n"
                "iterations: {min: 2, max: 9, target_ci: 1%}\n",
                "iterations: an adaptive run stops when its arms' comparison settles"},
        BadCase{With("iterations: 2",
                     "iterations: {min: 2, max: 100000, target_ci: 1%}\n"
                     "boots: {min: 1, max: 1000, target_ci: 1%}"),
                "iterations: the run would have more than 1000000 jobs"}));

TEST(RunSpecBootsTest, ValidateRefusesAPlanThatDoesNotStartAtMin) {
  absl::StatusOr<v1::RunSpec> spec =
      ParseRunSpec(With("iterations: 2", "iterations: {min: 3, max: 40, target_ci: 1%}"), "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  spec->set_iterations(7);  // as a JSON client might send it
  absl::Status s = ValidateRunSpec(*spec);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("iterations: an adaptive level starts at its min"));
}

TEST(ExpandBootsTest, JobsAreBootMajorWithWholeIterationsOfEveryArmPerBoot) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(std::string(kBase) + "boots: 3\n", "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::vector<JobPlan> jobs = ExpandRun(*spec);
  ASSERT_EQ(jobs.size(), 3u * 2u * 2u);  // boots x iterations x arms
  std::vector<std::string> order;
  for (const JobPlan& j : jobs) {
    order.push_back(absl::StrCat(j.boot, "/", j.iteration, "/", j.arm));
  }
  EXPECT_THAT(order, ElementsAre("0/1/a", "0/1/b", "0/2/a", "0/2/b", "1/1/a", "1/1/b", "1/2/a",
                                 "1/2/b", "2/1/a", "2/1/b", "2/2/a", "2/2/b"));
}

TEST(ExpandBootsTest, RetargetRedrawsPerIterationParametersForTheNewIteration) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(R"(name: retarget
benchmark: tlbflush
params: {entries: {policy: mmtests, max: 512}}
iterations: 8
arms:
  - {name: a}
  - {name: b, ceiling: 1}
)",
                                                  "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::vector<JobPlan> jobs = ExpandRun(*spec);
  ASSERT_EQ(jobs.size(), 16u);
  // Iteration 3 of the plan, and the first job retargeted to iteration 3 of boot 2, draw
  // the same value: the draw depends on the run, parameter and iteration only.
  JobPlan retargeted = jobs[0];
  RetargetJob(*spec, 2, 3, &retargeted);
  EXPECT_EQ(retargeted.boot, 2u);
  EXPECT_EQ(retargeted.iteration, 3u);
  EXPECT_EQ(retargeted.params.at("entries"), jobs[4].params.at("entries"));
  EXPECT_NE(retargeted.params.at("entries"), jobs[0].params.at("entries"));
  // Iteration 11 falls in section (11-1) mod 8 = 2: 129..192.
  RetargetJob(*spec, 0, 11, &retargeted);
  const int entries = std::stoi(retargeted.params.at("entries"));
  EXPECT_GE(entries, 129);
  EXPECT_LE(entries, 192);
}

}  // namespace
}  // namespace tlbfleet::scheduler
