#pragma once
// The full comparison of a run's arms: mmtests summaries, two-sample tests, boots as a level
// of the experiment, the bootstrap ratio interval, a verdict and repetition advice per
// (metric, sweep value, arm). Plain C++ structs, rendered as text, JSON or CSV by
// render.h. Both the CLI's `compare --from-csv` and `compare RUN --format csv` go through
// Compare(); docs/statistics.md describes every field and rule.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/stats/boots.h"
#include "controller/stats/bootstrap.h"
#include "controller/stats/summary.h"
#include "controller/stats/two_sample.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

// One measured value: what the store's Sample and a row of the offline CSV have in common.
struct Observation {
  std::string arm;
  std::string boot;  // samples with the same boot string were measured in the same boot
  std::string param_name;
  std::string param_value;
  uint32_t iteration = 0;
  std::string metric;
  std::string unit;
  stats::Direction direction = stats::Direction::kHigherIsBetter;
  double value = 0;
};

// The aggregate samples (series "") as observations; boot = boot_id, and a missing or
// BETTER_UNSPECIFIED direction reads as higher-is-better (as BuildReport).
std::vector<Observation> ObservationsFromSamples(const std::vector<v1::Sample>& samples);

// Parses CSV with a header line naming the columns arm, boot, param, iteration, metric,
// value (any order; other columns are ignored; RFC 4180 quoting on one line). `param` is
// "name=value" or a bare value. Every metric gets `direction`. INVALID_ARGUMENT with the
// line number on a malformed line; a value that is not a number is an error, "nan" is not.
absl::StatusOr<std::vector<Observation>> ParseObservationsCsv(std::string_view text,
                                                              stats::Direction direction);

struct CompareOptions {
  // Arms in order, baseline first. Empty: the order arms first appear in the observations.
  // Observations of arms not listed are ignored.
  std::vector<std::string> arm_order;
  // Moves this arm to the front; INVALID_ARGUMENT if no arm has that name. Empty: keep.
  std::string baseline;
  double alpha = 0.05;        // a difference is significant ('*') when significance_p < alpha
  double equivalence = 0.01;  // "same": the ratio's CI lies within [1 - e, 1 + e]
  // The between-boot share of the variance above which the report says "add boots".
  double between_boot_dominates = 0.5;
  double hl_confidence = 0.95;
  stats::BootstrapOptions bootstrap;
  stats::Costs costs;
};

enum class Verdict { kBaseline, kBetter, kWorse, kSame, kUnknown };
const char* VerdictName(Verdict verdict);  // "baseline", "better", ...

struct ArmResult {
  std::string arm;
  size_t n = 0;
  size_t boots = 0;
  stats::Summary summary;
  std::optional<double> mean_of_boot_means;
  // The headline statistic's (Hmean for higher-is-better, Amean for lower) % difference to
  // the baseline, positive = better; nullopt for the baseline and where undefined.
  std::optional<double> pct_diff;
  // Welch's p on the unit of replication: boot means when both arms have 2 boots or more
  // (iterations of one boot are not independent of each other), else the samples.
  std::optional<double> significance_p;
  bool significant = false;  // significance_p < alpha: the '*' of the text table
  stats::WelchResult welch;
  stats::MannWhitneyResult mwu;
  stats::HodgesLehmannResult hl;
  stats::RatioInterval ratio;
  std::optional<double> ratio_ci_low, ratio_ci_high;  // BCa when defined, else percentile
  const char* ratio_ci_method = "";                   // "bca", "percentile" or ""
  stats::VarianceComponents variance;
  stats::RepetitionAdvice advice;
  Verdict verdict = Verdict::kUnknown;
  // Sentences for people: why the verdict, and what to measure next.
  std::vector<std::string> notes;
};

struct GroupResult {
  std::string metric;
  std::string unit;
  stats::Direction direction = stats::Direction::kHigherIsBetter;
  std::string param_name;
  std::string param_value;
  std::vector<ArmResult> arms;  // in Comparison.arms order; arms[0] is the baseline
};

struct Comparison {
  std::vector<std::string> arms;
  std::vector<GroupResult> groups;  // by metric (first appearance), then sweep value
};

// The analysis of one (metric, sweep value): `boots[i]` holds arm `names[i]`'s values grouped
// by boot; index 0 is the baseline. What Compare runs per group; public for benchmarks.
std::vector<ArmResult> AnalyseGroup(const std::vector<std::string>& names,
                                    const std::vector<stats::BootGroups>& boots,
                                    stats::Direction direction, const CompareOptions& options);

// INVALID_ARGUMENT for no arms, an arm listed twice, or an unknown baseline.
absl::StatusOr<Comparison> Compare(const std::vector<Observation>& observations,
                                   const CompareOptions& options);

// Sorts (name, value) sweep keys: numerically when every value is a number (threads=10
// after threads=9), otherwise as strings. Shared with BuildReport.
void SortSweepKeys(std::vector<std::pair<std::string, std::string>>* keys);

// "threads=4", or the bare value when the parameter has no name.
std::string SweepLabel(const std::string& param_name, const std::string& param_value);

}  // namespace tlbfleet::report
