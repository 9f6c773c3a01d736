#include "controller/stats/summary.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <vector>

namespace tlbfleet::stats {
namespace {

// Every field passes through here, so overflow to inf (or a NaN from inf - inf) turns into
// "undefined" instead of leaking into reports.
std::optional<double> Finite(double x) {
  if (!std::isfinite(x)) return std::nullopt;
  return x;
}

void AddReason(std::string* why, const char* reason) {
  if (!why->empty()) *why += "; ";
  *why += reason;
}

// Mean that survives a sum overflowing although every value is finite.
double Mean(std::span<const double> values) {
  const double n = static_cast<double>(values.size());
  double sum = 0;
  for (double x : values) sum += x;
  double mean = sum / n;
  if (!std::isfinite(mean)) {
    mean = 0;
    for (double x : values) mean += x / n;
  }
  return mean;
}

// mmtests' BAmean: the mean of the best floor(n * percent / 100) values; all values when
// that is 0 (n = 1 at 95 %). Partitions `values` (O(n), no full sort).
double BestMean(std::vector<double>* values, int percent, Direction direction) {
  const size_t n = values->size();
  size_t keep = n * static_cast<size_t>(percent) / 100;
  if (keep == 0) keep = n;
  const auto nth = values->begin() + static_cast<std::ptrdiff_t>(keep - 1);
  if (direction == Direction::kHigherIsBetter) {
    std::nth_element(values->begin(), nth, values->end(), std::greater<double>());
  } else {
    std::nth_element(values->begin(), nth, values->end());
  }
  return Mean(std::span<const double>(values->data(), keep));
}

}  // namespace

Summary Summarize(std::span<const double> values, Direction direction) {
  Summary s;
  s.n = values.size();
  if (values.empty()) {
    s.why_undefined = "no samples";
    return s;
  }
  // One NaN (or inf) would poison every statistic; report none rather than wrong ones.
  for (double x : values) {
    if (!std::isfinite(x)) {
      s.why_undefined = "a sample is NaN or infinite";
      return s;
    }
  }

  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  s.min = *lo;
  s.max = *hi;

  // Two passes: the mean first, then squared deviations from it. Unlike the one-pass
  // sum-of-squares formula this keeps the spread of large values with small differences,
  // which throughput numbers usually are.
  const double n = static_cast<double>(s.n);
  const double mean = Mean(values);
  double m2 = 0;
  for (double x : values) m2 += (x - mean) * (x - mean);
  s.amean = Finite(mean);

  if (s.n >= 2) {
    s.stddev = Finite(std::sqrt(m2 / (n - 1)));
    if (!s.stddev) AddReason(&s.why_undefined, "the spread overflows");
    if (s.stddev && s.amean && *s.amean != 0) s.coeffvar = Finite(100.0 * *s.stddev / *s.amean);
    if (s.stddev && s.amean && *s.amean == 0) AddReason(&s.why_undefined, "zero mean: no coeffvar");
  } else {
    AddReason(&s.why_undefined, "one sample: no stddev or coeffvar");
  }

  if (*lo > 0) {
    double inverse_sum = 0;
    double log_sum = 0;
    for (double x : values) {
      inverse_sum += 1.0 / x;
      log_sum += std::log(x);
    }
    s.hmean = Finite(n / inverse_sum);
    s.gmean = Finite(std::exp(log_sum / n));
  } else {
    AddReason(&s.why_undefined, "a sample <= 0: no hmean or gmean");
  }

  std::vector<double> scratch(values.begin(), values.end());
  s.bamean99 = Finite(BestMean(&scratch, 99, direction));
  s.bamean95 = Finite(BestMean(&scratch, 95, direction));
  return s;
}

std::optional<double> PctDiff(double base, double value, Direction direction) {
  if (base == 0) return value == 0 ? std::optional<double>(0.0) : std::nullopt;
  const double ratio = value / base * 100.0;
  const double pct = direction == Direction::kHigherIsBetter ? ratio - 100.0 : 100.0 - ratio;
  if (!std::isfinite(pct)) return std::nullopt;
  return pct;
}

}  // namespace tlbfleet::stats
