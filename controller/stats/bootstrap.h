#pragma once
// Bootstrap interval of the verdict's ratio (pure, seeded, reproducible): a distribution-free
// cross-check printed next to the t interval of ratio_interval.h, never the basis of a verdict.
// It resamples the units the test uses — boots when there are boots (Davison & Hinkley
// 1997, §3.8: resample the top level only; resampling iterations inside resampled boots
// counts the within-boot variance twice), the iterations of the single boot otherwise — on
// the log scale: statistic = mean(other units) - mean(base units), ratio = exp(statistic).
// Paired designs resample the per-boot log ratios, i.e. boot ids jointly for both arms.
//
// With few units a bootstrap interval is too narrow: it has the plug-in variance's
// (B - 1) / B shrinkage and normal rather than t tails (2 boots per arm: 3 distinct
// resamples each). docs/statistics.md's calibration table shows its coverage next to the t
// interval's.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace tlbfleet::stats {

struct BootstrapOptions {
  int resamples = 10000;               // 0: no bootstrap
  uint64_t seed = 0x746c62666c656574;  // "tlbfleet": the same data gives the same report
  // Above resamples * units draws, each resampled mean is drawn from N(mean, variance / n)
  // (population variance: the same first two moments as drawing n units), O(1) instead of
  // O(n); by the central limit theorem the two agree for all but tiny n.
  uint64_t exact_draw_budget = 50'000'000;
};

struct BootstrapInterval {
  std::optional<double> percentile_low, percentile_high;  // ratio scale
  std::optional<double> bca_low, bca_high;                // nullopt when BCa is undefined (see .cc)
  bool exact = true;                                      // every resample drawn unit by unit
  std::string why_undefined;
};

// `paired`: `other` holds the per-pair log ratios (resampled as one sample; `base` is
// ignored). Otherwise `base` and `other` are each arm's log-scale units, resampled
// independently. `level` in (0, 1). Undefined (with a reason) with no units, fewer than 2
// resamples, or non-finite values.
BootstrapInterval BootstrapLogRatio(std::span<const double> base, std::span<const double> other,
                                    bool paired, double level,
                                    const BootstrapOptions& options = {});

// A small, fast generator with a documented algorithm (xoshiro256++, seeded by splitmix64),
// so a seed means the same numbers on every platform — unlike std:: distributions.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t Next();
  // Uniform in [0, n), n >= 1 (Lemire's multiply-shift with rejection: unbiased).
  uint64_t Below(uint64_t n);
  // Standard normal (Box–Muller on two uniform doubles).
  double Normal();
  // Uniform in [0, 1).
  double Uniform();

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace tlbfleet::stats
