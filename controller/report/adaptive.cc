#include "controller/report/adaptive.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "boost/math/distributions/chi_squared.hpp"
#include "controller/report/sequential.h"

namespace tlbfleet::report {

namespace {

using ChiSquared = boost::math::chi_squared_distribution<
    double, boost::math::policies::policy<boost::math::policies::promote_double<false>>>;

struct Row {
  std::string label;    // "ops_per_sec threads=4, arm fast"
  bool enough = false;  // enough units to settle (see adaptive.h)
  double half_width = std::numeric_limits<double>::infinity();  // of the ratio CI
  double guarded_half_width = std::numeric_limits<double>::infinity();
  std::optional<int> optimal_iterations;  // Kalibera–Jones r1*
};

std::string Percent(double fraction) {
  if (!std::isfinite(fraction)) return "undefined";
  return absl::StrFormat("%.2f%%", fraction * 100);
}

// With adaptive iterations and several boots, only the latest boot is known to have the
// current iteration count (earlier boots kept theirs), so the text says so.
std::string PlanText(const v1::AdaptiveSpec& adaptive, const AdaptivePlan& plan) {
  const std::string iterations = absl::StrCat(plan.iterations_per_boot, " iteration",
                                              plan.iterations_per_boot == 1 ? "" : "s");
  const std::string boots = absl::StrCat(plan.boots, " boot", plan.boots == 1 ? "" : "s");
  if (adaptive.iterations().max() > 0 && plan.boots > 1) {
    return absl::StrCat(boots, " per arm, ", iterations, " in the latest boot");
  }
  return absl::StrCat(iterations, " x ", boots, " per arm");
}

// ", at most 0.81% with 80% confidence" when the guard widened the half-width.
std::string Guarded(const Row& row) {
  if (!std::isfinite(row.guarded_half_width) || row.guarded_half_width <= row.half_width) {
    return "";
  }
  return absl::StrFormat(", at most %s with %.0f%% confidence", Percent(row.guarded_half_width),
                         100 * kStopConfidence);
}

bool Settled(const Row& row, double target) {
  return row.enough && row.guarded_half_width <= target;
}

// How much wider the interval may really be than it looks (>= 1); see adaptive.h. Two
// guards against stopping when the units' sample variance is low by chance:
//  - a floor: a boot unit's variance is at least the iteration noise it averages
//    (T1^2 / r of each arm, estimated from every iteration, with many more degrees of
//    freedom than the boots give), so a smaller estimate is known to be too small;
//  - an upper confidence bound: the variance estimate with df degrees of freedom is scaled
//    to its one-sided kStopConfidence bound, df / chi2(1 - kStopConfidence, df).
double GuardFactor(const ArmResult& base, const ArmResult& arm) {
  const stats::RatioTest& t = arm.test;
  if (!t.se || !t.df || !(*t.se > 0)) return 1;
  double factor = 1;
  if (t.scope == stats::Scope::kAcrossBoots && base.log_variance.within &&
      arm.log_variance.within && t.base_units > 0 && t.other_units > 0) {
    const double floor = *base.log_variance.within / base.log_variance.iterations / t.base_units +
                         *arm.log_variance.within / arm.log_variance.iterations / t.other_units;
    factor *= std::sqrt(std::max(1.0, floor / (*t.se * *t.se)));
  }
  const double chi = boost::math::quantile(ChiSquared(*t.df), 1 - kStopConfidence);
  return factor * std::sqrt(*t.df / chi);
}

std::vector<Row> RowsOf(const std::vector<std::string>& metrics, const Comparison& comparison,
                        bool several_boots) {
  std::vector<Row> rows;
  for (const GroupResult& group : comparison.groups) {
    if (std::find(metrics.begin(), metrics.end(), group.metric) == metrics.end()) continue;
    if (group.arms.empty()) continue;
    const ArmResult& base = group.arms.front();
    for (size_t i = 1; i < group.arms.size(); ++i) {
      const ArmResult& arm = group.arms[i];
      Row row;
      row.label = group.metric;
      if (!group.param_name.empty()) {
        absl::StrAppend(&row.label, " ", group.param_name, "=", group.param_value);
      }
      absl::StrAppend(&row.label, ", arm ", arm.arm);
      if (arm.ratio_ci_low.has_value() && arm.ratio_ci_high.has_value()) {
        row.half_width = (*arm.ratio_ci_high - *arm.ratio_ci_low) / 2;
        row.guarded_half_width = row.half_width * GuardFactor(base, arm);
      }
      if (several_boots) {
        row.enough = arm.test.scope == stats::Scope::kAcrossBoots &&
                     std::min(base.boots, arm.boots) >= kMinBootsToSettle;
      } else {
        row.enough = std::min(base.n, arm.n) >= kMinIterationsToSettle;
      }
      row.optimal_iterations = arm.advice.iterations_per_boot;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace

AdaptiveDecision DecideAdaptive(const v1::AdaptiveSpec& adaptive,
                                const std::vector<std::string>& metrics,
                                const Comparison& comparison, const AdaptivePlan& plan,
                                const std::vector<RowOutcome>* earlier) {
  if (adaptive.stop() == v1::AdaptiveSpec::STOP_VERDICT) {
    return DecideSequential(adaptive, metrics, comparison, plan,
                            earlier != nullptr ? *earlier : std::vector<RowOutcome>{});
  }
  AdaptiveDecision d;
  const double target = adaptive.target_ci();
  const bool several_boots = adaptive.boots().max() >= 2 || plan.boots >= 2;
  const std::vector<Row> rows = RowsOf(metrics, comparison, several_boots);
  if (rows.empty()) {
    d.reason = absl::StrCat("stopped after ", PlanText(adaptive, plan),
                            ": nothing to compare (no samples of the judged metrics in two arms)");
    return d;
  }
  const Row* widest = nullptr;  // the widest unsettled row
  const Row* widest_any = &rows.front();
  size_t unsettled = 0;
  for (const Row& row : rows) {
    if (row.half_width > widest_any->half_width) widest_any = &row;
    if (Settled(row, target)) continue;
    ++unsettled;
    if (widest == nullptr || row.half_width > widest->half_width) widest = &row;
  }
  if (unsettled == 0) {
    d.reason = absl::StrCat("target reached after ", PlanText(adaptive, plan),
                            ": every ratio CI half-width is within ", Percent(target), " (widest ",
                            Percent(widest_any->half_width), Guarded(*widest_any), ": ",
                            widest_any->label, ")");
    return d;
  }
  const bool can_add_boot = adaptive.boots().max() > 0 && plan.boots < adaptive.boots().max();
  const bool adaptive_iterations = adaptive.iterations().max() > 0;
  const bool can_add_iterations =
      adaptive_iterations && plan.iterations_per_boot < adaptive.iterations().max();
  std::string why =
      absl::StrCat(unsettled, " of ", rows.size(), " row", rows.size() == 1 ? "" : "s",
                   " unsettled; widest CI ±", Percent(widest->half_width), Guarded(*widest), " at ",
                   widest->label);
  if (!widest->enough) {
    absl::StrAppend(
        &why, several_boots
                  ? absl::StrCat(" (fewer than ", kMinBootsToSettle, " boots per arm)")
                  : absl::StrCat(" (fewer than ", kMinIterationsToSettle, " iterations per arm)"));
  }
  if (!can_add_boot && !can_add_iterations) {
    d.reason = absl::StrCat("maximum reached (", PlanText(adaptive, plan), ") with ", why,
                            "; target ", Percent(target));
    return d;
  }
  if (can_add_boot) {
    d.action = AdaptiveDecision::Action::kAddBoot;
    d.iterations_per_boot = plan.iterations_per_boot;
    std::string per_boot;
    if (adaptive_iterations && widest->optimal_iterations) {
      d.iterations_per_boot = std::clamp<uint32_t>(
          static_cast<uint32_t>(*widest->optimal_iterations),
          std::max<uint32_t>(adaptive.iterations().min(), 1), adaptive.iterations().max());
      per_boot = absl::StrCat(
          " with ", d.iterations_per_boot, " iteration", d.iterations_per_boot == 1 ? "" : "s",
          " (the Kalibera–Jones optimum ", *widest->optimal_iterations, ", within ",
          adaptive.iterations().min(), "..", adaptive.iterations().max(), ")");
    }
    d.reason = absl::StrCat("adding boot ", plan.boots + 1, " of at most ", adaptive.boots().max(),
                            per_boot, ": ", why);
    return d;
  }
  const uint32_t current = plan.iterations_per_boot;
  const uint32_t cap =
      std::min<uint32_t>(adaptive.iterations().max(), std::max<uint32_t>(current, 1) * 2);
  double wanted = static_cast<double>(cap);
  if (std::isfinite(widest->half_width) && target > 0) {
    const double shrink = widest->half_width / target;
    wanted = std::ceil(static_cast<double>(current) * shrink * shrink);
  }
  d.action = AdaptiveDecision::Action::kAddIterations;
  d.iterations_per_boot = static_cast<uint32_t>(
      std::clamp<double>(wanted, static_cast<double>(current) + 1, static_cast<double>(cap)));
  d.reason = absl::StrCat("growing to ", d.iterations_per_boot, " iterations ",
                          plan.boots > 1 ? "in the latest boot" : "per arm", " (at most ",
                          adaptive.iterations().max(), "): ", why);
  return d;
}

}  // namespace tlbfleet::report
