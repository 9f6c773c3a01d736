#include "controller/stats/two_sample.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "controller/stats/bootstrap.h"
#include "gtest/gtest.h"

namespace tlbfleet::stats {
namespace {

TEST(WelchTest, DegenerateInputsAreUndefinedWithAReason) {
  const std::vector<double> one = {1};
  const std::vector<double> two = {1, 2};
  EXPECT_EQ(WelchTest(one, two).why_undefined, "fewer than 2 samples in an arm");
  EXPECT_FALSE(WelchTest({}, two).p.has_value());
  const std::vector<double> flat = {3, 3, 3};
  const std::vector<double> flat2 = {4, 4};
  const WelchResult w = WelchTest(flat, flat2);
  EXPECT_FALSE(w.t || w.df || w.p);
  EXPECT_EQ(w.why_undefined, "both arms are constant");
  const std::vector<double> nan = {1, std::nan("")};
  EXPECT_FALSE(WelchTest(nan, two).p.has_value());
}

TEST(WelchTest, OneConstantArmStillTests) {
  const std::vector<double> flat = {10, 10, 10};
  const std::vector<double> other = {11, 12, 13};
  const WelchResult w = WelchTest(flat, other);
  ASSERT_TRUE(w.t && w.df && w.p);
  EXPECT_NEAR(*w.t, 2 / std::sqrt(1.0 / 3), 1e-12);
  EXPECT_NEAR(*w.df, 2, 1e-12);  // all the variance comes from the other arm
}

TEST(MannWhitneyTest, ExactSmallSampleWithoutTies) {
  // Complete separation, 3 vs 3: P(U >= 9) = 1 / C(6, 3) = 1/20; two-sided 0.1.
  const std::vector<double> base = {1, 2, 3};
  const std::vector<double> other = {4, 5, 6};
  const MannWhitneyResult m = MannWhitneyU(base, other);
  EXPECT_TRUE(m.exact);
  EXPECT_DOUBLE_EQ(*m.u, 9);
  EXPECT_NEAR(*m.p, 0.1, 1e-15);
  EXPECT_DOUBLE_EQ(*MannWhitneyU(other, base).u, 0);
}

TEST(MannWhitneyTest, AllTiedIsUndefined) {
  const std::vector<double> a = {5, 5, 5};
  const MannWhitneyResult m = MannWhitneyU(a, a);
  EXPECT_FALSE(m.p.has_value());
  EXPECT_EQ(m.why_undefined, "every value is tied");
  EXPECT_FALSE(MannWhitneyU({}, a).p.has_value());
}

TEST(HodgesLehmannTest, KthDifferenceMatchesBruteForce) {
  Rng rng(7);
  for (int round = 0; round < 30; ++round) {
    std::vector<double> x(1 + rng.Below(40)), y(1 + rng.Below(40));
    // Few distinct values in half the rounds, so ties and equal differences are common.
    const uint64_t levels = round % 2 == 0 ? 5 : 1000000;
    for (double& v : x) v = static_cast<double>(rng.Below(levels)) * 0.25;
    for (double& v : y) v = static_cast<double>(rng.Below(levels)) * 0.25;
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    std::vector<double> all;
    for (double b : y)
      for (double a : x) all.push_back(b - a);
    std::sort(all.begin(), all.end());
    for (uint64_t k = 1; k <= all.size(); k += 1 + all.size() / 17) {
      EXPECT_EQ(KthDifferenceForTest(x, y, k), all[k - 1]) << "round " << round << " k " << k;
    }
    EXPECT_EQ(KthDifferenceForTest(x, y, all.size()), all.back());
  }
}

TEST(HodgesLehmannTest, LargeSamplesWithoutMaterialisingDifferences) {
  // 20,000 x 20,000 = 4e8 differences: feasible only by bisection.
  std::vector<double> base, other;
  for (int i = 0; i < 20000; ++i) {
    base.push_back(i);
    other.push_back(i + 100.5);
  }
  const HodgesLehmannResult h = HodgesLehmann(base, other);
  EXPECT_DOUBLE_EQ(*h.shift, 100.5);
  EXPECT_LT(*h.ci_low, 100.5);
  EXPECT_GT(*h.ci_high, 100.5);
}

TEST(HodgesLehmannTest, DegenerateInputs) {
  const std::vector<double> one = {2};
  const std::vector<double> other = {5};
  const HodgesLehmannResult h = HodgesLehmann(one, other);
  EXPECT_DOUBLE_EQ(*h.shift, 3);  // one difference: it is the interval too
  EXPECT_DOUBLE_EQ(*h.ci_low, 3);
  EXPECT_DOUBLE_EQ(*h.ci_high, 3);
  EXPECT_FALSE(HodgesLehmann({}, other).shift.has_value());
  const std::vector<double> inf = {std::numeric_limits<double>::infinity()};
  EXPECT_EQ(HodgesLehmann(inf, other).why_undefined, "a sample is NaN or infinite");
}

}  // namespace
}  // namespace tlbfleet::stats
