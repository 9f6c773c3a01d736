#pragma once
// Short-range dependence of a series of nightly estimates: AR(1) estimates that survive the
// things a lab series holds besides noise (steps, a bad night), and what the dependence does
// to the variance of a mean or a slope. Pure functions.
//
// Model: x_t = μ_t + e_t with e_t = φ e_{t−1} + u_t, u_t independent; μ_t piecewise constant.
// φ is the lag-1 autocorrelation of the residuals from each segment's least-squares line (a
// drift must not read as correlation), within segments only, with residuals beyond 2.5 robust
// standard deviations clipped (one bad night must not hide the correlation of the others),
// corrected for the bias the fitted lines put into it (after Kendall 1954, E[r₁] ≈
// φ − (1 + 3φ)/n for a fitted mean; for a line, measured). The change-point
// detector asks with the segmentation it is testing: without the candidate split a real step
// reads as correlation. (An estimate from robust scales of the lag-1 and lag-2 differences,
// after Chakar et al., Bernoulli 2017, needs no segmentation but scattered with a standard
// deviation of 0.21 on 100 points at φ = 0.5, against 0.10 for this one: docs/nightly.md.)

#include <cstddef>
#include <optional>
#include <span>

namespace tlbfleet::stats {

// The largest φ the detector uses: nearer 1 an AR(1) is indistinguishable from a random
// walk on 100 points, and the variance factors below blow up.
inline constexpr double kMaxAr1 = 0.9;

// φ from the residuals of a segmentation: `segment_begins` are the first indexes of the
// segments after the first (ascending, in (0, n)). nullopt when fewer than 16 within-segment
// pairs remain (on fewer points its scatter, about 1/√n, is as large as the correlations it
// would correct) or the residuals have no spread. Clamped to [−kMaxAr1, kMaxAr1].
std::optional<double> Ar1FromResiduals(std::span<const double> x,
                                       std::span<const size_t> segment_begins);

// The least-squares line through x against its index, centred at the middle point:
// x_t ≈ mean + slope (t − (n − 1)/2). `sxx` is Σ (t − (n − 1)/2)², `rss` the residual sum
// of squares. Slope 0 for fewer than 2 points.
struct LineFit {
  double mean = 0, slope = 0, sxx = 0, rss = 0;
  double At(size_t t, size_t n) const {
    return mean + slope * (static_cast<double>(t) - (static_cast<double>(n) - 1) / 2);
  }
};
LineFit FitLine(std::span<const double> x);

// n · Var(mean of n consecutive points) / Var(one point) under AR(1) with φ:
// 1 + 2 Σ_{k=1}^{n−1} (1 − k/n) φ^k. 1 for φ = 0 or n < 2.
double Ar1MeanVarianceFactor(size_t n, double phi);

// The same for the least-squares slope of n consecutive points against their index: the
// ratio of its variance under AR(1) to its variance under independent noise of the same
// marginal variance (exact, from the autocovariances). 1 for φ = 0 or n < 3.
double Ar1SlopeVarianceFactor(size_t n, double phi);

// Var(mean of `after` points − mean of `before` points) under AR(1) with φ, the after block
// starting `gap` points after the before block ends, over the same variance for independent
// points: (Var ā + Var b̄ − 2 Cov(ā, b̄)) / (1/n_a + 1/n_b). Adjacent blocks (gap 0) share
// their neighbourhood, which makes the difference vary less than each mean alone suggests.
// 1 for φ = 0.
double Ar1DifferenceOfMeansFactor(size_t before, size_t gap, size_t after, double phi);

}  // namespace tlbfleet::stats
