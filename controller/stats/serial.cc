#include "controller/stats/serial.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tlbfleet::stats {

namespace {

// c of the bias correction below.
constexpr double kLineBiasPerSegment = 2;

double ClampAr1(double phi) { return std::clamp(phi, -kMaxAr1, kMaxAr1); }

double MedianOfValues(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

// Lags beyond which φ^k no longer changes a sum of n terms in double precision.
size_t UsefulLags(size_t n, double phi) {
  const double a = std::fabs(phi);
  if (a == 0) return 0;
  const size_t lags = static_cast<size_t>(std::ceil(std::log(1e-15) / std::log(a)));
  return std::min(n - 1, lags);
}

}  // namespace

LineFit FitLine(std::span<const double> x) {
  LineFit line;
  const size_t n = x.size();
  if (n == 0) return line;
  double sum = 0;
  for (double v : x) sum += v;
  line.mean = sum / static_cast<double>(n);
  const double mid = (static_cast<double>(n) - 1) / 2;
  double sxy = 0;
  for (size_t t = 0; t < n; ++t) {
    const double u = static_cast<double>(t) - mid;
    line.sxx += u * u;
    sxy += u * (x[t] - line.mean);
  }
  line.slope = line.sxx > 0 ? sxy / line.sxx : 0;
  for (size_t t = 0; t < n; ++t) {
    const double r = x[t] - line.At(t, n);
    line.rss += r * r;
  }
  return line;
}

std::optional<double> Ar1FromResiduals(std::span<const double> x,
                                       std::span<const size_t> segment_begins) {
  const size_t n = x.size();
  std::vector<size_t> bounds = {0};
  for (size_t b : segment_begins) {
    if (b > bounds.back() && b < n) bounds.push_back(b);
  }
  bounds.push_back(n);
  // Residuals from each segment's least-squares line: a drift within a segment must not read
  // as correlation (a ramp's residuals from a flat mean are one long run of the same sign).
  std::vector<double> residual(n);
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    const size_t begin = bounds[s], end = bounds[s + 1];
    const LineFit line = FitLine(x.subspan(begin, end - begin));
    for (size_t t = begin; t < end; ++t) residual[t] = x[t] - line.At(t - begin, end - begin);
  }
  // Clip at 2.5 robust standard deviations (MAD · 1.4826): a bad night's square would
  // otherwise dominate the denominator and pull φ towards 0.
  std::vector<double> magnitude(n);
  for (size_t t = 0; t < n; ++t) magnitude[t] = std::fabs(residual[t]);
  const double limit = 2.5 * 1.482602218505602 * MedianOfValues(magnitude);
  if (!(limit > 0)) return std::nullopt;
  for (double& r : residual) r = std::clamp(r, -limit, limit);

  double lagged = 0, squares = 0;
  size_t pairs = 0;
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    for (size_t t = bounds[s]; t < bounds[s + 1]; ++t) {
      squares += residual[t] * residual[t];
      if (t > bounds[s]) {
        lagged += residual[t] * residual[t - 1];
        ++pairs;
      }
    }
  }
  if (pairs < 16 || !(squares > 0)) return std::nullopt;
  const double raw = lagged / squares;
  // The fitted lines bias r₁ down: r₁ ≈ φ − c(1 + 3φ)/n per segment, c = 1 for a mean
  // (Kendall) and, measured for a line (docs/nightly.md), 2 on one segment of 100 points and
  // a little less on shorter ones. c = 2 per segment, solved for φ: slightly conservative on
  // short segments, which offsets the detector's own choice of the split (it biases φ down
  // by about 0.05) and keeps the false-alarm goal at φ = 0.5.
  const double k_over_n =
      kLineBiasPerSegment * static_cast<double>(bounds.size() - 1) / static_cast<double>(n);
  const double corrected = (raw + k_over_n) / std::max(0.1, 1 - 3 * k_over_n);
  return ClampAr1(corrected);
}

double Ar1MeanVarianceFactor(size_t n, double phi) {
  if (n < 2 || phi == 0) return 1;
  const size_t lags = UsefulLags(n, phi);
  double sum = 1, power = 1;
  const double nn = static_cast<double>(n);
  for (size_t k = 1; k <= lags; ++k) {
    power *= phi;
    sum += 2 * (1 - static_cast<double>(k) / nn) * power;
  }
  return std::max(sum, 1e-6);
}

double Ar1SlopeVarianceFactor(size_t n, double phi) {
  if (n < 3 || phi == 0) return 1;
  const double mid = (static_cast<double>(n) - 1) / 2;
  std::vector<double> c(n);
  double independent = 0;
  for (size_t t = 0; t < n; ++t) {
    c[t] = static_cast<double>(t) - mid;
    independent += c[t] * c[t];
  }
  const size_t lags = UsefulLags(n, phi);
  double correlated = independent, power = 1;
  for (size_t k = 1; k <= lags; ++k) {
    power *= phi;
    double cross = 0;
    for (size_t t = 0; t + k < n; ++t) cross += c[t] * c[t + k];
    correlated += 2 * power * cross;
  }
  return std::max(correlated / independent, 1e-6);
}

double Ar1DifferenceOfMeansFactor(size_t before, size_t gap, size_t after, double phi) {
  if (phi == 0 || before == 0 || after == 0) return 1;
  const double nb = static_cast<double>(before), na = static_cast<double>(after);
  const double var_before = Ar1MeanVarianceFactor(before, phi) / nb;
  const double var_after = Ar1MeanVarianceFactor(after, phi) / na;
  // Σ_{i < n_b} Σ_{j < n_a} φ^{(n_b − i) + gap + j}: two geometric sums.
  const double to_end = phi * (1 - std::pow(phi, nb)) / (1 - phi);
  const double from_start = (1 - std::pow(phi, na)) / (1 - phi);
  const double covariance =
      std::pow(phi, static_cast<double>(gap)) * to_end * from_start / (nb * na);
  const double independent = 1 / nb + 1 / na;
  return std::max(1e-6, (var_before + var_after - 2 * covariance) / independent);
}

}  // namespace tlbfleet::stats
