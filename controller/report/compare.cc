#include "controller/report/compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/report/arm_ceilings.h"
#include "controller/report/arm_hosts.h"
#include "controller/report/render.h"
#include "controller/stats/summary.h"

namespace tlbfleet::report {
namespace {

enum class Shows { kAlways, kHigherIsBetter, kLowerIsBetter };

// How a row's pct_diff reads. kMetric follows the metric's direction; kSpread treats lower
// as better whatever the metric, since less noise is always an improvement.
enum class PctSense { kMetric, kSpread };

// The rows of every group, in order. A new statistic is one more line here.
struct RowDef {
  const char* name;
  Shows shows;
  PctSense sense;
  std::optional<double> (*value)(const stats::Summary&);
};

constexpr RowDef kRows[] = {
    {"Min", Shows::kAlways, PctSense::kMetric, [](const stats::Summary& s) { return s.min; }},
    {"Hmean", Shows::kHigherIsBetter, PctSense::kMetric,
     [](const stats::Summary& s) { return s.hmean; }},
    {"Amean", Shows::kLowerIsBetter, PctSense::kMetric,
     [](const stats::Summary& s) { return s.amean; }},
    {"Stddev", Shows::kAlways, PctSense::kSpread, [](const stats::Summary& s) { return s.stddev; }},
    {"CoeffVar", Shows::kAlways, PctSense::kSpread,
     [](const stats::Summary& s) { return s.coeffvar; }},
    {"Max", Shows::kAlways, PctSense::kMetric, [](const stats::Summary& s) { return s.max; }},
    {"BAmean-99", Shows::kAlways, PctSense::kMetric,
     [](const stats::Summary& s) { return s.bamean99; }},
    {"BAmean-95", Shows::kAlways, PctSense::kMetric,
     [](const stats::Summary& s) { return s.bamean95; }},
};

bool RowShows(const RowDef& row, bool higher_is_better) {
  switch (row.shows) {
    case Shows::kAlways:
      return true;
    case Shows::kHigherIsBetter:
      return higher_is_better;
    case Shows::kLowerIsBetter:
      return !higher_is_better;
  }
  return true;
}

v1::Report::Stat BuildStat(const RowDef& row, const std::vector<ArmResult>& arms,
                           bool higher_is_better) {
  v1::Report::Stat stat;
  stat.set_name(row.name);
  const stats::Direction sense = row.sense == PctSense::kMetric && higher_is_better
                                     ? stats::Direction::kHigherIsBetter
                                     : stats::Direction::kLowerIsBetter;
  const std::optional<double> base = row.value(arms[0].summary);
  for (const ArmResult& arm : arms) {
    const std::optional<double> value = row.value(arm.summary);
    stat.add_values(value.value_or(0));
    stat.add_defined(value.has_value());
    std::optional<double> pct;
    if (base && value) pct = stats::PctDiff(*base, *value, sense);
    stat.add_pct_diff(pct.value_or(0));
  }
  return stat;
}

v1::Report::Verdict BuildVerdict(const ArmResult& arm) {
  v1::Report::Verdict v;
  v.set_arm(arm.arm);
  v.set_verdict(VerdictName(arm.verdict));
  const stats::RatioTest& t = arm.test;
  if (t.design != stats::Design::kNone) {
    v.set_scope(stats::ScopeName(t.scope));
    v.set_design(stats::DesignName(t.design));
  }
  auto set = [](const std::optional<double>& value, auto setter) {
    if (value && std::isfinite(*value)) setter(*value);
  };
  set(t.ratio, [&](double x) { v.set_ratio(x); });
  set(arm.ratio_ci_low, [&](double x) { v.set_ci_low(x); });
  set(arm.ratio_ci_high, [&](double x) { v.set_ci_high(x); });
  set(t.p, [&](double x) { v.set_p(x); });
  set(arm.q, [&](double x) { v.set_q(x); });
  set(t.same_p, [&](double x) { v.set_same_p(x); });
  set(arm.same_q, [&](double x) { v.set_same_q(x); });
  set(arm.change_pct, [&](double x) { v.set_change_pct(x); });
  v.set_units_base(static_cast<uint32_t>(t.base_units));
  v.set_units_other(static_cast<uint32_t>(t.other_units));
  for (const std::string& note : arm.notes) v.add_notes(note);
  return v;
}

v1::Report::Variance BuildVariance(const stats::VarianceComponents& c) {
  v1::Report::Variance v;
  v.set_boots(static_cast<uint32_t>(c.boots));
  v.set_iterations(c.iterations);
  if (c.within) v.set_within(*c.within);
  if (c.between) v.set_between(*c.between);
  if (c.between_share) v.set_between_share(*c.between_share);
  v.set_why_undefined(c.why_undefined);
  return v;
}

// Whether pct_diff[i] means something (see BuildStat): both values defined, and a zero
// baseline only against a zero value.
bool PctDefined(const v1::Report::Stat& stat, int i) {
  if (stat.defined_size() <= i || !stat.defined(0) || !stat.defined(i)) return false;
  return stat.values(0) != 0 || stat.values(i) == 0;
}

}  // namespace

v1::Report ReportFromComparison(const Comparison& comparison) {
  v1::Report report;
  for (const std::string& arm : comparison.arms) report.add_arms(arm);
  report.set_level(comparison.level);
  report.set_margin(comparison.margin);
  report.set_adjusted(comparison.adjusted);
  for (const GroupResult& g : comparison.groups) {
    const bool higher = g.direction == stats::Direction::kHigherIsBetter;
    v1::Report::Group* group = report.add_groups();
    group->set_metric(g.metric);
    group->set_unit(g.unit);
    group->set_better(higher ? v1::BETTER_HIGHER : v1::BETTER_LOWER);
    group->set_param_name(g.param_name);
    group->set_param_value(g.param_value);
    for (const ArmResult& arm : g.arms) {
      group->add_n(static_cast<uint32_t>(arm.n));
      group->add_boots(static_cast<uint32_t>(arm.boots));
      *group->add_variance() = BuildVariance(arm.variance);
    }
    for (const RowDef& row : kRows) {
      if (RowShows(row, higher)) *group->add_stats() = BuildStat(row, g.arms, higher);
    }
    for (size_t i = 1; i < g.arms.size(); ++i) *group->add_verdicts() = BuildVerdict(g.arms[i]);
  }
  AddArmHostsToReport(comparison, &report);
  return report;
}

absl::StatusOr<v1::Report> BuildReport(const std::vector<v1::Sample>& samples,
                                       const std::vector<std::string>& arm_order,
                                       const CompareOptions& options) {
  if (arm_order.empty()) {
    return absl::InvalidArgumentError("arm_order: at least one arm is required");
  }
  CompareOptions with_arms = options;
  with_arms.arm_order = arm_order;
  absl::StatusOr<Comparison> comparison = Compare(ObservationsFromSamples(samples), with_arms);
  if (!comparison.ok()) return comparison.status();
  return ReportFromComparison(*comparison);
}

absl::StatusOr<CompareOptions> CompareOptionsFromRequest(const v1::CompareRequest& request) {
  CompareOptions options;
  options.baseline = request.baseline();
  if (request.has_margin()) options.margin = request.margin();
  if (request.has_level()) options.level = request.level();
  if (!request.pairing().empty()) {
    absl::StatusOr<stats::Pairing> pairing = stats::ParsePairing(request.pairing());
    if (!pairing.ok()) return pairing.status();
    options.pairing = *pairing;
  }
  options.adjust = !request.unadjusted();
  if (absl::Status s = ValidateCompareOptions(options); !s.ok()) return s;
  return options;
}

absl::StatusOr<v1::CompareResponse> CompareRunSamples(const std::vector<v1::Sample>& samples,
                                                      const CompareOptions& options,
                                                      const std::string& title,
                                                      const v1::RunSpec* spec) {
  absl::StatusOr<Comparison> comparison = Compare(ObservationsFromSamples(samples), options);
  if (!comparison.ok()) return comparison.status();
  if (spec != nullptr) AttachArmCeilings(samples, *spec, &*comparison);
  AttachArmHosts(samples, &*comparison);
  v1::CompareResponse response;
  *response.mutable_report() = ReportFromComparison(*comparison);
  response.mutable_report()->set_title(title);
  // Until there are samples the plain table (arm names, no rows) stands in for the text.
  response.set_text(comparison->groups.empty() ? RenderText(response.report())
                                               : RenderComparisonText(*comparison, title));
  return response;
}

namespace {

std::string PadRight(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

std::string PadLeft(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

// A cell of a report that did not come from BuildReport may lack columns; print those
// as undefined rather than read past the end.
std::string Cell(const v1::Report::Stat& stat, int i) {
  const bool defined = i < stat.values_size() && i < stat.defined_size() && stat.defined(i);
  const std::string value =
      defined ? absl::StrFormat("%12.2f", stat.values(i)) : absl::StrFormat("%12s", "NaN");
  const std::string pct = PctDefined(stat, i) && i < stat.pct_diff_size()
                              ? absl::StrFormat("%7.2f", stat.pct_diff(i))
                              : absl::StrFormat("%7s", "NaN");
  return absl::StrCat(value, " (", pct, "%)");
}

std::string GroupLabel(const v1::Report::Group& group) {
  if (group.param_name().empty()) return group.param_value();
  return absl::StrCat(group.param_name(), "=", group.param_value());
}

std::string MetricTitle(const v1::Report::Group& group) {
  const char* direction =
      group.better() == v1::BETTER_LOWER ? "lower is better" : "higher is better";
  if (group.unit().empty()) return absl::StrCat(group.metric(), " (", direction, ")");
  return absl::StrCat(group.metric(), " (", group.unit(), ", ", direction, ")");
}

}  // namespace

std::string RenderText(const v1::Report& report) {
  // Every width is measured from what is printed, so long arm names, long sweep labels and
  // huge values all stay aligned.
  const int num_arms = report.arms_size();
  std::vector<size_t> column(num_arms, 0);
  for (int i = 0; i < num_arms; ++i) column[i] = report.arms(i).size();
  size_t stat_width = 0;
  size_t label_width = 0;
  for (const v1::Report::Group& group : report.groups()) {
    label_width = std::max(label_width, GroupLabel(group).size());
    for (const v1::Report::Stat& stat : group.stats()) {
      stat_width = std::max(stat_width, stat.name().size());
      for (int i = 0; i < num_arms; ++i) {
        column[i] = std::max(column[i], Cell(stat, i).size());
      }
    }
  }
  stat_width += 2;  // as compare-kernels: "CoeffVar" still gets two spaces before the label

  std::string out;
  if (!report.title().empty()) absl::StrAppend(&out, report.title(), "\n\n");
  std::string header(stat_width + label_width, ' ');
  for (int i = 0; i < num_arms; ++i)
    absl::StrAppend(&header, " ", PadLeft(report.arms(i), column[i]));
  const std::string* current_metric = nullptr;
  for (const v1::Report::Group& group : report.groups()) {
    if (current_metric == nullptr || *current_metric != group.metric()) {
      if (current_metric != nullptr) out += "\n";
      absl::StrAppend(&out, MetricTitle(group), "\n", header, "\n");
      current_metric = &group.metric();
    }
    const std::string label = PadRight(GroupLabel(group), label_width);
    for (const v1::Report::Stat& stat : group.stats()) {
      std::string line = PadRight(stat.name(), stat_width) + label;
      for (int i = 0; i < num_arms; ++i) {
        absl::StrAppend(&line, " ", PadLeft(Cell(stat, i), column[i]));
      }
      absl::StrAppend(&out, line, "\n");
    }
  }
  return out;
}

}  // namespace tlbfleet::report
