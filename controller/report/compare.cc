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
#include "absl/strings/str_join.h"
#include "controller/report/arm_ceilings.h"
#include "controller/report/arm_hosts.h"
#include "controller/report/ceiling_sweep.h"
#include "controller/report/flush_profile.h"
#include "controller/report/render.h"
#include "controller/stats/summary.h"

namespace tlbfleet::report {
namespace {

enum class Shows { kAlways, kHigherIsBetter, kLowerIsBetter };

// How a row's pct_diff reads. kMetric follows the metric's direction; kSpread treats lower
// as better whatever the metric, since less noise is always an improvement.
enum class PctSense { kMetric, kSpread };

// The rows of every group, in order: the text table, the Report's stats (JSON) and the
// dashboard all follow this list. A new statistic is its value in stats::Summary
// (controller/stats/summary.*), one line here, and — for the CSV/JSON records — one field of
// Report.Record (proto/tlbfleet/v1/common.proto) set in BuildRecord below
// (docs/architecture.md, "Where a new thing goes").
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
  stat.set_spread(row.sense == PctSense::kSpread);
  stat.set_headline(row.shows != Shows::kAlways);
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

// Every figure of one (group, arm): the JSON and CSV record (docs/statistics.md).
v1::Report::Record BuildRecord(const Comparison& c, const GroupResult& g, const ArmResult& a) {
  const bool base = a.verdict == Verdict::kBaseline;
  const bool higher = g.direction == stats::Direction::kHigherIsBetter;
  const stats::Summary& s = a.summary;
  const stats::RatioTest& t = a.test;
  v1::Report::Record r;
  // Sets a field from an optional finite value; the comparison fields only for a non-baseline.
  auto put = [](const std::optional<double>& v, auto setter) {
    if (v && std::isfinite(*v)) setter(*v);
  };
  auto cmp = [&](const std::optional<double>& v, auto setter) {
    if (!base) put(v, setter);
  };
  r.set_arm(a.arm);
  r.set_param(SweepLabel(g.param_name, g.param_value));
  r.set_param_name(g.param_name);
  r.set_param_value(g.param_value);
  r.set_metric(g.metric);
  r.set_unit(g.unit);
  r.set_better(higher ? "higher" : "lower");
  r.set_n(static_cast<uint32_t>(a.n));
  r.set_boots(static_cast<uint32_t>(a.boots));
  put(s.min, [&](double x) { r.set_min(x); });
  put(s.max, [&](double x) { r.set_max(x); });
  put(s.amean, [&](double x) { r.set_amean(x); });
  put(s.hmean, [&](double x) { r.set_hmean(x); });
  put(s.gmean, [&](double x) { r.set_gmean(x); });
  put(s.stddev, [&](double x) { r.set_stddev(x); });
  put(s.coeffvar, [&](double x) { r.set_coeffvar(x); });
  put(s.bamean95, [&](double x) { r.set_bamean95(x); });
  put(s.bamean99, [&](double x) { r.set_bamean99(x); });
  put(a.mean_of_boot_means, [&](double x) { r.set_mean_of_boot_means(x); });
  cmp(a.pct_diff, [&](double x) { r.set_pct_diff(x); });
  r.set_pct_diff_statistic(higher ? "hmean" : "amean");
  r.set_estimand("gmean_ratio");
  cmp(t.ratio, [&](double x) { r.set_ratio(x); });
  cmp(a.change_pct, [&](double x) { r.set_change_pct(x); });
  cmp(a.ratio_ci_low, [&](double x) { r.set_ratio_ci_low(x); });
  cmp(a.ratio_ci_high, [&](double x) { r.set_ratio_ci_high(x); });
  r.set_ci_level(c.level);
  r.set_ratio_ci_method(a.ratio_ci_method);
  cmp(t.p, [&](double x) { r.set_p(x); });
  cmp(a.q, [&](double x) { r.set_q(x); });
  cmp(t.same_p, [&](double x) { r.set_same_p(x); });
  cmp(a.same_q, [&](double x) { r.set_same_q(x); });
  r.set_margin(c.margin);
  r.set_adjusted(c.adjusted);
  cmp(a.adjusted_ci_low, [&](double x) { r.set_adjusted_ci_low(x); });
  cmp(a.adjusted_ci_high, [&](double x) { r.set_adjusted_ci_high(x); });
  if (a.adjusted_level > 0) cmp(a.adjusted_level, [&](double x) { r.set_adjusted_ci_level(x); });
  cmp(a.significance_p, [&](double x) { r.set_significance_p(x); });
  r.set_significant(a.significant);
  if (!base && t.design != stats::Design::kNone) r.set_scope(stats::ScopeName(t.scope));
  if (!base && *stats::DesignName(t.design) != '\0') r.set_design(stats::DesignName(t.design));
  if (!base) {
    r.set_units_base(static_cast<uint32_t>(t.base_units));
    r.set_units_other(static_cast<uint32_t>(t.other_units));
    r.set_shared_boots(static_cast<uint32_t>(t.shared_boots));
  }
  cmp(a.welch.t, [&](double x) { r.set_welch_t(x); });
  cmp(a.welch.df, [&](double x) { r.set_welch_df(x); });
  cmp(a.welch.p, [&](double x) { r.set_welch_p(x); });
  cmp(a.mwu.u, [&](double x) { r.set_mwu_u(x); });
  cmp(a.mwu.p, [&](double x) { r.set_mwu_p(x); });
  cmp(a.hl.shift, [&](double x) { r.set_hl_shift(x); });
  cmp(a.hl.ci_low, [&](double x) { r.set_hl_ci_low(x); });
  cmp(a.hl.ci_high, [&](double x) { r.set_hl_ci_high(x); });
  const stats::BootstrapInterval& b = a.bootstrap;
  cmp(b.bca_low ? b.bca_low : b.percentile_low, [&](double x) { r.set_bootstrap_ci_low(x); });
  cmp(b.bca_high ? b.bca_high : b.percentile_high, [&](double x) { r.set_bootstrap_ci_high(x); });
  r.set_bootstrap_ci_method(b.bca_low ? "bca" : b.percentile_low ? "percentile" : "");
  put(a.variance.between, [&](double x) { r.set_var_between_boots(x); });
  put(a.variance.within, [&](double x) { r.set_var_within_boots(x); });
  put(a.variance.between_share, [&](double x) { r.set_between_boot_share(x); });
  cmp(a.log_ratio_components.interaction, [&](double x) { r.set_log_ratio_var_between_boots(x); });
  if (!base) r.set_verdict(VerdictName(a.verdict));
  if (a.advice.iterations_per_boot) r.set_recommend_iterations(*a.advice.iterations_per_boot);
  if (a.advice.boots) r.set_recommend_boots(*a.advice.boots);
  put(a.advice.expected_half_width_pct, [&](double x) { r.set_expected_ci_half_width_pct(x); });
  std::string notes = absl::StrJoin(a.notes, "; ");
  if (!s.why_undefined.empty()) {
    notes = notes.empty() ? s.why_undefined : absl::StrCat(notes, "; ", s.why_undefined);
  }
  r.set_notes(notes);
  r.set_ceiling(a.ceiling);
  r.set_hosts(a.hosts);
  r.set_excluded(a.excluded);
  for (const std::string& note : a.notes) r.add_note_lines(note);
  return r;
}

// The sequential verdict of each judged row of a stop: verdict run, in place of the
// fixed-sample one (RunReportOptions::adaptive_rows).
void ApplySequentialVerdicts(const google::protobuf::RepeatedPtrField<v1::AdaptiveRow>& rows,
                             Comparison* comparison) {
  for (GroupResult& group : comparison->groups) {
    for (size_t i = 1; i < group.arms.size(); ++i) {
      ArmResult& arm = group.arms[i];
      const v1::AdaptiveRow* row = nullptr;
      for (const v1::AdaptiveRow& r : rows) {
        if (r.metric() == group.metric && r.param_name() == group.param_name &&
            r.param_value() == group.param_value && r.arm() == arm.arm) {
          row = &r;
          break;
        }
      }
      if (row == nullptr) continue;  // not a judged metric: the fixed-sample verdict stands
      const std::string fixed = VerdictName(arm.verdict);
      Verdict sequential = Verdict::kUnknown;
      if (row->decided()) {
        if (row->verdict() == "better") sequential = Verdict::kBetter;
        if (row->verdict() == "worse") sequential = Verdict::kWorse;
        if (row->verdict() == "same") sequential = Verdict::kSame;
      }
      arm.verdict = sequential;
      std::string note =
          row->decided()
              ? absl::StrCat("sequential verdict (stop: verdict): ", row->verdict(), " at look ",
                             row->decided_round() + 1, ", on ", row->arm_samples(), " samples in ",
                             row->arm_boots(), " boot", row->arm_boots() == 1 ? "" : "s",
                             " of the arm and ", row->base_samples(), " in ", row->base_boots(),
                             " of the baseline")
              : "sequential verdict (stop: verdict): none by the run's maximum";
      absl::StrAppend(&note, "; the fixed-sample test of every sample says ", fixed,
                      ", which after adaptive looks does not keep its error rate "
                      "(docs/statistics.md#sequential-verdicts)");
      arm.notes.insert(arm.notes.begin(), std::move(note));
    }
  }
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
    for (const ArmResult& arm : g.arms) *group->add_records() = BuildRecord(comparison, g, arm);
  }
  report.set_rows(static_cast<uint32_t>(comparison.rows));
  report.set_ceilings(comparison.ceilings);
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
                                                      const RunReportOptions& extras) {
  absl::StatusOr<Comparison> comparison = Compare(ObservationsFromSamples(samples), options);
  if (!comparison.ok()) return comparison.status();
  if (!extras.across_runs_note.empty()) {
    for (GroupResult& group : comparison->groups) {
      for (size_t i = 1; i < group.arms.size(); ++i) {
        group.arms[i].notes.push_back(extras.across_runs_note);
      }
    }
  }
  if (extras.adaptive_rows != nullptr && !extras.adaptive_rows->empty()) {
    ApplySequentialVerdicts(*extras.adaptive_rows, &*comparison);
  }
  if (extras.spec != nullptr) AttachArmCeilings(samples, *extras.spec, &*comparison);
  AttachArmHosts(samples, &*comparison);
  v1::CompareResponse response;
  v1::Report& report = *response.mutable_report();
  report = ReportFromComparison(*comparison);
  report.set_title(title);
  if (!extras.across_runs_note.empty()) report.set_scope("across runs");
  for (const ArmFlushProfile& p :
       BuildFlushProfiles(samples, comparison->arms, extras.flush_param)) {
    *report.add_flush_profiles() = FlushProfileToProto(p);
  }
  // Not a ceiling sweep (FAILED_PRECONDITION): no recommendations, and why.
  absl::StatusOr<std::vector<CeilingRecommendation>> recs =
      RecommendCeilings(samples, extras.ceiling_metric);
  if (recs.ok()) {
    for (const CeilingRecommendation& rec : *recs) {
      *report.add_ceiling_recommendations() = CeilingRecommendationToProto(rec);
    }
  } else {
    report.set_ceiling_recommendations_unavailable(std::string(recs.status().message()));
  }
  response.set_text(RenderReportText(report));
  return response;
}

}  // namespace tlbfleet::report
