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
#include "controller/stats/summary.h"

namespace tlbfleet::report {
namespace {

// What one arm contributes to one group: its raw values (statistics such as BAmean need
// them sorted or trimmed) and their summary.
struct ArmData {
  std::vector<double> values;
  stats::Summary summary;
};

enum class Shows { kAlways, kHigherIsBetter, kLowerIsBetter };

// How a row's pct_diff reads. kMetric follows the metric's direction; kSpread treats lower
// as better whatever the metric, since less noise is always an improvement.
enum class PctSense { kMetric, kSpread };

// The rows of every group, in order. A new statistic is one more line here (and, if the
// summary lacks it, a function computing it from ArmData).
struct RowDef {
  const char* name;
  Shows shows;
  PctSense sense;
  std::optional<double> (*value)(const ArmData&);
};

constexpr RowDef kRows[] = {
    {"Min", Shows::kAlways, PctSense::kMetric, [](const ArmData& a) { return a.summary.min; }},
    {"Hmean", Shows::kHigherIsBetter, PctSense::kMetric,
     [](const ArmData& a) { return a.summary.hmean; }},
    {"Amean", Shows::kLowerIsBetter, PctSense::kMetric,
     [](const ArmData& a) { return a.summary.amean; }},
    {"Stddev", Shows::kAlways, PctSense::kSpread,
     [](const ArmData& a) { return a.summary.stddev; }},
    {"CoeffVar", Shows::kAlways, PctSense::kSpread,
     [](const ArmData& a) { return a.summary.coeffvar; }},
    {"Max", Shows::kAlways, PctSense::kMetric, [](const ArmData& a) { return a.summary.max; }},
};

bool HigherIsBetter(v1::Better better) {
  // Unspecified is read as higher-is-better, the common case for throughput benchmarks.
  return better != v1::BETTER_LOWER;
}

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

std::optional<double> PctDiff(double base, double value, bool higher_is_better) {
  return stats::PctDiff(
      base, value,
      higher_is_better ? stats::Direction::kHigherIsBetter : stats::Direction::kLowerIsBetter);
}

struct GroupKey {
  std::string param_name;
  std::string param_value;
  bool operator<(const GroupKey& o) const {
    return std::tie(param_name, param_value) < std::tie(o.param_name, o.param_value);
  }
};

struct MetricData {
  std::string unit;
  v1::Better better = v1::BETTER_UNSPECIFIED;
  std::vector<GroupKey> keys;                       // first-appearance order
  std::map<GroupKey, std::vector<ArmData>> groups;  // arm data indexed like arm_order
};

// Sweep values sort numerically when they all are numbers (so threads=10 follows
// threads=9), otherwise as strings.
void SortKeys(std::vector<GroupKey>* keys) {
  std::map<std::string, double> numbers;
  for (const GroupKey& key : *keys) {
    double v = 0;
    if (!absl::SimpleAtod(key.param_value, &v) || !std::isfinite(v)) {
      std::stable_sort(keys->begin(), keys->end());
      return;
    }
    numbers[key.param_value] = v;
  }
  std::stable_sort(keys->begin(), keys->end(), [&](const GroupKey& a, const GroupKey& b) {
    if (a.param_name != b.param_name) return a.param_name < b.param_name;
    return numbers[a.param_value] < numbers[b.param_value];
  });
}

v1::Report::Stat BuildStat(const RowDef& row, const std::vector<ArmData>& arms,
                           bool higher_is_better) {
  v1::Report::Stat stat;
  stat.set_name(row.name);
  const bool pct_higher = row.sense == PctSense::kMetric && higher_is_better;
  const std::optional<double> base = row.value(arms[0]);
  for (const ArmData& arm : arms) {
    const std::optional<double> value = row.value(arm);
    stat.add_values(value.value_or(0));
    stat.add_defined(value.has_value());
    std::optional<double> pct;
    if (base && value) pct = PctDiff(*base, *value, pct_higher);
    stat.add_pct_diff(pct.value_or(0));
  }
  return stat;
}

// Whether pct_diff[i] means something (see BuildStat): both values defined, and a zero
// baseline only against a zero value.
bool PctDefined(const v1::Report::Stat& stat, int i) {
  if (stat.defined_size() <= i || !stat.defined(0) || !stat.defined(i)) return false;
  return stat.values(0) != 0 || stat.values(i) == 0;
}

}  // namespace

absl::StatusOr<v1::Report> BuildReport(const std::vector<v1::Sample>& samples,
                                       const std::vector<std::string>& arm_order) {
  if (arm_order.empty()) {
    return absl::InvalidArgumentError("arm_order: at least one arm is required");
  }
  std::map<std::string, size_t> arm_index;
  for (size_t i = 0; i < arm_order.size(); ++i) {
    if (!arm_index.emplace(arm_order[i], i).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("arm_order: arm \"", arm_order[i], "\" is listed twice"));
    }
  }

  std::vector<std::string> metric_order;
  std::map<std::string, MetricData> metrics;
  for (const v1::Sample& sample : samples) {
    if (!sample.series().empty()) continue;  // per-thread values: not compared here
    auto arm = arm_index.find(sample.arm());
    if (arm == arm_index.end()) continue;  // an arm the caller left out of the comparison
    auto [it, new_metric] = metrics.try_emplace(sample.metric());
    MetricData& metric = it->second;
    if (new_metric) {
      metric_order.push_back(sample.metric());
      metric.unit = sample.unit();
      metric.better = sample.better();
    }
    const GroupKey key{sample.param_name(), sample.param_value()};
    auto [group, new_group] = metric.groups.try_emplace(key, arm_order.size());
    if (new_group) metric.keys.push_back(key);
    group->second[arm->second].values.push_back(sample.value());
  }

  v1::Report report;
  for (const std::string& arm : arm_order) report.add_arms(arm);
  for (const std::string& name : metric_order) {
    MetricData& metric = metrics[name];
    const bool higher = HigherIsBetter(metric.better);
    SortKeys(&metric.keys);
    for (const GroupKey& key : metric.keys) {
      std::vector<ArmData>& arms = metric.groups[key];
      v1::Report::Group* group = report.add_groups();
      group->set_metric(name);
      group->set_unit(metric.unit);
      group->set_better(higher ? v1::BETTER_HIGHER : v1::BETTER_LOWER);
      group->set_param_name(key.param_name);
      group->set_param_value(key.param_value);
      for (ArmData& arm : arms) {
        arm.summary = stats::Summarize(arm.values);
        group->add_n(static_cast<uint32_t>(arm.values.size()));
      }
      for (const RowDef& row : kRows) {
        if (RowShows(row, higher)) *group->add_stats() = BuildStat(row, arms, higher);
      }
    }
  }
  return report;
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
