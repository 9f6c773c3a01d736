#include "controller/stats/boots.h"

#include <algorithm>
#include <cmath>

#include "boost/math/distributions/normal.hpp"

namespace tlbfleet::stats {
namespace {

constexpr int kMaxIterationsPerBoot = 1000;
constexpr int kMaxBoots = 10000;

}  // namespace

std::optional<double> MeanOfBootMeans(const BootGroups& boots) {
  double sum = 0;
  size_t used = 0;
  for (const std::vector<double>& boot : boots) {
    if (boot.empty()) continue;
    double boot_sum = 0;
    for (double x : boot) boot_sum += x;
    sum += boot_sum / static_cast<double>(boot.size());
    ++used;
  }
  if (used == 0) return std::nullopt;
  const double mean = sum / static_cast<double>(used);
  if (!std::isfinite(mean)) return std::nullopt;
  return mean;
}

VarianceComponents EstimateVarianceComponents(const BootGroups& boots) {
  VarianceComponents vc;
  std::vector<double> means;
  double within_ss = 0;
  double within_df = 0;
  double inverse_r = 0;
  for (const std::vector<double>& boot : boots) {
    if (boot.empty()) continue;
    const double r = static_cast<double>(boot.size());
    double mean = 0;
    for (double x : boot) mean += x;
    mean /= r;
    for (double x : boot) within_ss += (x - mean) * (x - mean);
    within_df += r - 1;
    inverse_r += 1 / r;
    means.push_back(mean);
  }
  vc.boots = means.size();
  if (means.empty()) {
    vc.why_undefined = "no samples";
    return vc;
  }
  vc.iterations = static_cast<double>(means.size()) / inverse_r;
  if (!std::isfinite(within_ss)) {
    vc.why_undefined = "a sample is NaN or infinite";
    return vc;
  }
  if (within_df == 0) {
    vc.why_undefined = "one iteration per boot: within-boot variance unknown";
    return vc;
  }
  vc.within = within_ss / within_df;
  if (means.size() < 2) {
    vc.why_undefined = "one boot: between-boot variance unknown";
    return vc;
  }
  double grand = 0;
  for (double m : means) grand += m;
  grand /= static_cast<double>(means.size());
  double s2 = 0;
  for (double m : means) s2 += (m - grand) * (m - grand);
  s2 /= static_cast<double>(means.size() - 1);
  vc.between_unclipped = s2 - *vc.within / vc.iterations;
  vc.between = std::max(0.0, vc.between_unclipped);
  const double total = *vc.between + *vc.within;
  if (total > 0) vc.between_share = *vc.between / total;
  return vc;
}

RepetitionAdvice RecommendRepetitions(const VarianceComponents& base, double base_mean,
                                      const VarianceComponents& other, double other_mean,
                                      const Costs& costs, double target_half_width,
                                      double confidence) {
  RepetitionAdvice advice;
  if (!base.within || !other.within || !base.between || !other.between) {
    advice.why_undefined = "needs 2 boots and 2 iterations per boot in each arm";
    return advice;
  }
  if (base_mean == 0 || other_mean == 0 || !(costs.seconds_per_iteration > 0) ||
      !(costs.seconds_per_boot >= 0) || !(target_half_width > 0)) {
    advice.why_undefined = "zero mean or invalid costs";
    return advice;
  }
  const double bm2 = base_mean * base_mean;
  const double om2 = other_mean * other_mean;
  const double t1 = (*base.within / bm2 + *other.within / om2) / 2;
  const double t2 = (*base.between / bm2 + *other.between / om2) / 2;
  double r1 = kMaxIterationsPerBoot;
  if (t2 > 0) {
    r1 = std::ceil(std::sqrt(costs.seconds_per_boot / costs.seconds_per_iteration * t1 / t2));
  }
  r1 = std::clamp(r1, 1.0, static_cast<double>(kMaxIterationsPerBoot));
  const double z = boost::math::quantile(boost::math::normal(), 1 - (1 - confidence) / 2);
  const double v =
      (*base.between + *base.within / r1) / bm2 + (*other.between + *other.within / r1) / om2;
  double n = std::ceil(z * z * v / (target_half_width * target_half_width));
  n = std::clamp(n, 2.0, static_cast<double>(kMaxBoots));
  advice.iterations_per_boot = static_cast<int>(r1);
  advice.boots = static_cast<int>(n);
  advice.expected_half_width_pct = 100 * z * std::sqrt(v / n);
  return advice;
}

}  // namespace tlbfleet::stats
