#include "controller/report/adaptive.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

using ::testing::HasSubstr;
using Action = AdaptiveDecision::Action;

// One metric, one sweep value, a baseline and one other arm whose ratio CI is
// [1 - half_width, 1 + half_width] with the given verdict and between-boot share.
Comparison OneRow(double half_width, Verdict verdict, std::optional<double> between_share) {
  Comparison c;
  c.arms = {"base", "new"};
  GroupResult g;
  g.metric = "usecs_per_op";
  g.param_name = "loops";
  g.param_value = "1000";
  ArmResult base;
  base.arm = "base";
  base.n = 10;
  base.verdict = Verdict::kBaseline;
  ArmResult other;
  other.arm = "new";
  other.n = 10;
  other.ratio_ci_low = 1 - half_width;
  other.ratio_ci_high = 1 + half_width;
  other.verdict = verdict;
  other.variance.between_share = between_share;
  g.arms = {base, other};
  c.groups.push_back(g);
  return c;
}

v1::AdaptiveSpec Spec(uint32_t iter_max, uint32_t boots_max, double target) {
  v1::AdaptiveSpec a;
  a.mutable_iterations()->set_min(iter_max > 0 ? 2 : 0);
  a.mutable_iterations()->set_max(iter_max);
  a.mutable_boots()->set_min(boots_max > 0 ? 1 : 0);
  a.mutable_boots()->set_max(boots_max);
  a.set_target_ci(target);
  return a;
}

const std::vector<std::string> kMetrics = {"usecs_per_op"};

TEST(DecideAdaptiveTest, StopsWhenEveryRowIsWithinTheTarget) {
  AdaptiveDecision d =
      DecideAdaptive(Spec(50, 0, 0.01), kMetrics, OneRow(0.004, Verdict::kUnknown, 0.1), {5, 1});
  EXPECT_EQ(d.action, Action::kStop);
  EXPECT_THAT(d.reason, HasSubstr("target reached after 5 iterations x 1 boot per arm"));
  EXPECT_THAT(d.reason, HasSubstr("widest 0.40%: usecs_per_op loops=1000, arm new"));
}

TEST(DecideAdaptiveTest, StopsWhenTheVerdictIsSettledEvenIfTheCiIsWide) {
  AdaptiveDecision d =
      DecideAdaptive(Spec(50, 0, 0.01), kMetrics, OneRow(0.05, Verdict::kBetter, 0.1), {5, 1});
  EXPECT_EQ(d.action, Action::kStop);
  EXPECT_THAT(d.reason, HasSubstr("verdicts settled"));
}

TEST(DecideAdaptiveTest, GrowsIterationsByTheSquareOfTheShrinkFactorCappedAtDouble) {
  // Half-width 1.2 % for a 1 % target: n * 1.44 = 7.2 -> 8 iterations.
  AdaptiveDecision d =
      DecideAdaptive(Spec(50, 0, 0.01), kMetrics, OneRow(0.012, Verdict::kUnknown, 0.1), {5, 1});
  EXPECT_EQ(d.action, Action::kAddIterations);
  EXPECT_EQ(d.iterations_per_boot, 8u);
  // Half-width 5 %: 25x wanted, but at most double.
  d = DecideAdaptive(Spec(50, 0, 0.01), kMetrics, OneRow(0.05, Verdict::kUnknown, 0.1), {5, 1});
  EXPECT_EQ(d.iterations_per_boot, 10u);
  // ... and never past the maximum.
  d = DecideAdaptive(Spec(7, 0, 0.01), kMetrics, OneRow(0.05, Verdict::kUnknown, 0.1), {5, 1});
  EXPECT_EQ(d.iterations_per_boot, 7u);
  EXPECT_THAT(d.reason, HasSubstr("growing to 7 iterations"));
}

TEST(DecideAdaptiveTest, AddsABootWhenBetweenBootVarianceDominates) {
  AdaptiveDecision d =
      DecideAdaptive(Spec(50, 10, 0.01), kMetrics, OneRow(0.03, Verdict::kUnknown, 0.73), {5, 2});
  EXPECT_EQ(d.action, Action::kAddBoot);
  EXPECT_THAT(d.reason, HasSubstr("adding boot 3 of at most 10"));
  EXPECT_THAT(d.reason, HasSubstr("73.00% of its variance is between boots"));
  // Within-boot noise dominates: iterations instead.
  d = DecideAdaptive(Spec(50, 10, 0.01), kMetrics, OneRow(0.03, Verdict::kUnknown, 0.2), {5, 2});
  EXPECT_EQ(d.action, Action::kAddIterations);
  // With one boot the split is unknown: a boot tells.
  d = DecideAdaptive(Spec(50, 10, 0.01), kMetrics, OneRow(0.03, Verdict::kUnknown, std::nullopt),
                     {5, 1});
  EXPECT_EQ(d.action, Action::kAddBoot);
  EXPECT_THAT(d.reason, HasSubstr("between-boot variance not known yet"));
}

TEST(DecideAdaptiveTest, AddsBootsOnlyWhenIterationsAreFixedOrAtTheirMaximum) {
  AdaptiveDecision d =
      DecideAdaptive(Spec(0, 4, 0.01), kMetrics, OneRow(0.03, Verdict::kUnknown, 0.1), {5, 2});
  EXPECT_EQ(d.action, Action::kAddBoot);
  d = DecideAdaptive(Spec(5, 4, 0.01), kMetrics, OneRow(0.03, Verdict::kUnknown, 0.1), {5, 2});
  EXPECT_EQ(d.action, Action::kAddBoot);
}

TEST(DecideAdaptiveTest, StopsAtTheMaximaSayingWhatIsStillOpen) {
  AdaptiveDecision d =
      DecideAdaptive(Spec(5, 2, 0.01), kMetrics, OneRow(0.03, Verdict::kUnknown, 0.1), {5, 2});
  EXPECT_EQ(d.action, Action::kStop);
  EXPECT_THAT(d.reason,
              HasSubstr("maximum reached (2 boots per arm, 5 iterations in the latest boot)"));
  // With fixed iterations every boot has the same count.
  d = DecideAdaptive(Spec(0, 2, 0.01), kMetrics, OneRow(0.03, Verdict::kUnknown, 0.1), {5, 2});
  EXPECT_THAT(d.reason, HasSubstr("maximum reached (5 iterations x 2 boots per arm)"));
  EXPECT_THAT(d.reason, HasSubstr("1 of 1 row unsettled; widest CI ±3.00%"));
}

TEST(DecideAdaptiveTest, AnUndefinedIntervalIsUnsettledAndDoublesIterations) {
  Comparison c = OneRow(0.01, Verdict::kUnknown, std::nullopt);
  c.groups[0].arms[1].ratio_ci_low.reset();
  AdaptiveDecision d = DecideAdaptive(Spec(50, 0, 0.01), kMetrics, c, {2, 1});
  EXPECT_EQ(d.action, Action::kAddIterations);
  EXPECT_EQ(d.iterations_per_boot, 4u);
}

TEST(DecideAdaptiveTest, FewerThanFiveSamplesPerArmNeverSettle) {
  Comparison c = OneRow(0.001, Verdict::kBetter, 0.1);
  c.groups[0].arms[1].n = 4;
  AdaptiveDecision d = DecideAdaptive(Spec(50, 0, 0.01), kMetrics, c, {2, 1});
  EXPECT_EQ(d.action, Action::kAddIterations);
  EXPECT_EQ(d.iterations_per_boot, 3u);  // (0.1 % / 1 %)^2 wants fewer: at least one more
  c.groups[0].arms[1].n = 5;
  EXPECT_EQ(DecideAdaptive(Spec(50, 0, 0.01), kMetrics, c, {2, 1}).action, Action::kStop);
}

TEST(DecideAdaptiveTest, OnlyTheJudgedMetricsCount) {
  Comparison c = OneRow(0.004, Verdict::kUnknown, 0.1);
  GroupResult noisy = c.groups[0];
  noisy.metric = "ops_per_sec";
  noisy.arms[1].ratio_ci_low = 0.5;
  noisy.arms[1].ratio_ci_high = 1.5;
  c.groups.push_back(noisy);
  EXPECT_EQ(DecideAdaptive(Spec(50, 0, 0.01), kMetrics, c, {5, 1}).action, Action::kStop);
  EXPECT_EQ(DecideAdaptive(Spec(50, 0, 0.01), {"usecs_per_op", "ops_per_sec"}, c, {5, 1}).action,
            Action::kAddIterations);
  AdaptiveDecision none = DecideAdaptive(Spec(50, 0, 0.01), {"absent"}, c, {5, 1});
  EXPECT_EQ(none.action, Action::kStop);
  EXPECT_THAT(none.reason, HasSubstr("nothing to compare"));
}

}  // namespace
}  // namespace tlbfleet::report
