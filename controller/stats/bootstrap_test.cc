#include "controller/stats/bootstrap.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace tlbfleet::stats {
namespace {

std::vector<double> Normals(Rng* rng, int n, double mean, double sd) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(mean + sd * rng->Normal());
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
  double u = 0;
  for (int i = 0; i < 100000; ++i) u += a.Uniform();
  EXPECT_NEAR(u / 1e5, 0.5, 0.005);
}

TEST(BootstrapTest, SameSeedSameInterval) {
  Rng rng(3);
  const std::vector<double> base = Normals(&rng, 8, 0, 0.02);
  const std::vector<double> other = Normals(&rng, 8, 0.03, 0.02);
  const BootstrapInterval a = BootstrapLogRatio(base, other, false, 0.95);
  const BootstrapInterval b = BootstrapLogRatio(base, other, false, 0.95);
  ASSERT_TRUE(a.bca_low.has_value());
  EXPECT_EQ(*a.percentile_low, *b.percentile_low);
  EXPECT_EQ(*a.bca_high, *b.bca_high);
  BootstrapOptions other_seed;
  other_seed.seed = 99;
  EXPECT_NE(*a.percentile_low,
            *BootstrapLogRatio(base, other, false, 0.95, other_seed).percentile_low);
}

// Above the draw budget each resampled mean comes from N(mean, variance / n): the interval
// must match drawing unit by unit within 5 % of its width.
TEST(BootstrapTest, NormalShortcutAgreesWithDrawingEveryUnit) {
  Rng rng(11);
  for (int n : {5, 30, 200}) {
    const std::vector<double> base = Normals(&rng, n, 0, 0.02);
    const std::vector<double> other = Normals(&rng, n, 0.01, 0.02);
    BootstrapOptions exact, shortcut;
    exact.resamples = shortcut.resamples = 20000;
    shortcut.exact_draw_budget = 0;
    const BootstrapInterval e = BootstrapLogRatio(base, other, false, 0.95, exact);
    const BootstrapInterval s = BootstrapLogRatio(base, other, false, 0.95, shortcut);
    EXPECT_TRUE(e.exact);
    EXPECT_FALSE(s.exact);
    const double width = *e.percentile_high - *e.percentile_low;
    EXPECT_NEAR(*s.percentile_low, *e.percentile_low, 0.05 * width) << n;
    EXPECT_NEAR(*s.percentile_high, *e.percentile_high, 0.05 * width) << n;
    EXPECT_NEAR(*s.bca_low, *e.bca_low, 0.05 * width) << n;
    EXPECT_NEAR(*s.bca_high, *e.bca_high, 0.05 * width) << n;
  }
}

// Paired: the per-boot log ratios are resampled as one sample (boot ids drawn jointly for
// both arms), so noise both arms share never enters; the unpaired resampling of the same
// boots keeps it.
TEST(BootstrapTest, PairedResamplingCancelsWhatTheArmsShare) {
  Rng rng(5);
  std::vector<double> base, other, diffs;
  for (int b = 0; b < 10; ++b) {
    const double shared = 0.05 * rng.Normal();
    base.push_back(shared + 0.002 * rng.Normal());
    other.push_back(shared + 0.02 + 0.002 * rng.Normal());
    diffs.push_back(other.back() - base.back());
  }
  const BootstrapInterval paired = BootstrapLogRatio({}, diffs, true, 0.95);
  const BootstrapInterval unpaired = BootstrapLogRatio(base, other, false, 0.95);
  const double paired_width = *paired.percentile_high - *paired.percentile_low;
  const double unpaired_width = *unpaired.percentile_high - *unpaired.percentile_low;
  EXPECT_LT(paired_width * 10, unpaired_width);
  EXPECT_GT(*paired.percentile_low, 1.0);  // the 2 % change shows
  EXPECT_LT(*unpaired.percentile_low, 1.0);
}

// What makes the bootstrap unfit for few boots, and why the verdict uses t: its variance is
// the plug-in one, (B - 1) / B of the unbiased, with normal tails. For 4 units the 95 %
// percentile interval of a mean is about 2 * 1.96 * sqrt(3/4) s / 2 wide, the t interval
// 2 * 3.18 s / 2: 1.9 times as wide.
TEST(BootstrapTest, FewUnitsGiveAnIntervalNarrowerThanT) {
  const std::vector<double> diffs = {-0.01, 0.0, 0.01, 0.02};  // mean 0.005, s = 0.0129
  BootstrapOptions options;
  options.resamples = 40000;
  const BootstrapInterval r = BootstrapLogRatio({}, diffs, true, 0.95, options);
  const double width = std::log(*r.percentile_high) - std::log(*r.percentile_low);
  const double s = 0.012909944487358056;
  EXPECT_NEAR(width, 2 * 1.959964 * std::sqrt(3.0 / 4) * s / 2, 0.15 * width);
  EXPECT_LT(width * 1.6, 2 * 3.182446 * s / 2);
}

// BCa's z0 counts resamples equal to the estimate half below and half above, as scipy does.
// Symmetric data (no skew, acceleration 0) then give z0 = 0 and BCa = percentile, although a
// large share of resamples sits exactly on the estimate; counting only those strictly below
// would shift the interval.
TEST(BootstrapTest, BcaCountsTiesAtTheEstimateHalf) {
  const std::vector<double> diffs = {-0.01, 0.0, 0.01};
  const BootstrapInterval r = BootstrapLogRatio({}, diffs, true, 0.90);
  ASSERT_TRUE(r.bca_low && r.bca_high) << r.why_undefined;
  EXPECT_NEAR(std::log(*r.bca_low), -std::log(*r.bca_high), 1e-3);
  EXPECT_NEAR(*r.bca_low, *r.percentile_low, 1e-3);
}

TEST(BootstrapTest, DegenerateInputs) {
  EXPECT_EQ(BootstrapLogRatio({}, {}, false, 0.95).why_undefined, "no units to resample");
  const std::vector<double> nan = {std::nan("")}, one = {1}, x = {1, 2}, y = {2, 3};
  EXPECT_FALSE(BootstrapLogRatio(nan, one, false, 0.95).percentile_low.has_value());
  BootstrapOptions none;
  none.resamples = 0;
  EXPECT_FALSE(BootstrapLogRatio(x, y, false, 0.95, none).percentile_low.has_value());
  // All values equal: the jackknife has no spread, so BCa is undefined, but the percentile
  // interval is the point.
  const std::vector<double> zeros = {0, 0, 0}, halves = {0.5, 0.5};
  const BootstrapInterval flat = BootstrapLogRatio(zeros, halves, false, 0.95);
  EXPECT_NEAR(*flat.percentile_low, std::exp(0.5), 1e-12);
  EXPECT_NEAR(*flat.percentile_high, std::exp(0.5), 1e-12);
  EXPECT_FALSE(flat.bca_low.has_value());
}

}  // namespace
}  // namespace tlbfleet::stats
