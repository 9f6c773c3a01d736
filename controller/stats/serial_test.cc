#include "controller/stats/serial.h"

#include <cmath>
#include <vector>

#include "controller/stats/bootstrap.h"
#include "gtest/gtest.h"

namespace tlbfleet::stats {
namespace {

// AR(1) noise with marginal standard deviation 1.
std::vector<double> Ar1(Rng& rng, size_t n, double phi) {
  std::vector<double> e(n);
  e[0] = rng.Normal();
  for (size_t i = 1; i < n; ++i) e[i] = phi * e[i - 1] + std::sqrt(1 - phi * phi) * rng.Normal();
  return e;
}

TEST(Ar1FromResidualsTest, RecoversPhiOnALongSeries) {
  for (double phi : {0.0, 0.3, 0.5, 0.7}) {
    Rng rng(static_cast<uint64_t>(phi * 100) + 1);
    const std::vector<double> x = Ar1(rng, 20000, phi);
    const std::optional<double> estimate = Ar1FromResiduals(x, {});
    ASSERT_TRUE(estimate.has_value());
    EXPECT_NEAR(*estimate, phi, 0.03) << "phi " << phi;
  }
}

// Why the detector asks with the candidate split: a step left in the residuals reads as
// strong correlation, and with the split given φ is right again.
TEST(Ar1FromResidualsTest, AStepReadsAsCorrelationUnlessItsSplitIsGiven) {
  Rng rng(5);
  std::vector<double> x = Ar1(rng, 4000, 0.3);
  for (size_t i = 2000; i < x.size(); ++i) x[i] += 3;
  // The line takes some of the step, not all: φ still reads about 0.57 instead of 0.3.
  EXPECT_GT(*Ar1FromResiduals(x, {}), 0.5);
  const std::vector<size_t> split = {2000};
  EXPECT_NEAR(*Ar1FromResiduals(x, split), 0.3, 0.05);
}

// Corrected for the fitted lines: on short segments the raw lag-1 autocorrelation is biased
// down by a few (1 + 3φ)/n each; averaged over many series of 100 points in 4 segments the
// corrected estimate errs on the conservative side, by less than 0.06.
TEST(Ar1FromResidualsTest, TheFittedMeansBiasIsCorrected) {
  Rng rng(17);
  const std::vector<size_t> splits = {25, 50, 75};
  double sum = 0;
  const int kSeries = 2000;
  for (int i = 0; i < kSeries; ++i) sum += *Ar1FromResiduals(Ar1(rng, 100, 0.5), splits);
  EXPECT_GE(sum / kSeries, 0.5);
  EXPECT_LE(sum / kSeries, 0.56);
}

// A segment's drift is fitted away, not read as correlation.
TEST(Ar1FromResidualsTest, ADriftIsNotCorrelation) {
  Rng rng(29);
  std::vector<double> x = Ar1(rng, 2000, 0.2);
  for (size_t i = 0; i < x.size(); ++i) x[i] += 10.0 * static_cast<double>(i) / 2000;
  EXPECT_NEAR(*Ar1FromResiduals(x, {}), 0.2, 0.05);
}

TEST(Ar1FromResidualsTest, ABadNightDoesNotHideTheCorrelation) {
  Rng rng(23);
  std::vector<double> x = Ar1(rng, 400, 0.5);
  const double clean = *Ar1FromResiduals(x, {});
  x[200] += 12;  // a 12 σ outlier: unclipped, it would pull φ to about 0.35
  EXPECT_NEAR(*Ar1FromResiduals(x, {}), clean, 0.05);
}

TEST(Ar1FromResidualsTest, DegenerateInputHasNoEstimate) {
  const std::vector<double> constant(50, 3.0);
  EXPECT_FALSE(Ar1FromResiduals(constant, {}).has_value());
  const std::vector<double> three = {1, 2, 3};
  EXPECT_FALSE(Ar1FromResiduals(three, {}).has_value());
}

TEST(FitLineTest, RecoversALineAndItsResiduals) {
  const std::vector<double> x = {1, 3, 5, 7, 9.5};  // 2t + 1, the last point 0.5 high
  const LineFit line = FitLine(x);
  EXPECT_NEAR(line.mean, 5.1, 1e-12);
  EXPECT_NEAR(line.slope, 2.1, 1e-12);  // Σ u (x − mean) / Σ u² = 21 / 10
  EXPECT_NEAR(line.sxx, 10, 1e-12);
  EXPECT_NEAR(line.At(0, 5), 5.1 - 2 * 2.1, 1e-12);
  double rss = 0;
  for (size_t t = 0; t < x.size(); ++t) rss += (x[t] - line.At(t, 5)) * (x[t] - line.At(t, 5));
  EXPECT_NEAR(line.rss, rss, 1e-12);
  EXPECT_EQ(FitLine(std::vector<double>{4}).slope, 0);
}

TEST(Ar1VarianceFactorTest, MatchTheFormulaAndASimulation) {
  EXPECT_EQ(Ar1MeanVarianceFactor(1, 0.5), 1);
  EXPECT_EQ(Ar1MeanVarianceFactor(50, 0), 1);
  // n = 3: 1 + 2 ((2/3) φ + (1/3) φ²).
  EXPECT_NEAR(Ar1MeanVarianceFactor(3, 0.5), 1 + 2 * (2.0 / 3 * 0.5 + 1.0 / 3 * 0.25), 1e-12);
  // Large n: (1 + φ) / (1 − φ).
  EXPECT_NEAR(Ar1MeanVarianceFactor(100000, 0.5), 3, 1e-3);

  Rng rng(3);
  const size_t n = 40;
  const double phi = 0.6;
  double mean_sq = 0, slope_sq = 0;
  const int kSeries = 20000;
  const double mid = (n - 1) / 2.0;
  double sxx = 0;
  for (size_t t = 0; t < n; ++t) sxx += (t - mid) * (t - mid);
  for (int i = 0; i < kSeries; ++i) {
    const std::vector<double> e = Ar1(rng, n, phi);
    double m = 0, sxy = 0;
    for (size_t t = 0; t < n; ++t) {
      m += e[t] / n;
      sxy += (t - mid) * e[t];
    }
    mean_sq += m * m / kSeries;
    slope_sq += (sxy / sxx) * (sxy / sxx) / kSeries;
  }
  // Var(mean) = factor / n; Var(slope) = factor / Sxx (unit marginal variance).
  EXPECT_NEAR(mean_sq * n / Ar1MeanVarianceFactor(n, phi), 1, 0.05);
  EXPECT_NEAR(slope_sq * sxx / Ar1SlopeVarianceFactor(n, phi), 1, 0.05);
  EXPECT_EQ(Ar1SlopeVarianceFactor(n, 0), 1);
}

TEST(Ar1VarianceFactorTest, DifferenceOfMeansMatchesASimulation) {
  EXPECT_EQ(Ar1DifferenceOfMeansFactor(10, 0, 10, 0), 1);
  Rng rng(31);
  for (size_t gap : {0, 20}) {
    const double phi = 0.5;
    double sq = 0;
    const int kSeries = 40000;
    for (int i = 0; i < kSeries; ++i) {
      const std::vector<double> e = Ar1(rng, 10 + gap + 10, phi);
      double before = 0, after = 0;
      for (size_t t = 0; t < 10; ++t) before += e[t] / 10;
      for (size_t t = 10 + gap; t < 20 + gap; ++t) after += e[t] / 10;
      sq += (after - before) * (after - before) / kSeries;
    }
    EXPECT_NEAR(sq / (0.2 * Ar1DifferenceOfMeansFactor(10, gap, 10, phi)), 1, 0.03)
        << "gap " << gap;
  }
  // Far apart, the blocks are independent and each mean carries its own factor.
  EXPECT_NEAR(Ar1DifferenceOfMeansFactor(10, 1000, 10, 0.5), Ar1MeanVarianceFactor(10, 0.5), 1e-9);
}

}  // namespace
}  // namespace tlbfleet::stats
