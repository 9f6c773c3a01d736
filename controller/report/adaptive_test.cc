#include "controller/report/adaptive.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

using ::testing::HasSubstr;
using Action = AdaptiveDecision::Action;

// One metric, one sweep value, a baseline and one other arm whose ratio CI is
// [1 - half_width, 1 + half_width] with the given verdict; `boots` boots per arm of
// `iterations` each (across-boots scope from 2 boots on), and a Kalibera–Jones optimum.
Comparison OneRow(double half_width, Verdict verdict, size_t boots = 1, size_t iterations = 10,
                  std::optional<int> optimal_iterations = std::nullopt) {
  Comparison c;
  c.arms = {"base", "new"};
  GroupResult g;
  g.metric = "usecs_per_op";
  g.param_name = "loops";
  g.param_value = "1000";
  ArmResult base;
  base.arm = "base";
  base.n = boots * iterations;
  base.boots = boots;
  base.verdict = Verdict::kBaseline;
  ArmResult other = base;
  other.arm = "new";
  other.ratio_ci_low = 1 - half_width;
  other.ratio_ci_high = 1 + half_width;
  other.verdict = verdict;
  other.test.scope = boots >= 2 ? stats::Scope::kAcrossBoots : stats::Scope::kWithinBoot;
  other.advice.iterations_per_boot = optimal_iterations;
  g.arms = {base, other};
  c.groups.push_back(g);
  return c;
}

v1::AdaptiveSpec Spec(uint32_t iter_max, uint32_t boots_max, double target, uint32_t iter_min = 2) {
  v1::AdaptiveSpec a;
  a.mutable_iterations()->set_min(iter_max > 0 ? iter_min : 0);
  a.mutable_iterations()->set_max(iter_max);
  a.mutable_boots()->set_min(boots_max > 0 ? 1 : 0);
  a.mutable_boots()->set_max(boots_max);
  a.set_target_ci(target);
  return a;
}

const std::vector<std::string> kMetrics = {"usecs_per_op"};

TEST(DecideAdaptiveTest, StopsWhenEveryRowIsWithinTheTarget) {
  AdaptiveDecision d =
      DecideAdaptive(Spec(50, 0, 0.01), kMetrics, OneRow(0.004, Verdict::kUnknown), {10, 1});
  EXPECT_EQ(d.action, Action::kStop);
  EXPECT_THAT(d.reason, HasSubstr("target reached after 10 iterations x 1 boot per arm"));
  EXPECT_THAT(d.reason, HasSubstr("widest 0.40%: usecs_per_op loops=1000, arm new"));
}

// Stopping when a verdict looks settled is optional stopping: it inflates false verdicts
// (docs/statistics.md#adaptive-runs). Only the precision counts.
TEST(DecideAdaptiveTest, NeverStopsOnTheVerdictAlone) {
  for (Verdict v : {Verdict::kBetter, Verdict::kWorse, Verdict::kSame}) {
    AdaptiveDecision d = DecideAdaptive(Spec(50, 0, 0.01), kMetrics, OneRow(0.05, v), {10, 1});
    EXPECT_EQ(d.action, Action::kAddIterations) << VerdictName(v);
  }
}

// At the few degrees of freedom an adaptive run starts with the sample variance is often
// low by chance; a row settles only when its interval is within the target with 80 %
// confidence in that variance: ±0.9 % from df 4 is ±0.9 % * sqrt(4 / chi2(0.2, 4)) = ±1.40 %.
TEST(DecideAdaptiveTest, SettlesOnlyWhenWithinTheTargetWith80PercentConfidence) {
  Comparison c = OneRow(0.009, Verdict::kUnknown, 5, 5);
  c.groups[0].arms[1].test.se = 0.0032;
  c.groups[0].arms[1].test.df = 4;
  AdaptiveDecision d = DecideAdaptive(Spec(0, 6, 0.01), kMetrics, c, {5, 5});
  EXPECT_EQ(d.action, Action::kAddBoot);
  EXPECT_THAT(d.reason, HasSubstr("widest CI ±0.90%, at most 1.40% with 80% confidence at"));
  // Many degrees of freedom: the bound is close to the estimate, and the row settles.
  c.groups[0].arms[1].test.df = 100;
  d = DecideAdaptive(Spec(0, 6, 0.01), kMetrics, c, {5, 5});
  EXPECT_EQ(d.action, Action::kStop);
  EXPECT_THAT(d.reason, HasSubstr("widest 0.90%, at most 0.96% with 80% confidence"));
}

// A boot's unit averages its iterations, so it cannot vary less than their noise / r: an
// interval narrower than that floor is narrow by chance and does not settle a row.
TEST(DecideAdaptiveTest, BootUnitsNeverCountAsQuieterThanTheirIterations) {
  Comparison c = OneRow(0.002, Verdict::kUnknown, 4, 4);
  ArmResult& arm = c.groups[0].arms[1];
  arm.test.se = 0.0005;
  arm.test.df = 1e6;  // no chi-square widening: only the floor
  arm.test.base_units = arm.test.other_units = 4;
  for (ArmResult* a : {&c.groups[0].arms[0], &arm}) {
    a->log_variance.within = 4e-4;  // 2 % iteration noise
    a->log_variance.iterations = 4;
  }
  // Floor: 4e-4 / 4 / 4 for each arm = 5e-5, sd 0.71 %, 14 times the 0.05 % standard error.
  AdaptiveDecision d = DecideAdaptive(Spec(0, 6, 0.01), kMetrics, c, {4, 4});
  EXPECT_EQ(d.action, Action::kAddBoot);
  EXPECT_THAT(d.reason, HasSubstr("widest CI ±0.20%, at most 2.83% with 80% confidence"));
  // Iterations that agree: the narrow interval stands.
  for (ArmResult* a : {&c.groups[0].arms[0], &arm}) a->log_variance.within = 1e-8;
  EXPECT_EQ(DecideAdaptive(Spec(0, 6, 0.01), kMetrics, c, {4, 4}).action, Action::kStop);
}

TEST(DecideAdaptiveTest, GrowsIterationsByTheSquareOfTheShrinkFactorCappedAtDouble) {
  // Half-width 1.2 % for a 1 % target: n * 1.44 = 7.2 -> 8 iterations.
  AdaptiveDecision d =
      DecideAdaptive(Spec(50, 0, 0.01), kMetrics, OneRow(0.012, Verdict::kUnknown), {5, 1});
  EXPECT_EQ(d.action, Action::kAddIterations);
  EXPECT_EQ(d.iterations_per_boot, 8u);
  EXPECT_THAT(d.reason, HasSubstr("growing to 8 iterations per arm (at most 50)"));
  // Half-width 5 %: 25x wanted, but at most double.
  d = DecideAdaptive(Spec(50, 0, 0.01), kMetrics, OneRow(0.05, Verdict::kUnknown), {5, 1});
  EXPECT_EQ(d.iterations_per_boot, 10u);
  // ... and never past the maximum.
  d = DecideAdaptive(Spec(7, 0, 0.01), kMetrics, OneRow(0.05, Verdict::kUnknown), {5, 1});
  EXPECT_EQ(d.iterations_per_boot, 7u);
  EXPECT_THAT(d.reason, HasSubstr("growing to 7 iterations"));
}

// A run that has or may have several boots: a row must include boot-to-boot variance (2
// boots per arm) before it can settle, however narrow its one-boot interval.
TEST(DecideAdaptiveTest, ARowNeedsTwoBootsPerArmWhenTheRunMayHaveSeveral) {
  AdaptiveDecision d =
      DecideAdaptive(Spec(0, 6, 0.01), kMetrics, OneRow(0.001, Verdict::kUnknown, 1, 20), {20, 1});
  EXPECT_EQ(d.action, Action::kAddBoot);
  EXPECT_EQ(d.iterations_per_boot, 20u);
  EXPECT_THAT(d.reason, HasSubstr("adding boot 2 of at most 6"));
  EXPECT_THAT(d.reason, HasSubstr("(fewer than 2 boots per arm)"));
  d = DecideAdaptive(Spec(0, 6, 0.01), kMetrics, OneRow(0.001, Verdict::kUnknown, 2, 20), {20, 2});
  EXPECT_EQ(d.action, Action::kStop);
  EXPECT_THAT(d.reason, HasSubstr("target reached after 20 iterations x 2 boots per arm"));
}

// Iterations can only be added to the boot a host is on; while boots may grow the run adds
// boots, each with the Kalibera–Jones optimum of iterations (within the iterations' range).
TEST(DecideAdaptiveTest, AddsBootsWithTheKaliberaJonesIterationsWhileBootsMayGrow) {
  AdaptiveDecision d = DecideAdaptive(Spec(12, 6, 0.01, 3), kMetrics,
                                      OneRow(0.03, Verdict::kUnknown, 2, 3, 9), {3, 2});
  EXPECT_EQ(d.action, Action::kAddBoot);
  EXPECT_EQ(d.iterations_per_boot, 9u);
  EXPECT_THAT(d.reason, HasSubstr("adding boot 3 of at most 6 with 9 iterations (the "
                                  "Kalibera–Jones optimum 9, within 3..12)"));
  // Clamped to the range.
  d = DecideAdaptive(Spec(12, 6, 0.01, 3), kMetrics, OneRow(0.03, Verdict::kUnknown, 2, 3, 40),
                     {3, 2});
  EXPECT_EQ(d.iterations_per_boot, 12u);
  d = DecideAdaptive(Spec(12, 6, 0.01, 3), kMetrics, OneRow(0.03, Verdict::kUnknown, 2, 3, 1),
                     {3, 2});
  EXPECT_EQ(d.iterations_per_boot, 3u);
  // No optimum known yet (one boot): the current count.
  d = DecideAdaptive(Spec(12, 6, 0.01, 3), kMetrics, OneRow(0.03, Verdict::kUnknown, 1, 3), {3, 1});
  EXPECT_EQ(d.action, Action::kAddBoot);
  EXPECT_EQ(d.iterations_per_boot, 3u);
  // Fixed iterations: every boot gets the same.
  d = DecideAdaptive(Spec(0, 6, 0.01), kMetrics, OneRow(0.03, Verdict::kUnknown, 2, 5, 40), {5, 2});
  EXPECT_EQ(d.iterations_per_boot, 5u);
}

TEST(DecideAdaptiveTest, GrowsTheLatestBootOnlyOnceBootsAreAtTheirMaximum) {
  AdaptiveDecision d =
      DecideAdaptive(Spec(12, 3, 0.01), kMetrics, OneRow(0.015, Verdict::kUnknown, 3, 4), {4, 3});
  EXPECT_EQ(d.action, Action::kAddIterations);
  EXPECT_EQ(d.iterations_per_boot, 8u);  // 4 * 2.25 = 9, at most double
  EXPECT_THAT(d.reason, HasSubstr("growing to 8 iterations in the latest boot"));
}

TEST(DecideAdaptiveTest, StopsAtTheMaximaSayingWhatIsStillOpen) {
  AdaptiveDecision d =
      DecideAdaptive(Spec(5, 2, 0.01), kMetrics, OneRow(0.03, Verdict::kUnknown, 2, 5), {5, 2});
  EXPECT_EQ(d.action, Action::kStop);
  EXPECT_THAT(d.reason,
              HasSubstr("maximum reached (2 boots per arm, 5 iterations in the latest boot)"));
  // With fixed iterations every boot has the same count.
  d = DecideAdaptive(Spec(0, 2, 0.01), kMetrics, OneRow(0.03, Verdict::kUnknown, 2, 5), {5, 2});
  EXPECT_THAT(d.reason, HasSubstr("maximum reached (5 iterations x 2 boots per arm)"));
  EXPECT_THAT(d.reason, HasSubstr("1 of 1 row unsettled; widest CI ±3.00%"));
}

TEST(DecideAdaptiveTest, AnUndefinedIntervalIsUnsettledAndDoublesIterations) {
  Comparison c = OneRow(0.01, Verdict::kUnknown, 1, 2);
  c.groups[0].arms[1].ratio_ci_low.reset();
  AdaptiveDecision d = DecideAdaptive(Spec(50, 0, 0.01), kMetrics, c, {2, 1});
  EXPECT_EQ(d.action, Action::kAddIterations);
  EXPECT_EQ(d.iterations_per_boot, 4u);
}

// Within one boot, a row needs 10 iterations per arm before its precision counts: from
// fewer, a sample variance that is low by chance stops runs early too often (the 3..20
// design of docs/statistics.md#adaptive-runs gave 6.3 % false verdicts with 5).
TEST(DecideAdaptiveTest, FewerThanTenIterationsPerArmNeverSettleInAOneBootRun) {
  Comparison c = OneRow(0.001, Verdict::kBetter, 1, 9);
  AdaptiveDecision d = DecideAdaptive(Spec(50, 0, 0.01), kMetrics, c, {9, 1});
  EXPECT_EQ(d.action, Action::kAddIterations);
  EXPECT_EQ(d.iterations_per_boot, 10u);  // (0.1 % / 1 %)^2 wants fewer: at least one more
  EXPECT_THAT(d.reason, HasSubstr("(fewer than 10 iterations per arm)"));
  c = OneRow(0.001, Verdict::kBetter, 1, 10);
  EXPECT_EQ(DecideAdaptive(Spec(50, 0, 0.01), kMetrics, c, {10, 1}).action, Action::kStop);
}

TEST(DecideAdaptiveTest, OnlyTheJudgedMetricsCount) {
  Comparison c = OneRow(0.004, Verdict::kUnknown);
  GroupResult noisy = c.groups[0];
  noisy.metric = "ops_per_sec";
  noisy.arms[1].ratio_ci_low = 0.5;
  noisy.arms[1].ratio_ci_high = 1.5;
  c.groups.push_back(noisy);
  EXPECT_EQ(DecideAdaptive(Spec(50, 0, 0.01), kMetrics, c, {10, 1}).action, Action::kStop);
  EXPECT_EQ(DecideAdaptive(Spec(50, 0, 0.01), {"usecs_per_op", "ops_per_sec"}, c, {10, 1}).action,
            Action::kAddIterations);
  AdaptiveDecision none = DecideAdaptive(Spec(50, 0, 0.01), {"absent"}, c, {10, 1});
  EXPECT_EQ(none.action, Action::kStop);
  EXPECT_THAT(none.reason, HasSubstr("nothing to compare"));
}

}  // namespace
}  // namespace tlbfleet::report
