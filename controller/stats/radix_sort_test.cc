#include "controller/stats/radix_sort.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "controller/stats/bootstrap.h"
#include "gtest/gtest.h"

namespace tlbfleet::stats {
namespace {

TEST(SortWithoutNaNTest, SameOrderAsStdSort) {
  Rng rng(9);
  for (size_t n : {size_t{0}, size_t{5}, size_t{4095}, size_t{4096}, size_t{100000}}) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i) {
      switch (rng.Below(6)) {
        case 0:
          v[i] = rng.Normal();  // negatives and positives around 0
          break;
        case 1:
          v[i] = 6400 + std::round(rng.Normal() * 100) / 100;  // decimal, many ties
          break;
        case 2:
          v[i] = rng.Normal() * 1e-310;  // subnormals
          break;
        case 3:
          v[i] = rng.Below(2) ? std::numeric_limits<double>::infinity()
                              : -std::numeric_limits<double>::max();
          break;
        default:
          v[i] = static_cast<double>(rng.Below(10)) - 5;  // small integers, zeros
      }
    }
    std::vector<double> want = v;
    std::sort(want.begin(), want.end());
    SortWithoutNaN(&v);
    ASSERT_EQ(v.size(), want.size());
    for (size_t i = 0; i < n; ++i) {
      // -0.0 == +0.0 for std::sort's ordering; compare values, not bits.
      ASSERT_EQ(v[i], want[i]) << "n " << n << " index " << i;
    }
  }
}

TEST(SortWithoutNaNTest, NegativeZeroBeforePositiveZero) {
  std::vector<double> v(5000, 0.0);
  v[4999] = -0.0;
  SortWithoutNaN(&v);
  EXPECT_TRUE(std::signbit(v[0]));
  EXPECT_FALSE(std::signbit(v[1]));
}

}  // namespace
}  // namespace tlbfleet::stats
