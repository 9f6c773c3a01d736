#include "controller/stats/bootstrap.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "boost/math/distributions/normal.hpp"

namespace tlbfleet::stats {
namespace {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// What the resampler needs of one sample of units.
struct Sample {
  std::span<const double> values;
  double mean = 0;
  double sd_of_mean = 0;  // sqrt(population variance / n), for the normal shortcut
};

Sample Prepare(std::span<const double> values) {
  Sample s;
  s.values = values;
  const double n = static_cast<double>(values.size());
  for (double x : values) s.mean += x;
  s.mean /= n;
  double ss = 0;
  for (double x : values) ss += (x - s.mean) * (x - s.mean);
  s.sd_of_mean = std::sqrt(ss / n / n);
  return s;
}

double ResampleMean(const Sample& s, bool exact, Rng* rng) {
  if (!exact) return s.mean + s.sd_of_mean * rng->Normal();
  double sum = 0;
  for (size_t i = 0; i < s.values.size(); ++i) sum += s.values[rng->Below(s.values.size())];
  return sum / static_cast<double>(s.values.size());
}

// Type 7 (linear interpolation) quantile of ascending `sorted`, as numpy's default.
double Quantile(const std::vector<double>& sorted, double p) {
  const double h = (static_cast<double>(sorted.size()) - 1) * p;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

// Leave-one-out means of one sample.
std::vector<double> JackknifeMeans(const Sample& s) {
  std::vector<double> out;
  if (s.values.size() < 2) return out;
  const double n = static_cast<double>(s.values.size());
  const double total = s.mean * n;
  for (double x : s.values) out.push_back((total - x) / (n - 1));
  return out;
}

// scipy.stats.bootstrap's acceleration: per sample j with jackknife values theta_ji,
// U_ji = (n_j - 1)(mean_i theta_ji - theta_ji); a = sum_j sum_i U^3 / n_j^3 /
// (6 (sum_j sum_i U^2 / n_j^2)^1.5). For one sample (paired) it is the textbook
// sum d^3 / (6 (sum d^2)^1.5).
std::optional<double> Acceleration(const std::vector<const Sample*>& samples,
                                   const std::vector<int>& signs) {
  double num = 0, den = 0;
  for (size_t k = 0; k < samples.size(); ++k) {
    const std::vector<double> jack = JackknifeMeans(*samples[k]);
    if (jack.size() < 2) continue;
    // The statistic changes with this sample's mean by `sign`; the other samples' means are
    // constants that cancel in the differences below.
    const double n = static_cast<double>(jack.size());
    double dot = 0;
    for (double t : jack) dot += signs[k] * t;
    dot /= n;
    double s2 = 0, s3 = 0;
    for (double t : jack) {
      const double u = (n - 1) * (dot - signs[k] * t);
      s2 += u * u;
      s3 += u * u * u;
    }
    num += s3 / (n * n * n);
    den += s2 / (n * n);
  }
  if (!(den > 0) || !std::isfinite(num)) return std::nullopt;
  return num / (6 * std::pow(den, 1.5));
}

bool AllFinite(std::span<const double> v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t state = seed;
  for (uint64_t& s : s_) s = SplitMix64(&state);
}

uint64_t Rng::Next() {
  const uint64_t result = Rotl(s_[0] + s_[3], 23) + s_[0];
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

uint64_t Rng::Below(uint64_t n) {
  unsigned __int128 m = static_cast<unsigned __int128>(Next()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = -n % n;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(Next()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

double Rng::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

double Rng::Normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // 53-bit uniforms; u1 in (0, 1] so the log is finite.
  const double u1 = static_cast<double>((Next() >> 11) + 1) * 0x1.0p-53;
  const double u2 = Uniform();
  const double radius = std::sqrt(-2 * std::log(u1));
  const double angle = 2 * std::numbers::pi * u2;
  spare_ = radius * std::sin(angle);
  has_spare_ = true;
  return radius * std::cos(angle);
}

BootstrapInterval BootstrapLogRatio(std::span<const double> base_units,
                                    std::span<const double> other_units, bool paired, double level,
                                    const BootstrapOptions& options) {
  BootstrapInterval r;
  if (other_units.empty() || (!paired && base_units.empty())) {
    r.why_undefined = "no units to resample";
    return r;
  }
  if (!AllFinite(other_units) || (!paired && !AllFinite(base_units))) {
    r.why_undefined = "a value is not finite";
    return r;
  }
  if (options.resamples < 2 || !(level > 0 && level < 1)) {
    r.why_undefined = "no bootstrap (fewer than 2 resamples)";
    return r;
  }
  const Sample other = Prepare(other_units);
  const Sample base = paired ? Sample{} : Prepare(base_units);
  const double theta = other.mean - base.mean;
  const double units = static_cast<double>(other_units.size() + (paired ? 0 : base_units.size()));
  r.exact = static_cast<double>(options.resamples) * units <=
            static_cast<double>(options.exact_draw_budget);

  Rng rng(options.seed);
  std::vector<double> stats(static_cast<size_t>(options.resamples));
  for (double& s : stats) {
    const double b = paired ? 0 : ResampleMean(base, r.exact, &rng);
    s = ResampleMean(other, r.exact, &rng) - b;
  }
  std::sort(stats.begin(), stats.end());
  const double alpha = 1 - level;
  r.percentile_low = std::exp(Quantile(stats, alpha / 2));
  r.percentile_high = std::exp(Quantile(stats, 1 - alpha / 2));

  // BCa (Efron 1987) as scipy computes it: z0 from the share of resamples below the
  // estimate, counting ties half (scipy averages "<" and "<="). Undefined when every
  // resample falls on one side of the estimate (z0 infinite) or the jackknife has no spread.
  const double below =
      static_cast<double>(std::lower_bound(stats.begin(), stats.end(), theta) - stats.begin());
  const double at_or_below =
      static_cast<double>(std::upper_bound(stats.begin(), stats.end(), theta) - stats.begin());
  const double p0 = (below + at_or_below) / (2 * static_cast<double>(stats.size()));
  const std::optional<double> a =
      paired ? Acceleration({&other}, {1}) : Acceleration({&base, &other}, {-1, 1});
  if (p0 > 0 && p0 < 1 && a) {
    const boost::math::normal normal;
    const double z0 = boost::math::quantile(normal, p0);
    auto adjusted = [&](double q) {
      const double num = z0 + boost::math::quantile(normal, q);
      return boost::math::cdf(normal, z0 + num / (1 - *a * num));
    };
    const double q_low = adjusted(alpha / 2);
    const double q_high = adjusted(1 - alpha / 2);
    if (std::isfinite(q_low) && std::isfinite(q_high)) {
      r.bca_low = std::exp(Quantile(stats, q_low));
      r.bca_high = std::exp(Quantile(stats, q_high));
    }
  }
  if (!r.bca_low) {
    r.why_undefined = "BCa undefined: every resample is on one side, or no jackknife spread";
  }
  return r;
}

}  // namespace tlbfleet::stats
