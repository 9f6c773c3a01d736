#pragma once
// Summary statistics of one sample set (pure functions, no I/O). Definitions follow mmtests:
// Stddev is the sample standard deviation (n-1), CoeffVar = 100 * Stddev / Amean,
// Hmean = n / sum(1/x) (undefined when any x <= 0), Gmean = exp(mean(log x)) (x > 0),
// BAmean-P = Amean of the best floor(n * P / 100) values, "best" by the metric's direction
// (all n values when that count is 0, as mmtests' select_data does for an empty range).
// docs/statistics.md has every formula.

#include <optional>
#include <span>
#include <string>

namespace tlbfleet::stats {

enum class Direction { kHigherIsBetter, kLowerIsBetter };

struct Summary {
  size_t n = 0;
  std::optional<double> min, max, amean, hmean, gmean, stddev, coeffvar, bamean95, bamean99;
  // Why fields are nullopt, for people ("one sample: no spread; a value <= 0: no hmean or
  // gmean"); empty when everything is defined.
  std::string why_undefined;
};

// Fields that cannot be computed (empty input, n = 1 for stddev, non-positive values for
// hmean/gmean, a zero mean for coeffvar, any NaN or infinity) are nullopt, never NaN, and
// `why_undefined` says why. `direction` only matters for BAmean.
Summary Summarize(std::span<const double> values, Direction direction = Direction::kHigherIsBetter);

// Percentage difference of `value` against `base`, mmtests' sign convention: positive is
// better whichever direction is better (higher: value/base*100-100, lower:
// 100-value/base*100). 0 when both are 0; nullopt for a zero base against a non-zero value
// or a non-finite result.
std::optional<double> PctDiff(double base, double value, Direction direction);

}  // namespace tlbfleet::stats
