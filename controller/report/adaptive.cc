#include "controller/report/adaptive.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tlbfleet::report {

namespace {

// A bootstrap interval from fewer samples per arm has only a handful of distinct resamples
// (2 samples: 3 multisets) and can look narrow by chance; such a row never counts as settled.
constexpr size_t kMinSamplesToSettle = 5;

struct Row {
  std::string label;    // "ops_per_sec threads=4, arm fast"
  bool enough = false;  // both arms have kMinSamplesToSettle samples
  double half_width = std::numeric_limits<double>::infinity();  // of the ratio CI
  Verdict verdict = Verdict::kUnknown;
  std::optional<double> between_share;  // the larger of the two arms' shares
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

bool WithinTarget(const Row& row, double target) { return row.enough && row.half_width <= target; }

bool Settled(const Row& row, double target) {
  return WithinTarget(row, target) ||
         (row.enough && (row.verdict == Verdict::kBetter || row.verdict == Verdict::kWorse ||
                         row.verdict == Verdict::kSame));
}

std::vector<Row> RowsOf(const std::vector<std::string>& metrics, const Comparison& comparison) {
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
      }
      row.verdict = arm.verdict;
      row.enough = base.n >= kMinSamplesToSettle && arm.n >= kMinSamplesToSettle;
      for (const ArmResult* a : {&base, &arm}) {
        if (!a->variance.between_share.has_value()) continue;
        row.between_share = std::max(row.between_share.value_or(0), *a->variance.between_share);
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace

AdaptiveDecision DecideAdaptive(const v1::AdaptiveSpec& adaptive,
                                const std::vector<std::string>& metrics,
                                const Comparison& comparison, const AdaptivePlan& plan) {
  AdaptiveDecision d;
  const double target = adaptive.target_ci();
  const std::vector<Row> rows = RowsOf(metrics, comparison);
  if (rows.empty()) {
    d.reason = absl::StrCat("stopped after ", PlanText(adaptive, plan),
                            ": nothing to compare (no samples of the judged metrics in two arms)");
    return d;
  }
  const Row* widest = nullptr;  // the widest unsettled row
  const Row* widest_any = &rows.front();
  size_t within_target = 0;
  size_t unsettled = 0;
  for (const Row& row : rows) {
    if (row.half_width > widest_any->half_width) widest_any = &row;
    if (WithinTarget(row, target)) ++within_target;
    if (Settled(row, target)) continue;
    ++unsettled;
    if (widest == nullptr || row.half_width > widest->half_width) widest = &row;
  }
  if (within_target == rows.size()) {
    d.reason =
        absl::StrCat("target reached after ", PlanText(adaptive, plan),
                     ": every ratio CI half-width", " is within ", Percent(target), " (widest ",
                     Percent(widest_any->half_width), ": ", widest_any->label, ")");
    return d;
  }
  if (unsettled == 0) {
    d.reason =
        absl::StrCat("verdicts settled after ", PlanText(adaptive, plan), ": every row is better,",
                     " worse or same, or within the ", Percent(target), " target (", rows.size(),
                     " row", rows.size() == 1 ? "" : "s", ")");
    return d;
  }
  const bool can_add_boot = adaptive.boots().max() > 0 && plan.boots < adaptive.boots().max();
  const bool can_add_iterations =
      adaptive.iterations().max() > 0 && plan.iterations_per_boot < adaptive.iterations().max();
  const std::string why =
      absl::StrCat(unsettled, " of ", rows.size(), " row", rows.size() == 1 ? "" : "s",
                   " unsettled; widest CI ±", Percent(widest->half_width), " at ", widest->label);
  if (!can_add_boot && !can_add_iterations) {
    d.reason = absl::StrCat("maximum reached (", PlanText(adaptive, plan), ") with ", why,
                            "; target ", Percent(target));
    return d;
  }
  const bool boots_dominate = !widest->between_share.has_value() || *widest->between_share >= 0.5;
  if (can_add_boot && (!can_add_iterations || boots_dominate)) {
    d.action = AdaptiveDecision::Action::kAddBoot;
    d.reason = absl::StrCat(
        "adding boot ", plan.boots + 1, " of at most ", adaptive.boots().max(), ": ", why,
        widest->between_share.has_value() ? absl::StrCat("; ", Percent(*widest->between_share),
                                                         " of its variance is between boots")
                                          : std::string("; between-boot variance not known yet"));
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
  d.reason = absl::StrCat("growing to ", d.iterations_per_boot, " iterations in the latest boot",
                          " (at most ", adaptive.iterations().max(), "): ", why);
  return d;
}

}  // namespace tlbfleet::report
