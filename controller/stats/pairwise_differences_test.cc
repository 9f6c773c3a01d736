#include "controller/stats/pairwise_differences.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "controller/stats/bootstrap.h"
#include "gtest/gtest.h"

namespace tlbfleet::stats {
namespace {

std::vector<double> SortedNormal(Rng* rng, size_t n, double mean, double sd, bool round) {
  std::vector<double> v(n);
  for (double& x : v) {
    x = mean + sd * rng->Normal();
    if (round) x = std::round(x * 100) / 100;
  }
  std::sort(v.begin(), v.end());
  return v;
}

TEST(PairwiseDifferencesTest, RankRangesMatchBruteForce) {
  Rng rng(21);
  for (bool round : {false, true}) {
    const std::vector<double> x = SortedNormal(&rng, 300, 100, 1, round);
    const std::vector<double> y = SortedNormal(&rng, 200, 100.5, 1, round);
    std::vector<double> all;
    for (double b : y)
      for (double a : x) all.push_back(b - a);
    std::sort(all.begin(), all.end());
    const PairwiseDifferences d(x, y);
    ASSERT_EQ(d.size(), all.size());
    for (uint64_t first : {uint64_t{1}, uint64_t{777}, d.size() / 2, d.size() - 3}) {
      const std::vector<double> got =
          d.Ranks(first, first + 3 > d.size() ? d.size() : first + 3, d.All());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i], all[first - 1 + i]) << "round " << round << " rank " << first + i;
      }
    }
  }
}

// 4e10 differences of decimal data: every wanted rank sits in a cluster of ~1e5 equal (up
// to rounding) differences. The answer must be within rounding of the exact one and found
// in a bounded number of passes, not by bisecting down to the last bit.
TEST(PairwiseDifferencesTest, DecimalDataConvergesInFewPasses) {
  Rng rng(5);
  const std::vector<double> x = SortedNormal(&rng, 200000, 6400, 120, true);
  const std::vector<double> y = SortedNormal(&rng, 200000, 6460, 120, true);
  const PairwiseDifferences d(x, y);
  const uint64_t k = d.size() / 2;
  const double median = d.Ranks(k, k, d.All())[0];
  EXPECT_LE(d.passes(), 16u);  // 8 when written; 38 without the rounding clusters
  // The exact k-th difference is a multiple of 0.01 up to rounding.
  EXPECT_NEAR(median * 100, std::round(median * 100), 1e-6);
  // Rank k lies among the differences within rounding (1e-6) of the answer.
  auto count_at_most = [&](double m) {
    uint64_t count = 0;
    for (double b : y) {
      count += x.end() - std::lower_bound(x.begin(), x.end(), b - m);
    }
    return count;
  };
  EXPECT_GE(count_at_most(median + 1e-6), k);
  EXPECT_LT(count_at_most(median - 1e-6), k);
}

}  // namespace
}  // namespace tlbfleet::stats
