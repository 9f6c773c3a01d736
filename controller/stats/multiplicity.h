#pragma once
// Multiple comparisons (pure functions). One comparison judges many rows (metrics x sweep
// values x arms); at alpha = 0.05 per row, 72 rows with no true change expect 3.6 false
// verdicts. Benjamini & Hochberg (1995) keeps the expected share of false discoveries among
// the rows called different at alpha, and under the complete null (nothing changed anywhere)
// the chance of any false verdict at alpha. Reference: R's p.adjust(p, "BH").

#include <optional>
#include <vector>

namespace tlbfleet::stats {

// Benjamini–Hochberg adjusted p-values ("q-values"): q_(i) = min over j >= i of
// m p_(j) / j, capped at 1, where p_(1) <= ... <= p_(m) are the m defined p-values. A row is
// a discovery at level alpha when q < alpha. Undefined p-values stay undefined and do not
// count in m.
std::vector<std::optional<double>> BenjaminiHochberg(const std::vector<std::optional<double>>& p);

// The confidence level of false-coverage-rate adjusted intervals (Benjamini & Yekutieli
// 2005): 1 - max(R, 1) alpha / m with R discoveries among m rows. At that level a row's
// interval excludes 1 exactly when its q < alpha, so the printed interval and the adjusted
// verdict never disagree. `level` = 1 - alpha; m = 0 returns `level`.
double FcrAdjustedLevel(double level, size_t discoveries, size_t m);

}  // namespace tlbfleet::stats
