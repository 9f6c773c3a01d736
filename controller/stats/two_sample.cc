#include "controller/stats/two_sample.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <vector>

#include "boost/math/distributions/normal.hpp"
#include "boost/math/distributions/students_t.hpp"
#include "controller/stats/pairwise_differences.h"

namespace tlbfleet::stats {
namespace {

// Largest m·n for which the exact rank-sum distribution is tabulated: the recurrence costs
// O(m n (m n)). scipy computes it for any size when a sample has at most 8 values; here a
// small sample against a large one (8 x 313 and beyond) uses the normal approximation
// (200 random 8 x 313 data sets: |exact p - normal p| <= 0.007).
constexpr uint64_t kMaxExactCells = 2500;

bool AllFinite(std::span<const double> values) {
  return std::all_of(values.begin(), values.end(), [](double x) { return std::isfinite(x); });
}

struct MeanVar {
  double mean = 0;
  double var = 0;  // sample variance, n - 1
};

MeanVar MeanAndVariance(std::span<const double> values) {
  MeanVar mv;
  const double n = static_cast<double>(values.size());
  for (double x : values) mv.mean += x;
  mv.mean /= n;
  for (double x : values) mv.var += (x - mv.mean) * (x - mv.mean);
  mv.var /= n - 1;
  return mv;
}

// A sorted copy; callers that pass sorted samples (report/comparison.cc sorts each arm once
// for all tests) pay only the check.
std::vector<double> Sorted(std::span<const double> values) {
  std::vector<double> out(values.begin(), values.end());
  if (!std::is_sorted(out.begin(), out.end())) std::sort(out.begin(), out.end());
  return out;
}

// Counts of U = 0..m·n under the null for samples of m and n values, by the recurrence
// f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u). Doubles: C(98, 49) ~ 2.5e28 still has
// 15 significant digits.
std::vector<double> RankSumCounts(int m, int n) {
  if (m > n) std::swap(m, n);
  const int cells = m * n;
  // table[a][u] = f(a, layer, u) for a = 0..m.
  std::vector<std::vector<double>> table(m + 1, std::vector<double>(cells + 1, 0.0));
  for (int a = 0; a <= m; ++a) table[a][0] = 1;  // f(a, 0, 0) = 1
  for (int layer = 1; layer <= n; ++layer) {
    // f(a, layer, u) = f(a - 1, layer, u - layer) + f(a, layer - 1, u); a ascending reads
    // the already-updated row a - 1 and this row's previous layer in place.
    for (int a = 1; a <= m; ++a) {
      for (int u = a * layer; u >= layer; --u) table[a][u] += table[a - 1][u - layer];
    }
  }
  return table[m];
}

// Sum of counts[0..q] / total.
double Cdf(const std::vector<double>& counts, double total, int q) {
  double p = 0;
  for (int u = 0; u <= q && u < static_cast<int>(counts.size()); ++u) p += counts[u];
  return p / total;
}

// Sum of t^3 - t over the groups of tied values of both samples together (0: no ties).
double TieTerm(const std::vector<double>& a_sorted, const std::vector<double>& b_sorted) {
  std::vector<double> all;
  all.reserve(a_sorted.size() + b_sorted.size());
  std::merge(a_sorted.begin(), a_sorted.end(), b_sorted.begin(), b_sorted.end(),
             std::back_inserter(all));
  double term = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j] == all[i]) ++j;
    const double t = static_cast<double>(j - i);
    term += t * t * t - t;
    i = j;
  }
  return term;
}

}  // namespace

WelchResult WelchTest(std::span<const double> base, std::span<const double> other) {
  WelchResult r;
  if (base.size() < 2 || other.size() < 2) {
    r.why_undefined = "fewer than 2 samples in an arm";
    return r;
  }
  if (!AllFinite(base) || !AllFinite(other)) {
    r.why_undefined = "a sample is NaN or infinite";
    return r;
  }
  const MeanVar a = MeanAndVariance(base);
  const MeanVar b = MeanAndVariance(other);
  const double va = a.var / static_cast<double>(base.size());
  const double vb = b.var / static_cast<double>(other.size());
  if (va + vb == 0) {
    r.why_undefined = "both arms are constant";
    return r;
  }
  const double t = (b.mean - a.mean) / std::sqrt(va + vb);
  const double df = (va + vb) * (va + vb) /
                    (va * va / static_cast<double>(base.size() - 1) +
                     vb * vb / static_cast<double>(other.size() - 1));
  if (!std::isfinite(t) || !std::isfinite(df)) {
    r.why_undefined = "overflow";
    return r;
  }
  r.t = t;
  r.df = df;
  const boost::math::students_t dist(df);
  r.p = std::min(1.0, 2 * boost::math::cdf(boost::math::complement(dist, std::fabs(t))));
  return r;
}

MannWhitneyResult MannWhitneyU(std::span<const double> base, std::span<const double> other) {
  MannWhitneyResult r;
  if (base.empty() || other.empty()) {
    r.why_undefined = "an arm has no samples";
    return r;
  }
  if (!AllFinite(base) || !AllFinite(other)) {
    r.why_undefined = "a sample is NaN or infinite";
    return r;
  }
  const std::vector<double> xs = Sorted(base);
  const std::vector<double> ys = Sorted(other);
  const double n1 = static_cast<double>(ys.size());  // "other" is scipy's first sample
  const double n2 = static_cast<double>(xs.size());
  // Rank sum of `other` by a merge of the two sorted samples; ties get their mean rank.
  double rank_sum = 0;
  double tie_term = 0;  // sum of t^3 - t over tie groups
  size_t i = 0, j = 0;
  double next_rank = 1;
  while (i < xs.size() || j < ys.size()) {
    double v;
    if (j == ys.size() || (i < xs.size() && xs[i] < ys[j])) {
      v = xs[i];
    } else {
      v = ys[j];
    }
    size_t cx = 0, cy = 0;
    while (i < xs.size() && xs[i] == v) ++i, ++cx;
    while (j < ys.size() && ys[j] == v) ++j, ++cy;
    const double t = static_cast<double>(cx + cy);
    const double mean_rank = next_rank + (t - 1) / 2;
    rank_sum += mean_rank * static_cast<double>(cy);
    tie_term += t * t * t - t;
    next_rank += t;
  }
  const double u1 = rank_sum - n1 * (n1 + 1) / 2;
  r.u = u1;
  const double u = std::max(u1, n1 * n2 - u1);
  const bool ties = tie_term > 0;
  const uint64_t cells = static_cast<uint64_t>(xs.size()) * ys.size();
  if (!ties && (xs.size() <= 8 || ys.size() <= 8) && cells <= kMaxExactCells) {
    const std::vector<double> counts =
        RankSumCounts(static_cast<int>(ys.size()), static_cast<int>(xs.size()));
    double total = 0;
    for (double c : counts) total += c;
    // P(U >= u) = P(U <= mn - u) by symmetry.
    const int below = static_cast<int>(std::llround(n1 * n2 - u));
    r.p = std::min(1.0, 2 * Cdf(counts, total, below));
    r.exact = true;
    return r;
  }
  const double n = n1 + n2;
  const double s = std::sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))));
  if (!(s > 0)) {
    r.why_undefined = "every value is tied";
    r.u.reset();
    return r;
  }
  const double z = (u - n1 * n2 / 2 - 0.5) / s;
  const boost::math::normal normal;
  r.p = std::clamp(2 * boost::math::cdf(boost::math::complement(normal, z)), 0.0, 1.0);
  return r;
}

double KthDifferenceForTest(std::span<const double> x_sorted, std::span<const double> y_sorted,
                            uint64_t k) {
  const PairwiseDifferences d(x_sorted, y_sorted);
  return d.Ranks(k, k, d.All())[0];
}

HodgesLehmannResult HodgesLehmann(std::span<const double> base, std::span<const double> other,
                                  double confidence) {
  HodgesLehmannResult r;
  if (base.empty() || other.empty()) {
    r.why_undefined = "an arm has no samples";
    return r;
  }
  if (!AllFinite(base) || !AllFinite(other)) {
    r.why_undefined = "a sample is NaN or infinite";
    return r;
  }
  const std::vector<double> xs = Sorted(base);
  const std::vector<double> ys = Sorted(other);
  const uint64_t cells = static_cast<uint64_t>(xs.size()) * ys.size();
  const PairwiseDifferences diffs(xs, ys);

  const double alpha = 1 - confidence;
  uint64_t k = 0;
  const double tie_term = TieTerm(xs, ys);
  const bool exact = xs.size() < 50 && ys.size() < 50 && tie_term == 0;
  if (exact) {
    const std::vector<double> counts =
        RankSumCounts(static_cast<int>(ys.size()), static_cast<int>(xs.size()));
    double total = 0;
    for (double c : counts) total += c;
    // R's qwilcox(alpha / 2): the smallest q with P(W <= q) >= alpha / 2 (with its fuzz).
    const double target = alpha / 2 - 10 * std::numeric_limits<double>::epsilon();
    double p = 0;
    uint64_t q = 0;
    while (q < counts.size()) {
      p += counts[q] / total;
      if (p >= target) break;
      ++q;
    }
    k = std::max<uint64_t>(q, 1);
    r.achieved_confidence = 1 - 2 * Cdf(counts, total, static_cast<int>(k) - 1);
  } else {
    // The rank-sum statistic's variance with the tie correction, as Mann–Whitney's.
    const double z = boost::math::quantile(boost::math::normal(), 1 - alpha / 2);
    const double nm = static_cast<double>(cells);
    const double n_total = static_cast<double>(xs.size() + ys.size());
    const double var = nm / 12 * ((n_total + 1) - tie_term / (n_total * (n_total - 1)));
    const double kk = std::floor(nm / 2 - z * std::sqrt(var));
    k = kk < 1 ? 1 : static_cast<uint64_t>(kk);
    r.achieved_confidence = confidence;
  }
  if (k > cells) k = cells;
  const uint64_t k_high = cells + 1 - k;
  // One bracket around all the ranks wanted (interval ends and median), then each rank.
  DifferenceBracket around = diffs.All();
  diffs.Narrow(std::min(k, k_high), std::max(k, k_high), &around);
  // The median of the differences: the mean of the two middle ones when there is an even
  // number of them (R's median()).
  if (cells % 2 == 1) {
    r.shift = diffs.Ranks(cells / 2 + 1, cells / 2 + 1, around)[0];
  } else {
    const std::vector<double> mid = diffs.Ranks(cells / 2, cells / 2 + 1, around);
    r.shift = (mid[0] + mid[1]) / 2;
  }
  r.ci_low = diffs.Ranks(k, k, around)[0];
  r.ci_high = diffs.Ranks(k_high, k_high, around)[0];
  return r;
}

}  // namespace tlbfleet::stats
