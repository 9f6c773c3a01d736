#pragma once
// Summary statistics of one sample set (pure functions, no I/O). Definitions follow mmtests:
// Stddev is the sample standard deviation (n-1), CoeffVar = 100 * Stddev / Amean,
// Hmean = n / sum(1/x) (undefined when any x <= 0), Gmean = exp(mean(log x)) (x > 0).

#include <optional>
#include <span>

namespace tlbfleet::stats {

struct Summary {
  size_t n = 0;
  std::optional<double> min, max, amean, hmean, gmean, stddev, coeffvar;
};

// Fields that cannot be computed (empty input, n = 1 for stddev, non-positive values for
// hmean/gmean, a zero mean for coeffvar, any NaN) are nullopt, never NaN.
Summary Summarize(std::span<const double> values);

}  // namespace tlbfleet::stats
