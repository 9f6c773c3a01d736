#pragma once
// Order statistics of the n·m pairwise differences y[j] - x[i] of two sorted samples, without
// materialising them (Hodges–Lehmann needs the median and two more ranks of up to 1e12
// differences). Pure functions.

#include <cstdint>
#include <span>
#include <vector>

namespace tlbfleet::stats {

// A value interval (lo, hi] of differences: count(<= lo) < the first wanted rank and
// count(<= hi) >= the last one. Narrowing a bracket once and reusing it for several nearby
// ranks saves most of the passes.
struct DifferenceBracket {
  double lo = 0, hi = 0;
  uint64_t count_lo = 0, count_hi = 0;
  double above_lo = 0;  // the smallest difference > lo (so (lo, hi] is one value when >= hi)
};

class PairwiseDifferences {
 public:
  // Both ascending and non-empty; they must outlive this object.
  PairwiseDifferences(std::span<const double> x_sorted, std::span<const double> y_sorted);

  uint64_t size() const { return static_cast<uint64_t>(x_.size()) * y_.size(); }

  // The bracket of every difference.
  DifferenceBracket All() const;

  // Narrows `bracket` towards ranks [first, last] (1-based) until it holds few enough
  // differences to list, holds a single value, or a split point falls between first and last.
  void Narrow(uint64_t first, uint64_t last, DifferenceBracket* bracket) const;

  // Differences of ranks first .. last (1-based, ascending), searched within `bracket`.
  // Exact, except where more than n + m differences lie within rounding distance (8 ulps of
  // the largest |x| + |y|) of a wanted rank: then the result is one of them, so it is off by
  // at most that distance. (Decimal data makes such clusters: 6464.12 - 6400.27 and
  // 6470.00 - 6406.15 differ in the last bits.)
  std::vector<double> Ranks(uint64_t first, uint64_t last, DifferenceBracket bracket) const;

  // Number of passes over the data so far (each O(n + m)); for tests and benchmarks.
  uint64_t passes() const { return passes_; }

 private:
  struct Pass {
    uint64_t count;  // differences <= d
    double max_le;   // the largest difference <= d (-inf if none)
    double min_gt;   // the smallest difference > d (+inf if none)
  };
  Pass Count(double d) const;
  // Narrow(); true when it stopped because a pass counted `*split_count` differences with
  // first <= count < last, and then `*left` / `*right` bracket ranks up to / after it.
  bool NarrowOrSplit(uint64_t first, uint64_t last, DifferenceBracket* b, uint64_t* split_count,
                     DifferenceBracket* left, DifferenceBracket* right) const;

  std::span<const double> x_, y_;
  uint64_t list_limit_;
  double cluster_width_;  // differences closer than this are "equal up to rounding"
  mutable uint64_t passes_ = 0;
};

}  // namespace tlbfleet::stats
