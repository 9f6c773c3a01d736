#include "controller/stats/multiplicity.h"

#include <algorithm>

namespace tlbfleet::stats {

std::vector<std::optional<double>> BenjaminiHochberg(const std::vector<std::optional<double>>& p) {
  std::vector<size_t> order;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i].has_value()) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return *p[a] < *p[b]; });
  std::vector<std::optional<double>> q(p.size());
  const double m = static_cast<double>(order.size());
  double running = 1;
  for (size_t k = order.size(); k-- > 0;) {
    // m / (k + 1) first: exactly 1 for the largest p, so q >= p holds without rounding.
    running = std::min(running, *p[order[k]] * (m / static_cast<double>(k + 1)));
    q[order[k]] = std::min(1.0, running);
  }
  return q;
}

double FcrAdjustedLevel(double level, size_t discoveries, size_t m) {
  if (m == 0) return level;
  const double alpha = 1 - level;
  return 1 - static_cast<double>(std::max<size_t>(discoveries, 1)) * alpha / static_cast<double>(m);
}

}  // namespace tlbfleet::stats
