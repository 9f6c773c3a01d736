// `adaptive: {stop, level, margin, spending}` in run specs
// (docs/statistics.md#sequential-verdicts).
#include <string>

#include "absl/status/status.h"
#include "controller/scheduler/run_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::scheduler {
namespace {

using ::testing::StartsWith;

constexpr char kSequentialBase[] = R"(name: sequential-run
benchmark: ebizzy
params: {seconds: 1}
iterations: 5
arms:
  - {name: a, params: {mmap: always}}
  - {name: b, params: {mmap: never}}
)";

absl::StatusOr<v1::RunSpec> ParseWith(const std::string& extra) {
  return ParseRunSpec(std::string(kSequentialBase) + extra, "t.yaml");
}

TEST(RunSpecSequentialTest, StopVerdictNeedsNoTargetAndKeepsItsOptions) {
  absl::StatusOr<v1::RunSpec> spec = ParseWith(
      "boots: {min: 1, max: 6}\n"
      "adaptive: {stop: verdict, level: 0.9, margin: 2%, spending: pocock}\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->adaptive().stop(), v1::AdaptiveSpec::STOP_VERDICT);
  EXPECT_DOUBLE_EQ(spec->adaptive().level(), 0.9);
  EXPECT_DOUBLE_EQ(spec->adaptive().margin(), 0.02);
  EXPECT_EQ(spec->adaptive().spending(), v1::AdaptiveSpec::SPENDING_POCOCK);
  EXPECT_EQ(spec->adaptive().boots().max(), 6u);
  // Precision stays the default and still needs its target.
  spec = ParseWith("boots: {min: 1, max: 6, target_ci: 1%}\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->adaptive().stop(), v1::AdaptiveSpec::STOP_UNSPECIFIED);
}

void ExpectRefused(const std::string& extra, const std::string& prefix) {
  absl::StatusOr<v1::RunSpec> spec = ParseWith(extra);
  ASSERT_FALSE(spec.ok()) << extra;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()), StartsWith(prefix)) << extra;
}

TEST(RunSpecSequentialTest, InconsistentOptionsAreRefusedNamingTheField) {
  ExpectRefused("adaptive: {stop: verdict}\n", "adaptive.spending: alpha spending needs a maximum");
  ExpectRefused("boots: {min: 1, max: 6}\nadaptive: {stop: verdict, level: 1.5}\n",
                "adaptive.level: must be above 0 and below 1");
  ExpectRefused("boots: {min: 1, max: 6}\nadaptive: {stop: verdict, margin: 0}\n",
                "adaptive.margin: must be above 0 and below 1");
  ExpectRefused("boots: {min: 4, max: 3}\nadaptive: {stop: verdict}\n",
                "boots.min: must be between 1 and max (3), got 4");
  ExpectRefused("boots: {min: 1, max: 6, target_ci: 1%}\nadaptive: {spending: pocock}\n",
                "adaptive.spending: only for stop: verdict");
  ExpectRefused("boots: {min: 1, max: 6}\nadaptive: {stop: soon}\n",
                "adaptive.stop: expected precision or verdict");
  ExpectRefused("boots: {min: 1, max: 6}\nadaptive: {stop: verdict, spending: linear}\n",
                "adaptive.spending: expected obrien-fleming or pocock");
  ExpectRefused("boots: {min: 1, max: 6}\nadaptive: {stop: verdict, alpha: 0.05}\n",
                "adaptive.alpha");
}

}  // namespace
}  // namespace tlbfleet::scheduler
