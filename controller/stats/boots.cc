#include "controller/stats/boots.h"

#include <algorithm>
#include <cmath>

#include "boost/math/distributions/non_central_t.hpp"
#include "boost/math/distributions/normal.hpp"
#include "boost/math/distributions/students_t.hpp"

namespace tlbfleet::stats {
namespace {

// Double precision (Boost would promote to the slower long double).
using StudentsT = boost::math::students_t_distribution<
    double, boost::math::policies::policy<boost::math::policies::promote_double<false>>>;

constexpr int kMaxIterationsPerBoot = 100;
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

std::optional<BootGroups> LogBootGroups(const BootGroups& boots) {
  BootGroups out(boots.size());
  for (size_t b = 0; b < boots.size(); ++b) {
    out[b].reserve(boots[b].size());
    for (double x : boots[b]) {
      if (!(x > 0) || !std::isfinite(x)) return std::nullopt;
      out[b].push_back(std::log(x));
    }
  }
  return out;
}

LogRatioComponents EstimateLogRatioComponents(const BootGroups& base, const BootGroups& other) {
  LogRatioComponents c;
  if (base.size() != other.size()) {
    c.why_undefined = "the arms' boots are not aligned";
    return c;
  }
  const VarianceComponents b = EstimateVarianceComponents(base);
  const VarianceComponents o = EstimateVarianceComponents(other);
  c.boots = std::min(b.boots, o.boots);
  c.iterations_base = b.iterations;
  c.iterations_other = o.iterations;
  c.within_base = b.within;
  c.within_other = o.within;
  std::vector<double> ratios;
  for (size_t i = 0; i < base.size(); ++i) {
    if (base[i].empty() || other[i].empty()) continue;
    double mb = 0, mo = 0;
    for (double x : base[i]) mb += x;
    for (double x : other[i]) mo += x;
    ratios.push_back(mo / static_cast<double>(other[i].size()) -
                     mb / static_cast<double>(base[i].size()));
  }
  if (ratios.size() < 2) {
    c.why_undefined = "fewer than 2 shared boots: boot-to-boot variance of the ratio unknown";
    return c;
  }
  double mean = 0;
  for (double l : ratios) mean += l;
  mean /= static_cast<double>(ratios.size());
  double s2 = 0;
  for (double l : ratios) s2 += (l - mean) * (l - mean);
  s2 /= static_cast<double>(ratios.size() - 1);
  c.log_ratio_variance = s2;
  if (!c.within_base || !c.within_other) {
    c.why_undefined = "one iteration per boot: within-boot variance unknown";
    return c;
  }
  c.interaction =
      std::max(0.0, s2 - *c.within_base / c.iterations_base - *c.within_other / c.iterations_other);
  return c;
}

namespace {

// Kalibera–Jones: minimising (cost per boot) x (variance of one boot's contribution)
// = (c2 + k r c1)(between + within / r) gives r = sqrt(c2 within / (k c1 between)).
double OptimalIterations(double within, double between, double c1, double c2, double k) {
  if (!(between > 0)) return kMaxIterationsPerBoot;
  const double r = std::ceil(std::sqrt(c2 * within / (k * c1 * between)));
  return std::clamp(r, 1.0, static_cast<double>(kMaxIterationsPerBoot));
}

double T(double p, double df) { return boost::math::quantile(StudentsT(df), p); }

using NonCentralT = boost::math::non_central_t_distribution<
    double, boost::math::policies::policy<boost::math::policies::promote_double<false>>>;

// Power of the two-sided t test at alpha to find a change d with standard error se:
// P(|T'| > t(1 - alpha/2)), T' noncentral t with noncentrality d / se.
double DetectPower(double d, double se, double df, double alpha) {
  const double crit = T(1 - alpha / 2, df);
  const NonCentralT t(df, d / se);
  return boost::math::cdf(boost::math::complement(t, crit)) + boost::math::cdf(t, -crit);
}

// Power of TOST at alpha to show |change| < d when nothing changed. Each one-sided test
// fails with P(T' <= t(1 - alpha)), T' noncentral t with noncentrality d / se; the power is
// at least 1 minus both (the two failures hardly ever happen together).
double SamePower(double d, double se, double df, double alpha) {
  const NonCentralT t(df, d / se);
  return 1 - 2 * boost::math::cdf(t, T(1 - alpha, df));
}

// The smallest n in [2, kMaxBoots] meeting both power conditions for a per-boot variance
// `unit_variance` (log scale); df(n) = n - 1 (paired) or 2n - 2 (unpaired).
RepetitionAdvice BootsForPower(double unit_variance, bool paired, double r1,
                               const AdviceOptions& o) {
  RepetitionAdvice advice;
  const double d = std::log1p(o.margin);
  auto df = [&](double n) { return paired ? n - 1 : 2 * n - 2; };
  if (!(unit_variance > 0) || !std::isfinite(unit_variance)) {
    // No spread at all (or none measurable): the fewest boots settle it.
    advice.iterations_per_boot = static_cast<int>(r1);
    advice.boots = 2;
    advice.expected_half_width_pct = 0;
    return advice;
  }
  auto enough = [&](double n) {
    const double se = std::sqrt(unit_variance / n);
    return DetectPower(d, se, df(n), o.alpha) >= o.power &&
           SamePower(d, se, df(n), o.alpha) >= o.power;
  };
  // The normal-theory n is a lower bound (t tails are heavier): start there, then step up
  // by doubling and bisect back.
  const boost::math::normal z;
  const double zd = boost::math::quantile(z, 1 - o.alpha / 2) + boost::math::quantile(z, o.power);
  const double zs =
      boost::math::quantile(z, 1 - o.alpha) + boost::math::quantile(z, 1 - (1 - o.power) / 2);
  double lo = std::clamp(std::ceil(std::max(zd * zd, zs * zs) * unit_variance / (d * d)) - 1, 1.0,
                         static_cast<double>(kMaxBoots));
  double hi = std::max(lo + 1, 2.0);
  while (hi < kMaxBoots && !enough(hi)) {
    lo = hi;
    hi = std::min<double>(2 * hi, kMaxBoots);
  }
  while (hi - lo > 1) {  // enough(hi), and lo is below 2 or not enough
    const double mid = std::floor((lo + hi) / 2);
    if (mid >= 2 && enough(mid)) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  const double n = hi;
  advice.iterations_per_boot = static_cast<int>(r1);
  advice.boots = static_cast<int>(n);
  advice.expected_half_width_pct = 100 * T(1 - o.alpha / 2, df(n)) * std::sqrt(unit_variance / n);
  return advice;
}

bool ValidOptions(const AdviceOptions& o) {
  return o.costs.seconds_per_iteration > 0 && o.costs.seconds_per_boot >= 0 && o.margin > 0 &&
         o.margin < 1 && o.alpha > 0 && o.alpha < 1 && o.power > 0 && o.power < 1;
}

}  // namespace

RepetitionAdvice AdviseUnpaired(const VarianceComponents& base, const VarianceComponents& other,
                                const AdviceOptions& options) {
  RepetitionAdvice advice;
  if (!base.within || !other.within || !base.between || !other.between) {
    advice.why_undefined = "needs 2 boots and 2 iterations per boot in each arm";
    return advice;
  }
  if (!ValidOptions(options)) {
    advice.why_undefined = "invalid costs or options";
    return advice;
  }
  const double r1 =
      OptimalIterations((*base.within + *other.within) / 2, (*base.between + *other.between) / 2,
                        options.costs.seconds_per_iteration, options.costs.seconds_per_boot, 1);
  const double v = *base.between + *base.within / r1 + *other.between + *other.within / r1;
  return BootsForPower(v, false, r1, options);
}

RepetitionAdvice AdvisePaired(const LogRatioComponents& c, const AdviceOptions& options) {
  RepetitionAdvice advice;
  if (!c.interaction || !c.within_base || !c.within_other) {
    advice.why_undefined = c.why_undefined.empty()
                               ? "needs 2 shared boots with 2 iterations per boot in each arm"
                               : c.why_undefined;
    return advice;
  }
  if (!ValidOptions(options)) {
    advice.why_undefined = "invalid costs or options";
    return advice;
  }
  const double within = *c.within_base + *c.within_other;
  const double r1 = OptimalIterations(within, *c.interaction, options.costs.seconds_per_iteration,
                                      options.costs.seconds_per_boot, 2);
  return BootsForPower(*c.interaction + within / r1, true, r1, options);
}

}  // namespace tlbfleet::stats
