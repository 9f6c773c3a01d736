#include "controller/report/comparison.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/stats/radix_sort.h"

namespace tlbfleet::report {
namespace {

using SweepKey = std::pair<std::string, std::string>;

// One arm's observations in one group, grouped by boot in first-appearance order.
struct ArmBoots {
  stats::BootGroups boots;
  std::map<std::string, size_t> boot_index;
};

// What the tests need of an arm: its values in one sorted array (sorted once here, so each
// test's own sort is only a check), and its boots.
struct ArmValues {
  std::vector<double> all;
  const stats::BootGroups* boots;
};

struct MetricGroups {
  std::string unit;
  stats::Direction direction = stats::Direction::kHigherIsBetter;
  std::vector<SweepKey> keys;                        // first-appearance order
  std::map<SweepKey, std::vector<ArmBoots>> groups;  // indexed like the arm order
};

std::optional<double> Headline(const stats::Summary& s, stats::Direction direction) {
  return direction == stats::Direction::kHigherIsBetter ? s.hmean : s.amean;
}

std::vector<double> BootMeans(const stats::BootGroups& boots) {
  std::vector<double> means;
  for (const std::vector<double>& boot : boots) {
    double sum = 0;
    for (double x : boot) sum += x;
    means.push_back(sum / static_cast<double>(boot.size()));
  }
  return means;
}

std::string Pct(double fraction) { return absl::StrFormat("%.2f %%", 100 * fraction); }

void DecideVerdict(const CompareOptions& options, stats::Direction direction, ArmResult* arm) {
  if (!arm->ratio_ci_low || !arm->ratio_ci_high) {
    arm->verdict = Verdict::kUnknown;
    arm->notes.push_back(
        absl::StrCat("unknown: no interval of the ratio (", arm->ratio.why_undefined, ")"));
    return;
  }
  const double lo = *arm->ratio_ci_low;
  const double hi = *arm->ratio_ci_high;
  const double e = options.equivalence;
  const std::string interval = absl::StrFormat("the %.0f %% interval of the ratio [%.4f, %.4f]",
                                               100 * options.bootstrap.confidence, lo, hi);
  const bool higher = direction == stats::Direction::kHigherIsBetter;
  if (lo >= 1 - e && hi <= 1 + e) {
    arm->verdict = Verdict::kSame;
    arm->notes.push_back(absl::StrCat("same: ", interval, " lies within ±", Pct(e)));
  } else if (lo > 1) {
    arm->verdict = higher ? Verdict::kBetter : Verdict::kWorse;
    arm->notes.push_back(absl::StrCat(VerdictName(arm->verdict), ": ", interval, " lies above 1"));
  } else if (hi < 1) {
    arm->verdict = higher ? Verdict::kWorse : Verdict::kBetter;
    arm->notes.push_back(absl::StrCat(VerdictName(arm->verdict), ": ", interval, " lies below 1"));
  } else {
    arm->verdict = Verdict::kUnknown;
    arm->notes.push_back(
        absl::StrCat("unknown: ", interval, " contains 1 and is wider than ±", Pct(e)));
  }
}

void AddBootNotes(const CompareOptions& options, ArmResult* arm) {
  const stats::VarianceComponents& vc = arm->variance;
  if (vc.boots == 1) {
    arm->notes.push_back(
        "one boot: the interval cannot include reboot-to-reboot variance; measure 2 boots or "
        "more (boots: N in the run spec)");
  }
  if (vc.between_share && *vc.between_share > options.between_boot_dominates) {
    arm->notes.push_back(
        absl::StrFormat("%.0f %% of the variance is between boots: add boots, not iterations",
                        100 * *vc.between_share));
  }
  const stats::RepetitionAdvice& advice = arm->advice;
  if (advice.boots && advice.iterations_per_boot && advice.expected_half_width_pct) {
    arm->notes.push_back(absl::StrFormat(
        "to settle within ±%.2f %%: %d iteration%s per boot, %d boots per arm (expected ±%.2f "
        "%%, at %g s per iteration and %g s per boot)",
        100 * options.equivalence, *advice.iterations_per_boot,
        *advice.iterations_per_boot == 1 ? "" : "s", *advice.boots, *advice.expected_half_width_pct,
        options.costs.seconds_per_iteration, options.costs.seconds_per_boot));
  }
}

ArmResult Analyse(const std::string& name, const ArmValues& values, const ArmValues& base,
                  const ArmResult* base_result, stats::Direction direction,
                  const CompareOptions& options) {
  ArmResult arm;
  arm.arm = name;
  arm.n = values.all.size();
  arm.boots = values.boots->size();
  arm.summary = stats::Summarize(values.all, direction);
  arm.mean_of_boot_means = stats::MeanOfBootMeans(*values.boots);
  arm.variance = stats::EstimateVarianceComponents(*values.boots);
  const bool is_base = base_result == nullptr;
  const ArmResult& against = is_base ? arm : *base_result;
  if (arm.mean_of_boot_means && against.mean_of_boot_means) {
    arm.advice = stats::RecommendRepetitions(against.variance, *against.mean_of_boot_means,
                                             arm.variance, *arm.mean_of_boot_means, options.costs,
                                             options.equivalence, options.bootstrap.confidence);
  } else {
    arm.advice.why_undefined = "no mean";
  }
  if (is_base) {
    arm.verdict = Verdict::kBaseline;
    AddBootNotes(options, &arm);
    return arm;
  }
  const std::optional<double> head = Headline(arm.summary, direction);
  const std::optional<double> base_head = Headline(base_result->summary, direction);
  if (head && base_head) arm.pct_diff = stats::PctDiff(*base_head, *head, direction);
  arm.welch = stats::WelchTest(base.all, values.all);
  arm.significance_p = arm.welch.p;
  if (base.boots->size() >= 2 && values.boots->size() >= 2) {
    arm.significance_p = stats::WelchTest(BootMeans(*base.boots), BootMeans(*values.boots)).p;
  }
  arm.significant = arm.significance_p && *arm.significance_p < options.alpha;
  arm.mwu = stats::MannWhitneyU(base.all, values.all);
  arm.hl = stats::HodgesLehmann(base.all, values.all, options.hl_confidence);
  arm.ratio = stats::BootstrapRatioOfMeans(*base.boots, *values.boots, options.bootstrap);
  if (arm.ratio.bca_low && arm.ratio.bca_high) {
    arm.ratio_ci_low = arm.ratio.bca_low;
    arm.ratio_ci_high = arm.ratio.bca_high;
    arm.ratio_ci_method = "bca";
  } else if (arm.ratio.percentile_low && arm.ratio.percentile_high) {
    arm.ratio_ci_low = arm.ratio.percentile_low;
    arm.ratio_ci_high = arm.ratio.percentile_high;
    arm.ratio_ci_method = "percentile";
  }
  DecideVerdict(options, direction, &arm);
  AddBootNotes(options, &arm);
  return arm;
}

absl::StatusOr<std::vector<std::string>> ArmOrder(const std::vector<Observation>& observations,
                                                  const CompareOptions& options) {
  std::vector<std::string> arms = options.arm_order;
  if (arms.empty()) {
    for (const Observation& o : observations) {
      if (std::find(arms.begin(), arms.end(), o.arm) == arms.end()) arms.push_back(o.arm);
    }
  }
  if (arms.empty()) return absl::InvalidArgumentError("no arms to compare");
  std::vector<std::string> seen = arms;
  std::sort(seen.begin(), seen.end());
  if (auto dup = std::adjacent_find(seen.begin(), seen.end()); dup != seen.end()) {
    return absl::InvalidArgumentError(absl::StrCat("arm \"", *dup, "\" is listed twice"));
  }
  if (!options.baseline.empty()) {
    auto it = std::find(arms.begin(), arms.end(), options.baseline);
    if (it == arms.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("baseline: no arm named \"", options.baseline, "\""));
    }
    std::rotate(arms.begin(), it, it + 1);
  }
  return arms;
}

}  // namespace

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kBaseline:
      return "baseline";
    case Verdict::kBetter:
      return "better";
    case Verdict::kWorse:
      return "worse";
    case Verdict::kSame:
      return "same";
    case Verdict::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string SweepLabel(const std::string& param_name, const std::string& param_value) {
  if (param_name.empty()) return param_value;
  return absl::StrCat(param_name, "=", param_value);
}

void SortSweepKeys(std::vector<SweepKey>* keys) {
  std::map<std::string, double> numbers;
  for (const SweepKey& key : *keys) {
    double v = 0;
    if (!absl::SimpleAtod(key.second, &v) || !std::isfinite(v)) {
      std::stable_sort(keys->begin(), keys->end());
      return;
    }
    numbers[key.second] = v;
  }
  std::stable_sort(keys->begin(), keys->end(), [&](const SweepKey& a, const SweepKey& b) {
    if (a.first != b.first) return a.first < b.first;
    return numbers[a.second] < numbers[b.second];
  });
}

std::vector<Observation> ObservationsFromSamples(const std::vector<v1::Sample>& samples) {
  std::vector<Observation> out;
  out.reserve(samples.size());
  for (const v1::Sample& s : samples) {
    if (!s.series().empty()) continue;  // per-thread values are not compared
    Observation o;
    o.arm = s.arm();
    o.boot = s.boot_id();
    o.param_name = s.param_name();
    o.param_value = s.param_value();
    o.iteration = s.iteration();
    o.metric = s.metric();
    o.unit = s.unit();
    o.direction = s.better() == v1::BETTER_LOWER ? stats::Direction::kLowerIsBetter
                                                 : stats::Direction::kHigherIsBetter;
    o.value = s.value();
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<ArmResult> AnalyseGroup(const std::vector<std::string>& names,
                                    const std::vector<stats::BootGroups>& boots,
                                    stats::Direction direction, const CompareOptions& options) {
  std::vector<ArmValues> values(boots.size());
  for (size_t i = 0; i < boots.size(); ++i) {
    values[i].boots = &boots[i];
    for (const std::vector<double>& boot : boots[i]) {
      values[i].all.insert(values[i].all.end(), boot.begin(), boot.end());
    }
    // NaN breaks sorting's ordering; the tests reject such samples anyway.
    if (std::all_of(values[i].all.begin(), values[i].all.end(),
                    [](double x) { return !std::isnan(x); })) {
      stats::SortWithoutNaN(&values[i].all);
    }
  }
  std::vector<ArmResult> out;
  out.reserve(boots.size());
  if (boots.empty()) return out;
  out.push_back(Analyse(names[0], values[0], values[0], nullptr, direction, options));
  for (size_t i = 1; i < boots.size(); ++i) {
    out.push_back(Analyse(names[i], values[i], values[0], &out[0], direction, options));
  }
  return out;
}

absl::StatusOr<Comparison> Compare(const std::vector<Observation>& observations,
                                   const CompareOptions& options) {
  absl::StatusOr<std::vector<std::string>> order = ArmOrder(observations, options);
  if (!order.ok()) return order.status();
  std::map<std::string, size_t> arm_index;
  for (size_t i = 0; i < order->size(); ++i) arm_index[(*order)[i]] = i;

  std::vector<std::string> metric_order;
  std::map<std::string, MetricGroups> metrics;
  for (const Observation& o : observations) {
    auto arm = arm_index.find(o.arm);
    if (arm == arm_index.end()) continue;
    auto [it, new_metric] = metrics.try_emplace(o.metric);
    MetricGroups& metric = it->second;
    if (new_metric) {
      metric_order.push_back(o.metric);
      metric.unit = o.unit;
      metric.direction = o.direction;
    }
    const SweepKey key{o.param_name, o.param_value};
    auto [group, new_group] = metric.groups.try_emplace(key, order->size());
    if (new_group) metric.keys.push_back(key);
    ArmBoots& values = group->second[arm->second];
    auto [boot, new_boot] = values.boot_index.try_emplace(o.boot, values.boots.size());
    if (new_boot) values.boots.emplace_back();
    values.boots[boot->second].push_back(o.value);
  }

  Comparison comparison;
  comparison.arms = *order;
  for (const std::string& name : metric_order) {
    MetricGroups& metric = metrics[name];
    SortSweepKeys(&metric.keys);
    for (const SweepKey& key : metric.keys) {
      std::vector<stats::BootGroups> boots;
      for (ArmBoots& arm : metric.groups[key]) boots.push_back(std::move(arm.boots));
      GroupResult group;
      group.metric = name;
      group.unit = metric.unit;
      group.direction = metric.direction;
      group.param_name = key.first;
      group.param_value = key.second;
      group.arms = AnalyseGroup(*order, boots, metric.direction, options);
      comparison.groups.push_back(std::move(group));
    }
  }
  return comparison;
}

}  // namespace tlbfleet::report
