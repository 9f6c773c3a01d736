#include "controller/stats/pairwise_differences.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tlbfleet::stats {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

PairwiseDifferences::PairwiseDifferences(std::span<const double> x_sorted,
                                         std::span<const double> y_sorted)
    : x_(x_sorted),
      y_(y_sorted),
      // Listing a difference costs ~10x counting one pair in a pass: stop narrowing at (n+m)/16.
      list_limit_(std::max<uint64_t>(4096, (x_sorted.size() + y_sorted.size()) / 16)),
      cluster_width_(8 * std::numeric_limits<double>::epsilon() *
                     (std::max(std::fabs(x_sorted.front()), std::fabs(x_sorted.back())) +
                      std::max(std::fabs(y_sorted.front()), std::fabs(y_sorted.back())))) {}

// y[j] - x[i] computed in floating point is monotone in both indices (rounding is
// monotone), so one sweep with a pointer that only moves forward counts exactly. (A
// branch-free merge walk measured 40 % slower than this loop.)
PairwiseDifferences::Pass PairwiseDifferences::Count(double d) const {
  ++passes_;
  const size_t n = x_.size();
  const double* x = x_.data();
  size_t i = 0;
  Pass p{0, -kInf, kInf};
  for (double yj : y_) {
    while (i < n && yj - x[i] > d) ++i;
    p.count += n - i;
    if (i < n) p.max_le = std::max(p.max_le, yj - x[i]);
    if (i > 0) p.min_gt = std::min(p.min_gt, yj - x[i - 1]);
  }
  return p;
}

DifferenceBracket PairwiseDifferences::All() const {
  DifferenceBracket b;
  const double min = y_.front() - x_.back();
  b.lo = std::nextafter(min, -kInf);
  b.count_lo = 0;
  b.above_lo = min;
  b.hi = y_.back() - x_.front();
  b.count_hi = size();
  return b;
}

void PairwiseDifferences::Narrow(uint64_t first, uint64_t last, DifferenceBracket* b) const {
  uint64_t split_count;
  DifferenceBracket left, right;
  NarrowOrSplit(first, last, b, &split_count, &left, &right);
}

bool PairwiseDifferences::NarrowOrSplit(uint64_t first, uint64_t last, DifferenceBracket* b,
                                        uint64_t* split_count, DifferenceBracket* left,
                                        DifferenceBracket* right) const {
  // Three kinds of step in turn: interpolate to just below `first`, to just above `last`
  // (on a locally linear distribution the two collapse the bracket around the wanted ranks),
  // then plain bisection, which bounds the worst case.
  const double margin = static_cast<double>(list_limit_) / 4;
  for (int step = 0;
       b->count_hi - b->count_lo > list_limit_ && b->hi - b->above_lo > cluster_width_; ++step) {
    double mid;
    if (step % 3 == 2) {
      mid = b->lo + (b->hi - b->lo) / 2;
    } else {
      const double target =
          step % 3 == 0 ? static_cast<double>(first) - margin : static_cast<double>(last) + margin;
      double frac = (target - static_cast<double>(b->count_lo)) /
                    static_cast<double>(b->count_hi - b->count_lo);
      frac = std::clamp(frac, 1e-9, 1 - 1e-9);
      mid = b->lo + (b->hi - b->lo) * frac;
    }
    if (!(mid > b->lo && mid < b->hi) || !std::isfinite(mid)) {
      mid = b->lo + (b->hi - b->lo) / 2;
      if (!(mid > b->lo && mid < b->hi)) return false;  // adjacent doubles
    }
    const Pass p = Count(mid);
    if (p.count < first) {
      b->lo = mid;
      b->count_lo = p.count;
      b->above_lo = p.min_gt;
    } else if (p.count >= last) {
      b->hi = p.max_le;  // an actual difference with the same count
      b->count_hi = p.count;
    } else {
      *split_count = p.count;
      *left = *b;
      left->hi = p.max_le;
      left->count_hi = p.count;
      *right = *b;
      right->lo = mid;
      right->count_lo = p.count;
      right->above_lo = p.min_gt;
      return true;
    }
  }
  return false;
}

std::vector<double> PairwiseDifferences::Ranks(uint64_t first, uint64_t last,
                                               DifferenceBracket b) const {
  uint64_t split;
  DifferenceBracket left, right;
  if (NarrowOrSplit(first, last, &b, &split, &left, &right)) {
    std::vector<double> out = Ranks(first, split, left);
    const std::vector<double> rest = Ranks(split + 1, last, right);
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
  }
  if (b.count_hi - b.count_lo > list_limit_) {
    // (lo, hi] holds one value, or a cluster within rounding distance, or lo and hi are
    // adjacent doubles: hi stands for every wanted rank.
    return std::vector<double>(last - first + 1, b.hi);
  }
  // List every difference in (lo, hi].
  std::vector<double> listed;
  listed.reserve(b.count_hi - b.count_lo);
  const size_t n = x_.size();
  size_t i_hi = 0;  // first i with y[j] - x[i] <= hi
  size_t i_lo = 0;  // first i with y[j] - x[i] <= lo
  for (double yj : y_) {
    while (i_hi < n && yj - x_[i_hi] > b.hi) ++i_hi;
    while (i_lo < n && yj - x_[i_lo] > b.lo) ++i_lo;
    for (size_t i = i_hi; i < i_lo; ++i) listed.push_back(yj - x_[i]);
  }
  const auto begin = listed.begin() + static_cast<std::ptrdiff_t>(first - b.count_lo - 1);
  const auto end = listed.begin() + static_cast<std::ptrdiff_t>(last - b.count_lo);
  std::nth_element(listed.begin(), begin, listed.end());
  if (end > begin + 1) std::partial_sort(begin + 1, end, listed.end());
  return std::vector<double>(begin, end);
}

}  // namespace tlbfleet::stats
