#include "controller/stats/boots.h"

#include <cmath>
#include <vector>

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

TEST(RecommendTest, KaliberaJonesOptimum) {
  VarianceComponents vc;
  vc.within = 4;   // relative to mean 100: 4e-4
  vc.between = 1;  // 1e-4
  Costs costs;
  costs.seconds_per_iteration = 10;
  costs.seconds_per_boot = 90;
  const RepetitionAdvice a = RecommendRepetitions(vc, 100, vc, 100, costs, 0.01);
  // r1 = ceil(sqrt(90 / 10 * 4 / 1)) = 6.
  ASSERT_TRUE(a.iterations_per_boot && a.boots && a.expected_half_width_pct);
  EXPECT_EQ(*a.iterations_per_boot, 6);
  // v = 2 * (1 + 4 / 6) / 100^2 = 3.33e-4; n = ceil(1.96^2 * v / 0.01^2) = ceil(12.8) = 13.
  EXPECT_EQ(*a.boots, 13);
  const double z = 1.959963984540054;
  EXPECT_NEAR(*a.expected_half_width_pct, 100 * z * std::sqrt(2 * (1 + 4.0 / 6) / 1e4 / 13), 1e-9);
  EXPECT_LE(*a.expected_half_width_pct, 1.0);

  // Cheap reboots favour more boots with fewer iterations.
  costs.seconds_per_boot = 10;
  EXPECT_EQ(*RecommendRepetitions(vc, 100, vc, 100, costs, 0.01).iterations_per_boot, 2);
}

TEST(RecommendTest, NoBetweenBootVarianceCapsIterations) {
  VarianceComponents vc;
  vc.within = 1;
  vc.between = 0;
  const RepetitionAdvice a = RecommendRepetitions(vc, 10, vc, 10, Costs{}, 0.01);
  EXPECT_EQ(*a.iterations_per_boot, 1000);
  EXPECT_EQ(*a.boots, 2);
}

TEST(RecommendTest, NeedsTwoBootsOfData) {
  const VarianceComponents one_boot = EstimateVarianceComponents({{1, 2, 3}});
  const RepetitionAdvice a = RecommendRepetitions(one_boot, 2, one_boot, 2, Costs{});
  EXPECT_FALSE(a.boots.has_value());
  EXPECT_FALSE(a.why_undefined.empty());
}

}  // namespace
}  // namespace tlbfleet::stats
