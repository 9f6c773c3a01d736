#include "controller/report/comparison.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tlbfleet::report {
namespace {

using SweepKey = std::pair<std::string, std::string>;

// One arm's observations in one group, grouped by boot in first-appearance order.
struct ArmBoots {
  stats::ArmSamples samples;
  std::map<std::string, size_t> boot_index;
};

struct MetricGroups {
  std::string unit;
  stats::Direction direction = stats::Direction::kHigherIsBetter;
  std::vector<SweepKey> keys;                        // first-appearance order
  std::map<SweepKey, std::vector<ArmBoots>> groups;  // indexed like the arm order
};

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
    if (!s.series().empty()) continue;    // per-thread values are not compared
    if (!s.excluded().empty()) continue;  // kept for the record, measured again elsewhere
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

absl::Status ValidateCompareOptions(const CompareOptions& options) {
  if (!(options.margin > 0 && options.margin < 1)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "margin: must be above 0 and below 100 %% (e.g. 1%%), got %g %%", 100 * options.margin));
  }
  if (!(options.level > 0 && options.level < 1)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "level: must be between 0 and 1, both excluded (e.g. 0.95), got %g", options.level));
  }
  if (!(options.power > 0 && options.power < 1)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("power: must be between 0 and 1, both excluded, got %g", options.power));
  }
  if (options.bootstrap.resamples < 0) {
    return absl::InvalidArgumentError("resamples: must not be negative");
  }
  return absl::OkStatus();
}

absl::StatusOr<Comparison> Compare(const std::vector<Observation>& observations,
                                   const CompareOptions& options) {
  if (absl::Status s = ValidateCompareOptions(options); !s.ok()) return s;
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
    stats::ArmSamples& samples = values.samples;
    auto [boot, new_boot] = values.boot_index.try_emplace(o.boot, samples.boots.size());
    if (new_boot) {
      samples.boot_ids.push_back(o.boot);
      samples.boots.emplace_back();
      samples.iterations.emplace_back();
    }
    samples.boots[boot->second].push_back(o.value);
    samples.iterations[boot->second].push_back(o.iteration);
  }

  Comparison comparison;
  comparison.arms = *order;
  for (const std::string& name : metric_order) {
    MetricGroups& metric = metrics[name];
    SortSweepKeys(&metric.keys);
    for (const SweepKey& key : metric.keys) {
      std::vector<stats::ArmSamples> arms;
      for (ArmBoots& arm : metric.groups[key]) arms.push_back(std::move(arm.samples));
      GroupResult group;
      group.metric = name;
      group.unit = metric.unit;
      group.direction = metric.direction;
      group.param_name = key.first;
      group.param_value = key.second;
      absl::StatusOr<std::vector<ArmResult>> analysed =
          AnalyseGroup(*order, arms, metric.direction, options);
      if (!analysed.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            analysed.status().message(), " at ", name,
            key.second.empty() && key.first.empty() ? "" : " ", SweepLabel(key.first, key.second)));
      }
      group.arms = *std::move(analysed);
      comparison.groups.push_back(std::move(group));
    }
  }
  DecideVerdicts(options, &comparison);
  return comparison;
}

}  // namespace tlbfleet::report
