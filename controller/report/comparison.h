#pragma once
// The full comparison of a run's arms: mmtests summaries, the verdict's test (a t test of the
// ratio of geometric means across boots, paired when the arms share boots), multiplicity
// control across rows, cross-checks (Welch, Mann–Whitney, Hodges–Lehmann on pooled samples,
// a bootstrap), boots as a level of the experiment and repetition advice, per (metric,
// sweep value, arm). Plain C++ structs, rendered as text, JSON or CSV by render.h, or as the
// proto Report by compare.h. docs/statistics.md describes every field and rule.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/stats/boots.h"
#include "controller/stats/bootstrap.h"
#include "controller/stats/ratio_interval.h"
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
// BETTER_UNSPECIFIED direction reads as higher-is-better (as BuildReport). Samples the store
// marks excluded (Sample.excluded: work measured again) are left out.
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
  // Confidence level of the verdict's intervals; its tests run at alpha = 1 - level. (0, 1).
  double level = 0.95;
  // Equivalence margin: "same" means the ratio is shown to lie in [1 - margin, 1 + margin]
  // (TOST at alpha, i.e. the 1 - 2 alpha interval within the margin). (0, 1).
  double margin = 0.01;
  stats::Pairing pairing = stats::Pairing::kAuto;
  // Benjamini–Hochberg across every row of the comparison (metrics x sweep values x arms):
  // verdicts use the adjusted q. false: each row on its own p (q = p).
  bool adjust = true;
  // The between-boot share of the variance above which the report says "add boots".
  double between_boot_dominates = 0.5;
  double power = 0.8;  // of the repetition advice (stats::AdviceOptions)
  // The cross-checks (Welch, Mann–Whitney, Hodges–Lehmann on pooled samples, the bootstrap)
  // are reported, never used for a verdict or an adaptive decision; false skips them (the
  // adaptive driver and calibration runs, where only the verdict's test counts).
  bool cross_checks = true;
  stats::BootstrapOptions bootstrap;
  stats::Costs costs;
};

// INVALID_ARGUMENT naming the option ("margin: ...", "level: ...") for a margin or level
// outside (0, 1), a power outside (0, 1), or negative resamples.
absl::Status ValidateCompareOptions(const CompareOptions& options);

enum class Verdict { kBaseline, kBetter, kWorse, kSame, kUnknown };
const char* VerdictName(Verdict verdict);  // "baseline", "better", ...

struct ArmResult {
  std::string arm;
  // The flush ceiling this arm ran under ("512", "default = 33"; arm_ceilings.h), or "".
  std::string ceiling;
  // Where its samples were measured ("vm1 (agent 0d60fd02, machine 4c4c4544) 40 samples; …"),
  // and what of it was left out and why (arm_hosts.h); "" when not known.
  std::string hosts;
  std::string excluded;
  size_t n = 0;
  size_t boots = 0;
  stats::Summary summary;
  std::optional<double> mean_of_boot_means;
  // mmtests' headline statistic (Hmean for higher-is-better, Amean for lower) of all the
  // samples, % difference to the baseline, positive = better; nullopt for the baseline and
  // where undefined. NOT the verdict's estimand (see `test`): with boots, or skewed
  // samples, the two can differ, and every format says which is which.
  std::optional<double> pct_diff;

  // --- the verdict (non-baseline arms) ---
  // The test behind the verdict: ratio of geometric means (boots weighted equally), its
  // interval at options.level, p, TOST, scope and design (stats/ratio_interval.h).
  stats::RatioTest test;
  std::optional<double> change_pct;  // the test's ratio as a % change, positive = better
  // Benjamini–Hochberg adjusted test.p and test.same_p across the comparison's rows; equal
  // to them when options.adjust is false.
  std::optional<double> q, same_q;
  // The ratio's interval at the false-coverage-rate adjusted level (stats/multiplicity.h):
  // excludes 1 exactly when q < alpha. The plain interval is ratio_ci_low/high.
  std::optional<double> adjusted_ci_low, adjusted_ci_high;
  double adjusted_level = 0;
  std::optional<double> significance_p;               // = test.p (the name JSON has always used)
  bool significant = false;                           // q < alpha: the '*' of the text table
  std::optional<double> ratio_ci_low, ratio_ci_high;  // = test.ci_low/high
  const char* ratio_ci_method = "";                   // "paired t", "Welch t", "Student t"
  Verdict verdict = Verdict::kUnknown;

  // --- cross-checks: every sample as an independent replicate ---
  stats::WelchResult welch;
  stats::MannWhitneyResult mwu;
  stats::HodgesLehmannResult hl;
  // Bootstrap of the same ratio over the test's units (distribution-free cross-check).
  stats::BootstrapInterval bootstrap;

  // --- boots and advice ---
  stats::VarianceComponents variance;      // this arm's, in the metric's units
  stats::VarianceComponents log_variance;  // the same of ln(value); empty for values <= 0
  // Paired designs: the per-boot log ratio's components (arm x boot interaction).
  stats::LogRatioComponents log_ratio_components;
  stats::RepetitionAdvice advice;  // for this arm against the baseline; none for the baseline
  // Sentences for people: why the verdict, its scope, and what to measure next.
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
  double level = 0.95;
  double margin = 0.01;
  bool adjusted = true;
  size_t rows = 0;         // non-baseline arms with a defined p: the Benjamini–Hochberg m
  size_t discoveries = 0;  // rows with q < alpha
  std::string ceilings;    // "flush ceiling per arm: …" line (arm_ceilings.h), or ""
  // The machines behind each arm's compared samples, and the samples left out (arm_hosts.h);
  // empty when the samples do not say (offline CSV).
  struct HostUse {
    std::string arm;
    std::string agent_id;
    std::string hostname;
    std::string machine_id;
    uint64_t samples = 0;
    uint32_t boots = 0;
  };
  struct Excluded {
    std::string arm;
    std::string agent_id;
    std::string hostname;
    std::string machine_id;
    std::string reason;
    uint64_t samples = 0;
  };
  std::vector<HostUse> hosts;
  std::vector<Excluded> excluded;
};

// The analysis of one (metric, sweep value): `arms[i]` holds arm `names[i]`'s samples; index 0
// is the baseline. Everything but the verdict, q and the adjusted interval, which need every
// row (DecideVerdicts). INVALID_ARGUMENT (message starting "pairing: ") when the pairing
// asked for is impossible. Public for benchmarks and calibration.
absl::StatusOr<std::vector<ArmResult>> AnalyseGroup(const std::vector<std::string>& names,
                                                    const std::vector<stats::ArmSamples>& arms,
                                                    stats::Direction direction,
                                                    const CompareOptions& options);

// Benjamini–Hochberg across every non-baseline row of `comparison` (unless options.adjust
// is false), then each row's verdict and notes, in this order:
//   same     same_q < alpha: the (1 - 2 alpha) interval lies within ±margin
//   better   q < alpha and the ratio favours `other` (> 1 higher-is-better, < 1 lower)
//   worse    q < alpha and the ratio favours the baseline
//   unknown  otherwise, or no test
// "same" wins over better/worse: a real change smaller than the margin is what the user
// called irrelevant.
void DecideVerdicts(const CompareOptions& options, Comparison* comparison);

// The full comparison: groups the observations, AnalyseGroup per group, DecideVerdicts.
// INVALID_ARGUMENT for no arms, an arm listed twice, an unknown baseline, invalid options
// (ValidateCompareOptions), or a pairing the boots do not allow (naming the metric, sweep
// value and arms).
//
// This is the one entry point for every verdict tlbfleet gives (the CLI, the controller's
// Compare RPC, adaptive runs; nightly regression detection and bisection too): to compare
// two kernels or ceilings, make one Observation per sample with arm = "before"/"after",
// boot = the boot it was measured in, call Compare, and read each non-baseline ArmResult's
// verdict, test.ratio, ratio_ci_low/high (at options.level), test.p, q, test.scope
// (within-boot results speak only for the boot measured) and notes.
absl::StatusOr<Comparison> Compare(const std::vector<Observation>& observations,
                                   const CompareOptions& options);

// Sorts (name, value) sweep keys: numerically when every value is a number (threads=10
// after threads=9), otherwise as strings. Shared with BuildReport.
void SortSweepKeys(std::vector<std::pair<std::string, std::string>>* keys);

// "threads=4", or the bare value when the parameter has no name.
std::string SweepLabel(const std::string& param_name, const std::string& param_value);

}  // namespace tlbfleet::report
