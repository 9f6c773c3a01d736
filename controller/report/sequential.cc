#include "controller/report/sequential.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "boost/math/distributions/normal.hpp"
#include "boost/math/distributions/students_t.hpp"

namespace tlbfleet::report {

namespace {

using NoPromote = boost::math::policies::policy<boost::math::policies::promote_double<false>>;
using StandardNormal = boost::math::normal_distribution<double, NoPromote>;
using StudentsT = boost::math::students_t_distribution<double, NoPromote>;

// Boots are the information axis when they may grow (a run adaptive in both grows boots, and
// stops at their maximum: iterations added to the last boot alone would not be balanced).
bool SpendsOverBoots(const v1::AdaptiveSpec& a) {
  return a.boots().max() > 1 || (a.boots().max() > 0 && a.iterations().max() == 0);
}

std::string SequentialPlanText(const AdaptivePlan& plan) {
  return absl::StrCat(plan.iterations_per_boot, " iteration",
                      plan.iterations_per_boot == 1 ? "" : "s", " x ", plan.boots, " boot",
                      plan.boots == 1 ? "" : "s", " per arm");
}

std::string RowLabel(const GroupResult& group, const std::string& arm) {
  std::string label = group.metric;
  if (!group.param_name.empty() || !group.param_value.empty()) {
    absl::StrAppend(&label, " ", SweepLabel(group.param_name, group.param_value));
  }
  absl::StrAppend(&label, ", arm ", arm);
  return label;
}

bool SameRow(const RowOutcome& a, const RowOutcome& b) {
  return a.metric == b.metric && a.param_name == b.param_name && a.param_value == b.param_value &&
         a.arm == b.arm;
}

// TOST p of H0: the ratio lies outside [1/(1 + m), 1 + m], from the test's log ratio, se, df.
double SameP(const stats::RatioTest& t, double margin) {
  const double bound = std::log1p(margin);
  if (!(*t.se > 0)) return std::abs(*t.log_ratio) < bound ? 0 : 1;
  const StudentsT dist(*t.df);
  const double lower =
      boost::math::cdf(boost::math::complement(dist, (*t.log_ratio + bound) / *t.se));
  const double upper = boost::math::cdf(dist, (*t.log_ratio - bound) / *t.se);
  return std::max(lower, upper);
}

}  // namespace

double SpentAlpha(Spending spending, double alpha, double t) {
  if (!(t > 0)) return 0;
  t = std::min(t, 1.0);
  if (spending == Spending::kPocock) return alpha * std::log1p((std::exp(1.0) - 1) * t);
  const StandardNormal normal;
  const double z = boost::math::quantile(boost::math::complement(normal, alpha / 2));
  return 2 * boost::math::cdf(boost::math::complement(normal, z / std::sqrt(t)));
}

absl::Status ValidateSequentialSpec(const v1::AdaptiveSpec& a) {
  for (const auto& [name, range] :
       {std::pair<const char*, const v1::AdaptiveSpec::Range*>{"iterations", &a.iterations()},
        {"boots", &a.boots()}}) {
    if (range->max() > 0 && range->min() > range->max()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ".max: ", range->max(), " is below ",
                                                     name, ".min (", range->min(), ")"));
    }
  }
  if (!(a.level() == 0 || (a.level() > 0 && a.level() < 1))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "adaptive.level: must be above 0 and below 1 (a confidence level such as 0.95), got ",
        a.level()));
  }
  if (!(a.margin() == 0 || (a.margin() > 0 && a.margin() < 1))) {
    return absl::InvalidArgumentError(
        absl::StrCat("adaptive.margin: must be above 0 and below 100% (such as 1%), got ",
                     a.margin() * 100, "%"));
  }
  if (a.stop() != v1::AdaptiveSpec::STOP_VERDICT) {
    const char* given = a.spending() != v1::AdaptiveSpec::SPENDING_UNSPECIFIED ? "spending"
                        : a.level() != 0                                       ? "level"
                        : a.margin() != 0                                      ? "margin"
                                                                               : nullptr;
    if (given != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "adaptive.", given, ": only for stop: verdict (stop: precision judges by target_ci)"));
    }
    return absl::OkStatus();
  }
  if (a.boots().max() == 0 && a.iterations().max() == 0) {
    return absl::InvalidArgumentError(
        "adaptive.spending: alpha spending needs a maximum to spend over: make boots or "
        "iterations adaptive (boots: {min, max})");
  }
  return absl::OkStatus();
}

SequentialOptions SequentialOptionsOf(const v1::AdaptiveSpec& a) {
  SequentialOptions o;
  if (a.level() > 0) o.alpha = 1 - a.level();
  if (a.margin() > 0) o.margin = a.margin();
  if (a.spending() == v1::AdaptiveSpec::SPENDING_POCOCK) o.spending = Spending::kPocock;
  return o;
}

LookFraction LookFractionOf(const v1::AdaptiveSpec& a, const AdaptivePlan& plan) {
  LookFraction look;
  if (SpendsOverBoots(a)) {
    const double max = a.boots().max();
    // A look with fewer boots than a row needs tests nothing, so the first look that can
    // test spends from 0.
    const uint32_t first = std::max<uint32_t>(
        a.boots().min(), a.boots().max() > 1 ? static_cast<uint32_t>(kMinBootsToSettle) : 1);
    look.fraction = std::min(1.0, plan.boots / max);
    if (plan.boots >= 1 && plan.boots - 1 >= first) look.previous = (plan.boots - 1) / max;
    return look;
  }
  if (a.iterations().max() == 0) {
    look.fraction = 1;
    return look;
  }
  const uint32_t max = a.iterations().max();
  const uint32_t first_testable =
      plan.boots >= 2 ? 1 : static_cast<uint32_t>(kMinIterationsToSettle);
  look.fraction = std::min(1.0, static_cast<double>(plan.iterations_per_boot) / max);
  // The schedule min, 2 min, ... max: the previous look is its largest entry below this one.
  for (uint32_t n = std::max<uint32_t>(a.iterations().min(), 1); n < plan.iterations_per_boot;
       n = std::min(2 * n, max)) {
    if (n >= first_testable) look.previous = static_cast<double>(n) / max;
    if (n == max) break;
  }
  return look;
}

RowOutcome DecideRowAtLook(const SequentialOptions& options, size_t rows, bool several_boots,
                           const GroupResult& group, size_t arm_index, const LookFraction& look) {
  const ArmResult& base = group.arms.front();
  const ArmResult& arm = group.arms[arm_index];
  RowOutcome row;
  row.metric = group.metric;
  row.param_name = group.param_name;
  row.param_value = group.param_value;
  row.arm = arm.arm;
  row.label = RowLabel(group, arm.arm);
  row.base_boots = base.boots;
  row.arm_boots = arm.boots;
  row.base_samples = base.n;
  row.arm_samples = arm.n;
  row.ratio = arm.test.ratio;
  row.information = look.fraction;
  const stats::RatioTest& t = arm.test;
  const bool enough = several_boots ? t.scope == stats::Scope::kAcrossBoots &&
                                          std::min(base.boots, arm.boots) >= kMinBootsToSettle
                                    : std::min(base.n, arm.n) >= kMinIterationsToSettle;
  if (!enough || !t.p || !t.log_ratio || !t.se || !t.df) return row;
  const double per_row = options.alpha / static_cast<double>(std::max<size_t>(rows, 1));
  row.look_alpha = std::max(0.0, SpentAlpha(options.spending, per_row, look.fraction) -
                                     SpentAlpha(options.spending, per_row, look.previous));
  row.p = *t.p;
  row.same_p = SameP(t, options.margin);
  // "same" first, as the fixed-sample verdict: a change inside the margin is irrelevant.
  if (*row.same_p < row.look_alpha) {
    row.verdict = Verdict::kSame;
  } else if (*row.p < row.look_alpha) {
    const bool favours_other =
        group.direction == stats::Direction::kHigherIsBetter ? *t.log_ratio > 0 : *t.log_ratio < 0;
    row.verdict = favours_other ? Verdict::kBetter : Verdict::kWorse;
  }
  row.decided = row.verdict != Verdict::kUnknown;
  return row;
}

AdaptiveDecision DecideSequential(const v1::AdaptiveSpec& adaptive,
                                  const std::vector<std::string>& metrics,
                                  const Comparison& comparison, const AdaptivePlan& plan,
                                  const std::vector<RowOutcome>& earlier) {
  AdaptiveDecision d;
  const SequentialOptions options = SequentialOptionsOf(adaptive);
  const bool several_boots = adaptive.boots().max() >= 2 || plan.boots >= 2;
  const LookFraction look = LookFractionOf(adaptive, plan);
  std::vector<const GroupResult*> groups;
  size_t m = 0;
  for (const GroupResult& g : comparison.groups) {
    if (std::find(metrics.begin(), metrics.end(), g.metric) == metrics.end()) continue;
    if (g.arms.size() < 2) continue;
    groups.push_back(&g);
    m += g.arms.size() - 1;
  }
  if (m == 0) {
    d.reason = absl::StrCat("stopped after ", SequentialPlanText(plan),
                            ": nothing to compare (no samples of the judged metrics in two arms)");
    return d;
  }
  size_t open = 0, better = 0, worse = 0, same = 0;
  size_t widest = 0;  // index in d.rows of the open row with the widest interval
  double widest_half_width = -1;
  std::optional<int> widest_optimum;
  double row_alpha = 0;
  for (const GroupResult* g : groups) {
    for (size_t i = 1; i < g->arms.size(); ++i) {
      RowOutcome row = DecideRowAtLook(options, m, several_boots, *g, i, look);
      for (const RowOutcome& e : earlier) {
        if (e.decided && SameRow(e, row)) row = e;  // a verdict, once reached, stands
      }
      row_alpha = std::max(row_alpha, row.look_alpha);
      switch (row.verdict) {
        case Verdict::kBetter:
          ++better;
          break;
        case Verdict::kWorse:
          ++worse;
          break;
        case Verdict::kSame:
          ++same;
          break;
        default:
          ++open;
          break;
      }
      d.rows.push_back(std::move(row));
      const ArmResult& arm = g->arms[i];
      if (!d.rows.back().decided) {
        const double hw = arm.ratio_ci_low && arm.ratio_ci_high
                              ? (*arm.ratio_ci_high - *arm.ratio_ci_low) / 2
                              : std::numeric_limits<double>::infinity();
        if (hw > widest_half_width) {
          widest_half_width = hw;
          widest = d.rows.size() - 1;
          widest_optimum = arm.advice.iterations_per_boot;
        }
      }
    }
  }
  const std::string counts = absl::StrCat("better ", better, ", worse ", worse, ", same ", same);
  if (open == 0) {
    d.reason =
        absl::StrCat("verdict reached after ", SequentialPlanText(plan), ": every row of ", m,
                     " decided (", counts, "; alpha ", options.alpha, " across rows and looks)");
    return d;
  }
  const std::string why = absl::StrCat(
      open, " of ", m, " row", m == 1 ? "" : "s", " without a verdict (", counts,
      ") at information ", absl::StrFormat("%.2f", look.fraction), ", level per row this look ",
      absl::StrFormat("%.3g", row_alpha), "; widest open: ", d.rows[widest].label);
  const bool over_boots = SpendsOverBoots(adaptive);
  if (over_boots && plan.boots < adaptive.boots().max()) {
    d.action = AdaptiveDecision::Action::kAddBoot;
    d.iterations_per_boot = plan.iterations_per_boot;
    std::string per_boot;
    if (adaptive.iterations().max() > 0 && widest_optimum) {
      d.iterations_per_boot = std::clamp<uint32_t>(
          static_cast<uint32_t>(*widest_optimum),
          std::max<uint32_t>(adaptive.iterations().min(), 1), adaptive.iterations().max());
      per_boot =
          absl::StrCat(" with ", d.iterations_per_boot, " iterations (the Kalibera–Jones optimum ",
                       *widest_optimum, ", within ", adaptive.iterations().min(), "..",
                       adaptive.iterations().max(), ")");
    }
    d.reason = absl::StrCat("adding boot ", plan.boots + 1, " of at most ", adaptive.boots().max(),
                            per_boot, ": ", why);
    return d;
  }
  if (!over_boots && adaptive.iterations().max() > 0 &&
      plan.iterations_per_boot < adaptive.iterations().max()) {
    d.action = AdaptiveDecision::Action::kAddIterations;
    d.iterations_per_boot = std::min<uint32_t>(adaptive.iterations().max(),
                                               2 * std::max<uint32_t>(plan.iterations_per_boot, 1));
    d.reason = absl::StrCat("growing to ", d.iterations_per_boot, " iterations ",
                            plan.boots > 1 ? "in the latest boot" : "per arm", " (at most ",
                            adaptive.iterations().max(), "): ", why);
    return d;
  }
  d.reason = absl::StrCat("maximum reached (", SequentialPlanText(plan), ") with ", why);
  return d;
}

std::set<SweepArm> StillMeasured(const std::vector<RowOutcome>& rows,
                                 const Comparison& comparison) {
  // Per (sweep value, arm), and per sweep value for the baseline: whether any row is open.
  std::map<SweepArm, bool> arm_open;
  std::map<std::pair<std::string, std::string>, bool> value_open;
  for (const RowOutcome& row : rows) {
    arm_open[{row.param_name, row.param_value, row.arm}] |= !row.decided;
    value_open[{row.param_name, row.param_value}] |= !row.decided;
  }
  std::set<SweepArm> out;
  for (const GroupResult& g : comparison.groups) {
    for (size_t i = 0; i < g.arms.size(); ++i) {
      SweepArm cell{g.param_name, g.param_value, g.arms[i].arm};
      if (i == 0) {
        auto it = value_open.find({g.param_name, g.param_value});
        if (it != value_open.end() && !it->second) continue;
      } else if (auto it = arm_open.find(cell); it != arm_open.end() && !it->second) {
        continue;
      }
      out.insert(std::move(cell));
    }
  }
  return out;
}

v1::AdaptiveRow ToAdaptiveRow(const RowOutcome& row, bool measuring, bool run_stopped) {
  v1::AdaptiveRow out;
  out.set_metric(row.metric);
  out.set_param_name(row.param_name);
  out.set_param_value(row.param_value);
  out.set_arm(row.arm);
  if (row.decided) out.set_verdict(VerdictName(row.verdict));
  out.set_decided(row.decided);
  out.set_measuring(measuring && !run_stopped);
  out.set_decided_round(row.decided_round);
  out.set_base_boots(static_cast<uint32_t>(row.base_boots));
  out.set_arm_boots(static_cast<uint32_t>(row.arm_boots));
  out.set_base_samples(row.base_samples);
  out.set_arm_samples(row.arm_samples);
  if (row.ratio) out.set_ratio(*row.ratio);
  const std::optional<double> p = row.verdict == Verdict::kSame ? row.same_p : row.p;
  if (p) out.set_p(*p);
  out.set_look_alpha(row.look_alpha);
  const std::string used = absl::StrCat(
      row.arm_boots, " boot", row.arm_boots == 1 ? "" : "s", " and ", row.arm_samples,
      " samples of the arm, ", row.base_boots, " and ", row.base_samples, " of the baseline");
  if (row.decided) {
    out.set_reason(absl::StrCat(
        VerdictName(row.verdict), " at round ", row.decided_round, ": ",
        row.verdict == Verdict::kSame ? "the TOST at the margin" : "the ratio test", " had p ",
        absl::StrFormat("%.3g", p.value_or(0)), " below the look's level ",
        absl::StrFormat("%.3g", row.look_alpha), ", with ", used,
        measuring && !run_stopped ? "; still measured for another row of its sweep value"
                                  : "; no more jobs for it"));
  } else if (!row.p || !(row.look_alpha > 0)) {
    out.set_reason(absl::StrCat(run_stopped
                                    ? "no verdict: the run stopped before it could be tested"
                                    : "waiting: too few boots or iterations per arm to test",
                                " (", used, ")"));
  } else {
    out.set_reason(absl::StrCat(
        run_stopped ? "no verdict by the maximum: " : "open: ", "p ",
        absl::StrFormat("%.3g", *row.p), " (TOST ", absl::StrFormat("%.3g", row.same_p.value_or(1)),
        ") not below the look's level ", absl::StrFormat("%.3g", row.look_alpha), ", with ", used));
  }
  return out;
}

RowOutcome FromAdaptiveRow(const v1::AdaptiveRow& row) {
  RowOutcome out;
  out.metric = row.metric();
  out.param_name = row.param_name();
  out.param_value = row.param_value();
  out.arm = row.arm();
  GroupResult group;
  group.metric = row.metric();
  group.param_name = row.param_name();
  group.param_value = row.param_value();
  out.label = RowLabel(group, row.arm());
  out.decided = row.decided();
  if (out.decided) {
    for (Verdict v : {Verdict::kBetter, Verdict::kWorse, Verdict::kSame}) {
      if (row.verdict() == VerdictName(v)) out.verdict = v;
    }
    // A verdict this build does not know: the row is re-tested rather than given a wrong one.
    if (out.verdict == Verdict::kUnknown) out.decided = false;
  }
  out.decided_round = row.decided_round();
  out.base_boots = row.base_boots();
  out.arm_boots = row.arm_boots();
  out.base_samples = static_cast<size_t>(row.base_samples());
  out.arm_samples = static_cast<size_t>(row.arm_samples());
  if (row.has_ratio()) out.ratio = row.ratio();
  if (row.has_p()) (out.verdict == Verdict::kSame ? out.same_p : out.p) = row.p();
  out.look_alpha = row.look_alpha();
  return out;
}

}  // namespace tlbfleet::report
