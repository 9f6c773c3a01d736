#include "controller/stats/boots.h"

#include <cmath>
#include <vector>

#include "boost/math/distributions/non_central_t.hpp"
#include "boost/math/distributions/students_t.hpp"
#include "gtest/gtest.h"

namespace tlbfleet::stats {
namespace {

TEST(MeanOfBootMeansTest, EveryBootWeighsTheSame) {
  const BootGroups boots = {{1, 1, 1, 1}, {3}};
  EXPECT_DOUBLE_EQ(*MeanOfBootMeans(boots), 2);  // not 1.4, the mean of all five
  EXPECT_FALSE(MeanOfBootMeans({}).has_value());
  EXPECT_FALSE(MeanOfBootMeans({{}}).has_value());
}

TEST(VarianceComponentsTest, HandComputed) {
  // Boot means 2 and 6; within-boot deviations +-1 in each boot.
  const BootGroups boots = {{1, 3}, {5, 7}};
  const VarianceComponents vc = EstimateVarianceComponents(boots);
  EXPECT_EQ(vc.boots, 2u);
  EXPECT_DOUBLE_EQ(vc.iterations, 2);
  EXPECT_DOUBLE_EQ(*vc.within, 2);   // (1 + 1 + 1 + 1) / (1 + 1)
  EXPECT_DOUBLE_EQ(*vc.between, 7);  // S2^2 = 8, minus 2 / 2
  EXPECT_DOUBLE_EQ(*vc.between_share, 7.0 / 9);
}

TEST(VarianceComponentsTest, NegativeEstimateClipsToZero) {
  // Boot means equal: S2^2 = 0 < S1^2 / r, so T2^2 is 0, not negative.
  const BootGroups boots = {{1, 3}, {3, 1}};
  const VarianceComponents vc = EstimateVarianceComponents(boots);
  EXPECT_DOUBLE_EQ(*vc.between, 0);
  EXPECT_LT(vc.between_unclipped, 0);
  EXPECT_DOUBLE_EQ(*vc.between_share, 0);
}

TEST(VarianceComponentsTest, DegenerateShapesSayWhy) {
  EXPECT_EQ(EstimateVarianceComponents({}).why_undefined, "no samples");
  const VarianceComponents one_boot = EstimateVarianceComponents({{1, 2, 3}});
  EXPECT_TRUE(one_boot.within.has_value());
  EXPECT_FALSE(one_boot.between.has_value());
  EXPECT_EQ(one_boot.why_undefined, "one boot: between-boot variance unknown");
  const VarianceComponents one_iteration = EstimateVarianceComponents({{1}, {2}});
  EXPECT_FALSE(one_iteration.within.has_value());
  EXPECT_FALSE(one_iteration.between.has_value());
}

TEST(LogRatioComponentsTest, InteractionIsWhatIterationNoiseDoesNotExplain) {
  // Per-boot log ratios 0, 0.02, 0.04 (sample variance 4e-4); each arm's iterations vary
  // by ±0.01 around their boot mean (within variance 1e-4 with 2 iterations, r = 2).
  BootGroups base, other;
  for (int b = 0; b < 3; ++b) {
    const double shared = 0.1 * b;  // the boot effect both arms see: cancels
    base.push_back({shared - 0.01, shared + 0.01});
    other.push_back({shared + 0.02 * b - 0.01, shared + 0.02 * b + 0.01});
  }
  const LogRatioComponents c = EstimateLogRatioComponents(base, other);
  ASSERT_TRUE(c.interaction.has_value()) << c.why_undefined;
  EXPECT_EQ(c.boots, 3u);
  EXPECT_NEAR(*c.within_base, 2e-4, 1e-15);  // (0.01^2 * 2) / (2 - 1) per boot, pooled
  EXPECT_NEAR(*c.log_ratio_variance, 4e-4, 1e-15);
  EXPECT_NEAR(*c.interaction, 4e-4 - 2e-4 / 2 - 2e-4 / 2, 1e-15);
  // Not aligned, or fewer than 2 shared boots: undefined.
  EXPECT_FALSE(EstimateLogRatioComponents(base, {{1.0}}).interaction.has_value());
  EXPECT_FALSE(EstimateLogRatioComponents({{1, 2}}, {{1, 2}}).interaction.has_value());
}

TEST(AdviceTest, PairedKaliberaJonesOptimumCountsBothArmsPerBoot) {
  LogRatioComponents c;
  c.within_base = 1e-4;
  c.within_other = 1e-4;
  c.interaction = 1e-5;
  AdviceOptions options;
  options.costs.seconds_per_iteration = 10;
  options.costs.seconds_per_boot = 90;
  // r1 = ceil(sqrt(90 * 2e-4 / (2 * 10 * 1e-5))) = ceil(9.49) = 10.
  const RepetitionAdvice a = AdvisePaired(c, options);
  ASSERT_TRUE(a.iterations_per_boot && a.boots && a.expected_half_width_pct) << a.why_undefined;
  EXPECT_EQ(*a.iterations_per_boot, 10);
  // Cheap reboots favour more boots with fewer iterations each.
  options.costs.seconds_per_boot = 10;
  EXPECT_EQ(*AdvisePaired(c, options).iterations_per_boot, 4);
  // No interaction shows: the cap, and the fewest boots.
  c.interaction = 0;
  const RepetitionAdvice capped = AdvisePaired(c, options);
  EXPECT_EQ(*capped.iterations_per_boot, 100);
  EXPECT_GE(*capped.boots, 2);
}

// The advised boots are the smallest n meeting both power conditions (docs/statistics.md):
// n - 1 must fail one of them.
TEST(AdviceTest, BootsAreTheSmallestThatMeetBothPowerConditions) {
  VarianceComponents arm;
  arm.within = 4e-4;
  arm.between = 1e-4;
  AdviceOptions options;
  const RepetitionAdvice a = AdviseUnpaired(arm, arm, options);
  ASSERT_TRUE(a.boots.has_value()) << a.why_undefined;
  const double r = *a.iterations_per_boot;
  EXPECT_EQ(r, 5);  // ceil(sqrt(60 / 10 * 4e-4 / 1e-4)) = ceil(4.9)
  const double unit = 2 * (1e-4 + 4e-4 / r);
  const double d = std::log1p(options.margin);
  auto meets = [&](double n) {
    const double df = 2 * n - 2;
    const boost::math::non_central_t t(df, d / std::sqrt(unit / n));
    const double crit = boost::math::quantile(boost::math::students_t(df), 0.975);
    const double detect =
        boost::math::cdf(boost::math::complement(t, crit)) + boost::math::cdf(t, -crit);
    const double same =
        1 - 2 * boost::math::cdf(t, boost::math::quantile(boost::math::students_t(df), 0.95));
    return detect >= 0.8 && same >= 0.8;
  };
  EXPECT_TRUE(meets(*a.boots));
  EXPECT_FALSE(meets(*a.boots - 1));
  // A wider margin needs fewer boots.
  options.margin = 0.05;
  EXPECT_LT(*AdviseUnpaired(arm, arm, options).boots, *a.boots);
}

TEST(AdviceTest, NeedsTwoBootsOfData) {
  const VarianceComponents one_boot = EstimateVarianceComponents({{1, 2, 3}});
  const RepetitionAdvice a = AdviseUnpaired(one_boot, one_boot, AdviceOptions{});
  EXPECT_FALSE(a.boots.has_value());
  EXPECT_FALSE(a.why_undefined.empty());
  EXPECT_FALSE(AdvisePaired(LogRatioComponents{}, AdviceOptions{}).boots.has_value());
}

}  // namespace
}  // namespace tlbfleet::stats
