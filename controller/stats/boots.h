#pragma once
// Boots as a level of the experiment (pure functions). An arm's samples are grouped by boot:
// `boots[b]` holds the iterations measured in boot b. Definitions follow Kalibera & Jones,
// "Rigorous Benchmarking in Reasonable Time" (ISMM 2013): level 1 = iterations within a boot,
// level 2 = boots. docs/statistics.md has the formulas.

#include <optional>
#include <string>
#include <vector>

namespace tlbfleet::stats {

using BootGroups = std::vector<std::vector<double>>;  // boots[b] = iterations of boot b

// The arm's mean as the mean of its boot means (every boot weighs the same, however many
// iterations it has). nullopt when there is no value or a value is not finite.
std::optional<double> MeanOfBootMeans(const BootGroups& boots);

struct VarianceComponents {
  size_t boots = 0;
  double iterations = 0;                // harmonic mean of iterations per boot (r1)
  std::optional<double> within;         // T1^2 = S1^2, pooled within-boot variance
  std::optional<double> between;        // T2^2 = S2^2 - S1^2 / r1, clipped at 0
  double between_unclipped = 0;         // S2^2 - S1^2 / r1 as estimated (may be negative)
  std::optional<double> between_share;  // T2^2 / (T1^2 + T2^2)
  std::string why_undefined;
};

// S1^2 = sum over boots of squared deviations from the boot mean / sum(r_b - 1);
// S2^2 = sample variance of the boot means; T2^2 = S2^2 - S1^2 / r1 (the unbiased corrected
// estimator). `within` needs a boot with 2 iterations; `between` needs 2 boots and `within`.
VarianceComponents EstimateVarianceComponents(const BootGroups& boots);

// ln(x) of every value, boot by boot; nullopt when a value is <= 0 or not finite.
std::optional<BootGroups> LogBootGroups(const BootGroups& boots);

// Variance components of the per-boot log ratio of two arms measured in the same boots
// (paired designs). `base` and `other` are the two arms' log values, boot b of one aligned
// with boot b of the other. The per-boot log ratio l_b = mean(other_b) - mean(base_b) varies
// from boot to boot by the arm x boot interaction (how differently a reboot treats the two
// arms) plus each arm's iteration noise:
//   Var(l_b) = interaction + within_base / r_base + within_other / r_other
// with r the harmonic mean of iterations per boot; interaction is clipped at 0.
struct LogRatioComponents {
  size_t boots = 0;
  double iterations_base = 0, iterations_other = 0;  // r_base, r_other
  std::optional<double> within_base, within_other;   // T1^2 of each arm's log values
  std::optional<double> log_ratio_variance;          // sample variance of l_b
  std::optional<double> interaction;                 // T2^2 of the log ratio
  std::string why_undefined;
};
LogRatioComponents EstimateLogRatioComponents(const BootGroups& base, const BootGroups& other);

struct Costs {
  double seconds_per_iteration = 10;  // one measured iteration of one arm
  double seconds_per_boot = 60;       // reboot, warm-up and setup, before the first iteration
};

struct AdviceOptions {
  Costs costs;
  double margin = 0.01;  // the change that must be detected, and the equivalence margin
  double alpha = 0.05;   // of the verdict's tests (per row, unadjusted)
  double power = 0.8;    // wanted probability of each conclusion below
};

struct RepetitionAdvice {
  // r1, the Kalibera–Jones optimum, 1 .. 100 (100 also when no between-boot variance shows:
  // beyond that the advice would rest on a variance estimated as 0).
  std::optional<int> iterations_per_boot;
  std::optional<int> boots;  // per arm, 2 .. 10000
  // Expected half-width of the ratio's (1 - alpha) interval, in percent, at the advised counts.
  std::optional<double> expected_half_width_pct;
  std::string why_undefined;
};

// How much to measure so that, with probability `power`, the verdict detects a change of
// the margin's size (two-sided t at alpha) and, when nothing changed, concludes "same"
// (TOST at alpha within the margin). With d = ln(1 + margin), s^2(r) the variance of one
// boot's contribution to the log ratio at r iterations per boot, se = s(r) / sqrt(n) and
// T' a noncentral t with df degrees of freedom and noncentrality d / se, the boots per arm
// are the smallest n >= 2 with
//   P(|T'| > t(1 - alpha/2, df)) >= power            (detect a change of the margin)
//   1 - 2 P(T' <= t(1 - alpha, df)) >= power         (conclude same when nothing changed)
// docs/statistics.md#how-many-runs-are-enough derives both.
//
// Arms on their own boots (e.g. two kernels); components of each arm's log values:
//   r1 = ceil(sqrt(c2 / c1 * mean(T1^2) / mean(T2^2))), s^2(r) = sum over arms of
//   (T2^2 + T1^2 / r), df = 2n - 2.
RepetitionAdvice AdviseUnpaired(const VarianceComponents& base_log,
                                const VarianceComponents& other_log, const AdviceOptions& options);
// Arms interleaved in the same boots: a boot costs c2 + 2 r c1, so
//   r1 = ceil(sqrt(c2 (T1b^2 + T1o^2) / (2 c1 interaction))),
//   s^2(r) = interaction + (T1b^2 + T1o^2) / r, df = n - 1.
RepetitionAdvice AdvisePaired(const LogRatioComponents& components, const AdviceOptions& options);

}  // namespace tlbfleet::stats
