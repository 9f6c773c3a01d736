#pragma once
// Hierarchical bootstrap confidence interval of the ratio of two arms' means (pure, seeded,
// reproducible). Each resample draws an arm's boots with replacement, then the iterations
// within each drawn boot with replacement; the arm's resampled mean is the mean of the drawn
// boots' resampled means, and the statistic is other / base.

#include <cstdint>
#include <optional>
#include <string>

#include "controller/stats/boots.h"

namespace tlbfleet::stats {

// How the within-boot level is resampled.
enum class WithinBoot {
  // Exact when resamples * (samples of both arms) <= exact_draw_budget, else kNormal.
  kAuto,
  // Draw r iterations with replacement from the boot's r iterations.
  kExact,
  // Draw the resampled boot mean from N(boot mean, boot variance / r), the variance with
  // denominator r: the same mean and variance as kExact's resampled boot mean, in O(1)
  // instead of O(r). By the central limit theorem the two agree for all but tiny r.
  kNormal,
};

struct BootstrapOptions {
  int resamples = 10000;
  uint64_t seed = 0x746c62666c656574;  // "tlbfleet": the same data gives the same report
  double confidence = 0.95;
  WithinBoot within = WithinBoot::kAuto;
  uint64_t exact_draw_budget = 50'000'000;
};

struct RatioInterval {
  std::optional<double> ratio;  // mean(other) / mean(base), boot-mean means
  std::optional<double> percentile_low, percentile_high;
  std::optional<double> bca_low, bca_high;  // nullopt when BCa is undefined (see .cc)
  bool exact_within = false;                // which WithinBoot was used
  std::string why_undefined;
};

// Undefined (with a reason) when an arm has no samples, a value is not finite, or the
// baseline's mean (or a resample of it) is 0.
RatioInterval BootstrapRatioOfMeans(const BootGroups& base, const BootGroups& other,
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

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace tlbfleet::stats
