#pragma once
// Two-sample tests between a baseline sample `base` and a sample `other` (pure functions).
// Sign convention everywhere: positive means `other` is larger than `base`.
// Reference values: scipy.stats.ttest_ind(other, base, equal_var=False),
// scipy.stats.mannwhitneyu(other, base, method="auto") and R's
// wilcox.test(other, base, conf.int=TRUE) — see tests/fixtures/stats/.

#include <optional>
#include <span>
#include <string>

namespace tlbfleet::stats {

struct WelchResult {
  std::optional<double> t, df, p;  // p two-sided
  std::string why_undefined;
};

// Welch's unequal-variances t-test. Undefined with fewer than 2 values in either sample,
// when both variances are 0 (no spread to test against), or for non-finite input.
WelchResult WelchTest(std::span<const double> base, std::span<const double> other);

struct MannWhitneyResult {
  std::optional<double> u;  // U of `other`: its rank sum minus n_other (n_other + 1) / 2
  std::optional<double> p;  // two-sided
  bool exact = false;       // p from the exact null distribution, not the normal one
  std::string why_undefined;
};

// Mann–Whitney U. The p-value follows scipy's method="auto" — the exact distribution when
// there are no ties and either sample has at most 8 values — with one more condition:
// m·n <= 2500 (the exact table's cost); otherwise the normal approximation with the tie
// correction and a continuity correction of 0.5. Undefined for an empty sample, non-finite
// input, or when every value is tied (no variance under the null).
MannWhitneyResult MannWhitneyU(std::span<const double> base, std::span<const double> other);

struct HodgesLehmannResult {
  std::optional<double> shift;            // median of all differences other_j - base_i
  std::optional<double> ci_low, ci_high;  // `confidence` interval of the shift
  double achieved_confidence = 0;         // exact intervals are conservative
  std::string why_undefined;
};

// Hodges–Lehmann shift estimate and its distribution-free confidence interval
// [D(k), D(nm + 1 - k)] over the sorted differences D. k comes from the exact Wilcoxon
// rank-sum distribution when both samples are smaller than 50 and have no ties (as R's
// wilcox.test), otherwise k = floor(nm/2 - z * sqrt(nm/12 ((n + m + 1) - T))) with the tie
// term T = sum(t^3 - t) / ((n + m)(n + m - 1)) over groups of tied values (Hollander & Wolfe,
// with the rank-sum variance's usual tie correction).
// Never materialises the n·m differences: a sort plus a few O(n + m) counting passes
// (pairwise_differences.h).
HodgesLehmannResult HodgesLehmann(std::span<const double> base, std::span<const double> other,
                                  double confidence = 0.95);

// The k-th smallest (1-based) difference y_j - x_i of two ascending samples. For tests and
// for HodgesLehmann; k in [1, |x||y|].
double KthDifferenceForTest(std::span<const double> x_sorted, std::span<const double> y_sorted,
                            uint64_t k);

}  // namespace tlbfleet::stats
