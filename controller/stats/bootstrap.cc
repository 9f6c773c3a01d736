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

// What the resampler needs of one boot.
struct Boot {
  const std::vector<double>* values;
  double mean;
  double sd_of_mean;  // sqrt(population variance / r)
};

struct Arm {
  std::vector<Boot> boots;
  size_t samples = 0;
  double mean = 0;  // mean of boot means
};

Arm Prepare(const BootGroups& groups) {
  Arm arm;
  for (const std::vector<double>& g : groups) {
    if (g.empty()) continue;
    const double r = static_cast<double>(g.size());
    double mean = 0;
    for (double x : g) mean += x;
    mean /= r;
    double ss = 0;
    for (double x : g) ss += (x - mean) * (x - mean);
    arm.boots.push_back({&g, mean, std::sqrt(ss / r / r)});
    arm.samples += g.size();
    arm.mean += mean;
  }
  if (!arm.boots.empty()) arm.mean /= static_cast<double>(arm.boots.size());
  return arm;
}

double ResampleMean(const Arm& arm, bool exact, Rng* rng) {
  const size_t nb = arm.boots.size();
  double sum = 0;
  for (size_t b = 0; b < nb; ++b) {
    const Boot& boot = arm.boots[rng->Below(nb)];
    if (exact) {
      const std::vector<double>& v = *boot.values;
      double s = 0;
      for (size_t i = 0; i < v.size(); ++i) s += v[rng->Below(v.size())];
      sum += s / static_cast<double>(v.size());
    } else {
      sum += boot.mean + boot.sd_of_mean * rng->Normal();
    }
  }
  return sum / static_cast<double>(nb);
}

// Type 7 (linear interpolation) quantile of ascending `sorted`, as numpy's default.
double Quantile(const std::vector<double>& sorted, double p) {
  const double h = (static_cast<double>(sorted.size()) - 1) * p;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

// Jackknife values of one arm's mean: leave one boot out when the arm has 2 boots or more,
// else leave one iteration of its single boot out (the unit the bootstrap really resamples).
std::vector<double> JackknifeMeans(const Arm& arm) {
  std::vector<double> out;
  const size_t nb = arm.boots.size();
  if (nb >= 2) {
    const double total = arm.mean * static_cast<double>(nb);
    for (const Boot& b : arm.boots) out.push_back((total - b.mean) / static_cast<double>(nb - 1));
    return out;
  }
  const std::vector<double>& v = *arm.boots[0].values;
  if (v.size() < 2) return out;
  double sum = 0;
  for (double x : v) sum += x;
  for (double x : v) out.push_back((sum - x) / static_cast<double>(v.size() - 1));
  return out;
}

// scipy.stats.bootstrap's multi-sample acceleration: per sample j, U_ji = (n_j - 1)
// (mean_i theta_ji - theta_ji); a = sum_j sum_i U^3 / n_j^3 / (6 (sum_j sum_i U^2 / n_j^2)^1.5).
std::optional<double> Acceleration(const Arm& base, const Arm& other) {
  double num = 0, den = 0;
  for (int side = 0; side < 2; ++side) {
    const std::vector<double> jack = JackknifeMeans(side == 0 ? base : other);
    if (jack.size() < 2) continue;
    std::vector<double> theta;
    for (double m : jack) theta.push_back(side == 0 ? other.mean / m : m / base.mean);
    double dot = 0;
    for (double t : theta) dot += t;
    const double n = static_cast<double>(theta.size());
    dot /= n;
    double s2 = 0, s3 = 0;
    for (double t : theta) {
      const double u = (n - 1) * (dot - t);
      s2 += u * u;
      s3 += u * u * u;
    }
    num += s3 / (n * n * n);
    den += s2 / (n * n);
  }
  if (!(den > 0) || !std::isfinite(num)) return std::nullopt;
  return num / (6 * std::pow(den, 1.5));
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

double Rng::Normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // 53-bit uniforms; u1 in (0, 1] so the log is finite.
  const double u1 = static_cast<double>((Next() >> 11) + 1) * 0x1.0p-53;
  const double u2 = static_cast<double>(Next() >> 11) * 0x1.0p-53;
  const double radius = std::sqrt(-2 * std::log(u1));
  const double angle = 2 * std::numbers::pi * u2;
  spare_ = radius * std::sin(angle);
  has_spare_ = true;
  return radius * std::cos(angle);
}

RatioInterval BootstrapRatioOfMeans(const BootGroups& base_groups, const BootGroups& other_groups,
                                    const BootstrapOptions& options) {
  RatioInterval r;
  const Arm base = Prepare(base_groups);
  const Arm other = Prepare(other_groups);
  if (base.boots.empty() || other.boots.empty()) {
    r.why_undefined = "an arm has no samples";
    return r;
  }
  if (!std::isfinite(base.mean) || !std::isfinite(other.mean)) {
    r.why_undefined = "a sample is NaN or infinite";
    return r;
  }
  if (base.mean == 0) {
    r.why_undefined = "the baseline mean is 0";
    return r;
  }
  const double theta = other.mean / base.mean;
  r.ratio = theta;
  if (options.resamples < 2) {
    r.why_undefined = "fewer than 2 resamples";
    return r;
  }
  bool exact = options.within == WithinBoot::kExact;
  if (options.within == WithinBoot::kAuto) {
    exact = static_cast<double>(options.resamples) *
                static_cast<double>(base.samples + other.samples) <=
            static_cast<double>(options.exact_draw_budget);
  }
  r.exact_within = exact;

  Rng rng(options.seed);
  std::vector<double> ratios(static_cast<size_t>(options.resamples));
  for (double& ratio : ratios) {
    const double b = ResampleMean(base, exact, &rng);
    const double o = ResampleMean(other, exact, &rng);
    ratio = o / b;
    if (!std::isfinite(ratio)) {
      r.why_undefined = "a resample of the baseline has mean 0";
      return r;
    }
  }
  std::sort(ratios.begin(), ratios.end());
  const double alpha = 1 - options.confidence;
  r.percentile_low = Quantile(ratios, alpha / 2);
  r.percentile_high = Quantile(ratios, 1 - alpha / 2);

  // BCa (Efron 1987) as scipy computes it. Undefined when every resample falls on one side
  // of the estimate (z0 infinite) or the jackknife has no spread (no acceleration).
  const double below =
      static_cast<double>(std::lower_bound(ratios.begin(), ratios.end(), theta) - ratios.begin());
  const double p0 = below / static_cast<double>(ratios.size());
  const std::optional<double> a = Acceleration(base, other);
  if (p0 > 0 && p0 < 1 && a) {
    const boost::math::normal normal;
    const double z0 = boost::math::quantile(normal, p0);
    auto adjusted = [&](double q) {
      const double zq = boost::math::quantile(normal, q);
      const double num = z0 + zq;
      return boost::math::cdf(normal, z0 + num / (1 - *a * num));
    };
    const double q_low = adjusted(alpha / 2);
    const double q_high = adjusted(1 - alpha / 2);
    if (std::isfinite(q_low) && std::isfinite(q_high)) {
      r.bca_low = Quantile(ratios, q_low);
      r.bca_high = Quantile(ratios, q_high);
    }
  }
  if (!r.bca_low)
    r.why_undefined = "BCa undefined: every resample is on one side, or no jackknife spread";
  return r;
}

}  // namespace tlbfleet::stats
