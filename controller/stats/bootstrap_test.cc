#include "controller/stats/bootstrap.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace tlbfleet::stats {
namespace {

BootGroups MakeBoots(Rng* rng, int boots, int iterations, double mean, double between_sd,
                     double within_sd) {
  BootGroups out(boots);
  for (std::vector<double>& boot : out) {
    const double boot_mean = mean + between_sd * rng->Normal();
    for (int i = 0; i < iterations; ++i) boot.push_back(boot_mean + within_sd * rng->Normal());
  }
  return out;
}

TEST(RngTest, SeededAndUnbiasedEnough) {
  Rng a(1), b(1), c(2);
  EXPECT_EQ(a.Next(), b.Next());
  EXPECT_NE(a.Next(), c.Next());
  std::vector<int> counts(3);
  for (int i = 0; i < 30000; ++i) ++counts[a.Below(3)];
  for (int n : counts) EXPECT_NEAR(n, 10000, 400);
  double sum = 0, sum2 = 0;
  for (int i = 0; i < 100000; ++i) {
    const double z = a.Normal();
    sum += z;
    sum2 += z * z;
  }
  EXPECT_NEAR(sum / 1e5, 0, 0.02);
  EXPECT_NEAR(sum2 / 1e5, 1, 0.02);
}

TEST(BootstrapTest, SameSeedSameInterval) {
  Rng rng(3);
  const BootGroups base = MakeBoots(&rng, 5, 10, 100, 2, 1);
  const BootGroups other = MakeBoots(&rng, 5, 10, 103, 2, 1);
  const RatioInterval a = BootstrapRatioOfMeans(base, other);
  const RatioInterval b = BootstrapRatioOfMeans(base, other);
  EXPECT_EQ(*a.percentile_low, *b.percentile_low);
  EXPECT_EQ(*a.bca_high, *b.bca_high);
  BootstrapOptions other_seed;
  other_seed.seed = 99;
  EXPECT_NE(*a.percentile_low, *BootstrapRatioOfMeans(base, other, other_seed).percentile_low);
}

// The normal approximation of the within-boot level must give the exact method's interval
// on data small enough to run both; tolerance: 5 % of the interval's width.
TEST(BootstrapTest, NormalWithinBootAgreesWithExact) {
  Rng rng(11);
  for (const auto& [boots, iterations, between] :
       {std::tuple{2, 30, 0.5}, std::tuple{8, 5, 2.0}, std::tuple{20, 20, 0.1},
        std::tuple{1, 50, 0.0}}) {
    const BootGroups base = MakeBoots(&rng, boots, iterations, 100, between, 2);
    const BootGroups other = MakeBoots(&rng, boots, iterations, 101, between, 2);
    BootstrapOptions exact, normal;
    exact.within = WithinBoot::kExact;
    normal.within = WithinBoot::kNormal;
    exact.resamples = normal.resamples = 20000;
    const RatioInterval e = BootstrapRatioOfMeans(base, other, exact);
    const RatioInterval n = BootstrapRatioOfMeans(base, other, normal);
    EXPECT_TRUE(e.exact_within);
    EXPECT_FALSE(n.exact_within);
    const double width = *e.percentile_high - *e.percentile_low;
    EXPECT_NEAR(*n.percentile_low, *e.percentile_low, 0.05 * width) << boots << "x" << iterations;
    EXPECT_NEAR(*n.percentile_high, *e.percentile_high, 0.05 * width) << boots << "x" << iterations;
    EXPECT_NEAR(*n.bca_low, *e.bca_low, 0.05 * width) << boots << "x" << iterations;
    EXPECT_NEAR(*n.bca_high, *e.bca_high, 0.05 * width) << boots << "x" << iterations;
  }
}

TEST(BootstrapTest, AutoPicksExactForSmallData) {
  const BootGroups base = {{1, 2, 3}};
  const BootGroups other = {{2, 3, 4}};
  EXPECT_TRUE(BootstrapRatioOfMeans(base, other).exact_within);
  BootstrapOptions tight;
  tight.exact_draw_budget = 10;
  EXPECT_FALSE(BootstrapRatioOfMeans(base, other, tight).exact_within);
}

TEST(BootstrapTest, BetweenBootVarianceWidensTheInterval) {
  Rng rng(5);
  const BootGroups flat_base = MakeBoots(&rng, 10, 20, 100, 0, 1);
  const BootGroups flat_other = MakeBoots(&rng, 10, 20, 100, 0, 1);
  const BootGroups noisy_base = MakeBoots(&rng, 10, 20, 100, 3, 1);
  const BootGroups noisy_other = MakeBoots(&rng, 10, 20, 100, 3, 1);
  const RatioInterval flat = BootstrapRatioOfMeans(flat_base, flat_other);
  const RatioInterval noisy = BootstrapRatioOfMeans(noisy_base, noisy_other);
  EXPECT_GT(*noisy.percentile_high - *noisy.percentile_low,
            3 * (*flat.percentile_high - *flat.percentile_low));
}

TEST(BootstrapTest, DegenerateInputs) {
  EXPECT_EQ(BootstrapRatioOfMeans({}, {{1}}).why_undefined, "an arm has no samples");
  EXPECT_EQ(BootstrapRatioOfMeans({{0, 0}}, {{1}}).why_undefined, "the baseline mean is 0");
  EXPECT_FALSE(BootstrapRatioOfMeans({{std::nan("")}}, {{1}}).ratio.has_value());
  // All values equal: every resample gives the estimate, so BCa (z0 = -inf) is undefined
  // but the percentile interval is the point.
  const RatioInterval flat = BootstrapRatioOfMeans({{2, 2, 2}}, {{3, 3}});
  EXPECT_DOUBLE_EQ(*flat.ratio, 1.5);
  EXPECT_DOUBLE_EQ(*flat.percentile_low, 1.5);
  EXPECT_DOUBLE_EQ(*flat.percentile_high, 1.5);
  EXPECT_FALSE(flat.bca_low.has_value());
  // A baseline that can resample to 0.
  EXPECT_FALSE(BootstrapRatioOfMeans({{0, 1}}, {{1, 1}}).percentile_low.has_value());
}

}  // namespace
}  // namespace tlbfleet::stats
