#include "controller/stats/summary.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace tlbfleet::stats {
namespace {

// Every field passes through here, so overflow to inf (or a NaN from inf - inf) turns into
// "undefined" instead of leaking into reports.
std::optional<double> Finite(double x) {
  if (!std::isfinite(x)) return std::nullopt;
  return x;
}

}  // namespace

Summary Summarize(std::span<const double> values) {
  Summary s;
  s.n = values.size();
  if (values.empty()) return s;
  // One NaN (or inf) would poison every statistic; report none rather than wrong ones.
  for (double x : values) {
    if (!std::isfinite(x)) return s;
  }

  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  s.min = *lo;
  s.max = *hi;

  // Two passes: the mean first, then squared deviations from it. Unlike the one-pass
  // sum-of-squares formula this keeps the spread of large values with small differences,
  // which throughput numbers usually are.
  const double n = static_cast<double>(s.n);
  double sum = 0;
  for (double x : values) sum += x;
  double mean = sum / n;
  if (!std::isfinite(mean)) {
    // The sum overflowed although every value is finite; scaling first cannot overflow.
    mean = 0;
    for (double x : values) mean += x / n;
  }
  double m2 = 0;
  for (double x : values) m2 += (x - mean) * (x - mean);
  s.amean = Finite(mean);

  if (s.n >= 2) {
    s.stddev = Finite(std::sqrt(m2 / (n - 1)));
    if (s.stddev && s.amean && *s.amean != 0) s.coeffvar = Finite(100.0 * *s.stddev / *s.amean);
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
  }
  return s;
}

}  // namespace tlbfleet::stats
