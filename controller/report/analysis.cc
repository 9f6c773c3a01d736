// AnalyseGroup (declared in comparison.h): every statistic of one (metric, sweep value) that
// does not need the other rows. DecideVerdicts (verdict.cc) adds the rest.

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "controller/report/comparison.h"
#include "controller/stats/radix_sort.h"

namespace tlbfleet::report {
namespace {

std::optional<double> Headline(const stats::Summary& s, stats::Direction direction) {
  return direction == stats::Direction::kHigherIsBetter ? s.hmean : s.amean;
}

// Every value of an arm in one sorted array, sorted once here for all the pooled tests
// (each test's own sort is then only a check).
std::vector<double> SortedValues(const stats::ArmSamples& arm) {
  std::vector<double> all;
  for (const std::vector<double>& boot : arm.boots) all.insert(all.end(), boot.begin(), boot.end());
  // NaN breaks sorting's ordering; the tests reject such samples anyway.
  if (std::none_of(all.begin(), all.end(), [](double x) { return std::isnan(x); })) {
    stats::SortWithoutNaN(&all);
  }
  return all;
}

// The two arms' log values in the boots both were measured in, boot b of one aligned with
// boot b of the other (what the paired design's variance components need).
std::optional<std::pair<stats::BootGroups, stats::BootGroups>> SharedLogBoots(
    const stats::ArmSamples& base, const stats::ArmSamples& other) {
  stats::BootGroups b, o;
  for (size_t i = 0; i < base.boots.size(); ++i) {
    if (base.boots[i].empty()) continue;
    for (size_t j = 0; j < other.boots.size(); ++j) {
      if (other.boots[j].empty() || base.boot_ids.at(i) != other.boot_ids.at(j)) continue;
      b.push_back(base.boots[i]);
      o.push_back(other.boots[j]);
    }
  }
  std::optional<stats::BootGroups> lb = stats::LogBootGroups(b);
  std::optional<stats::BootGroups> lo = stats::LogBootGroups(o);
  if (!lb || !lo) return std::nullopt;
  return std::pair{std::move(*lb), std::move(*lo)};
}

const char* MethodName(const stats::RatioTest& test) {
  if (!test.p) return "";
  if (test.design == stats::Design::kPairedBoots || test.design == stats::Design::kPairedIterations)
    return "paired t";
  return test.base_units < 2 || test.other_units < 2 ? "Student t" : "Welch t";
}

void Advise(const stats::ArmSamples& base, const stats::ArmSamples& other,
            const stats::VarianceComponents& base_log, const CompareOptions& options,
            ArmResult* arm) {
  stats::AdviceOptions advice;
  advice.costs = options.costs;
  advice.margin = options.margin;
  advice.alpha = 1 - options.level;
  advice.power = options.power;
  switch (arm->test.design) {
    case stats::Design::kPairedBoots: {
      auto logs = SharedLogBoots(base, other);
      if (!logs) {
        arm->advice.why_undefined = "a value is <= 0 or not finite";
        return;
      }
      arm->log_ratio_components = stats::EstimateLogRatioComponents(logs->first, logs->second);
      arm->advice = stats::AdvisePaired(arm->log_ratio_components, advice);
      return;
    }
    case stats::Design::kUnpairedBoots: {
      arm->advice = stats::AdviseUnpaired(base_log, arm->log_variance, advice);
      return;
    }
    default:
      arm->advice.why_undefined = "one boot per arm: between-boot variance unknown";
      return;
  }
}

}  // namespace

absl::StatusOr<std::vector<ArmResult>> AnalyseGroup(const std::vector<std::string>& names,
                                                    const std::vector<stats::ArmSamples>& arms,
                                                    stats::Direction direction,
                                                    const CompareOptions& options) {
  std::vector<ArmResult> out;
  if (arms.empty()) return out;
  const std::vector<double> base_all = SortedValues(arms[0]);
  stats::RatioTestOptions test_options;
  test_options.level = options.level;
  test_options.margin = options.margin;
  test_options.pairing = options.pairing;
  for (size_t i = 0; i < arms.size(); ++i) {
    ArmResult& arm = out.emplace_back();
    arm.arm = names[i];
    const std::vector<double> all = i == 0 ? base_all : SortedValues(arms[i]);
    arm.n = all.size();
    arm.boots = static_cast<size_t>(std::count_if(arms[i].boots.begin(), arms[i].boots.end(),
                                                  [](const auto& b) { return !b.empty(); }));
    arm.summary = stats::Summarize(all, direction);
    arm.mean_of_boot_means = stats::MeanOfBootMeans(arms[i].boots);
    arm.variance = stats::EstimateVarianceComponents(arms[i].boots);
    if (std::optional<stats::BootGroups> logs = stats::LogBootGroups(arms[i].boots)) {
      arm.log_variance = stats::EstimateVarianceComponents(*logs);
    }
    if (i == 0) {
      arm.verdict = Verdict::kBaseline;
      continue;
    }
    absl::StatusOr<stats::RatioTest> test = stats::TestRatio(arms[0], arms[i], test_options);
    if (!test.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(test.status().message(), " (arms ", names[0], " and ", names[i], ")"));
    }
    arm.test = *std::move(test);
    arm.ratio_ci_low = arm.test.ci_low;
    arm.ratio_ci_high = arm.test.ci_high;
    arm.ratio_ci_method = MethodName(arm.test);
    arm.significance_p = arm.test.p;
    if (arm.test.ratio) arm.change_pct = stats::PctDiff(1, *arm.test.ratio, direction);
    const std::optional<double> head = Headline(arm.summary, direction);
    const std::optional<double> base_head = Headline(out[0].summary, direction);
    if (head && base_head) arm.pct_diff = stats::PctDiff(*base_head, *head, direction);
    const bool paired = arm.test.design == stats::Design::kPairedBoots ||
                        arm.test.design == stats::Design::kPairedIterations;
    if (!options.cross_checks) {
      arm.welch.why_undefined = arm.mwu.why_undefined = arm.hl.why_undefined = "not computed";
      arm.bootstrap.why_undefined = "not computed";
    } else {
      arm.welch = stats::WelchTest(base_all, all);
      arm.mwu = stats::MannWhitneyU(base_all, all);
      arm.hl = stats::HodgesLehmann(base_all, all, options.level);
    }
    if (options.cross_checks && options.bootstrap.resamples > 0 && !arm.test.other_values.empty() &&
        (paired || !arm.test.base_values.empty())) {
      arm.bootstrap = stats::BootstrapLogRatio(arm.test.base_values, arm.test.other_values, paired,
                                               options.level, options.bootstrap);
    } else if (options.cross_checks) {
      arm.bootstrap.why_undefined = "no bootstrap";
    }
    Advise(arms[0], arms[i], out[0].log_variance, options, &arm);
  }
  return out;
}

}  // namespace tlbfleet::report
