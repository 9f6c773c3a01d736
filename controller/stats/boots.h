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

struct Costs {
  double seconds_per_iteration = 10;  // one measured iteration
  double seconds_per_boot = 60;       // reboot, warm-up and setup, before the first iteration
};

struct RepetitionAdvice {
  std::optional<int> iterations_per_boot;  // r1 (Kalibera–Jones optimum), 1 .. 1000
  std::optional<int> boots;                // per arm, 2 .. 10000
  // Expected 95 % half-width of the ratio of means, in percent, at the advised counts.
  std::optional<double> expected_half_width_pct;
  std::string why_undefined;
};

// r1 = ceil(sqrt(c2 / c1 * T1^2 / T2^2)) with c1 = seconds per iteration and c2 = seconds per
// boot, on the relative (mean-scaled) variance components averaged over the two arms; then
// the smallest number of boots n with z * sqrt((v_base + v_other) / n) <= target_half_width,
// where v = (T2^2 + T1^2 / r1) / mean^2 is one boot mean's relative variance. `base` and
// `other` may be the same arm (the baseline's own advice).
RepetitionAdvice RecommendRepetitions(const VarianceComponents& base, double base_mean,
                                      const VarianceComponents& other, double other_mean,
                                      const Costs& costs, double target_half_width = 0.01,
                                      double confidence = 0.95);

}  // namespace tlbfleet::stats
