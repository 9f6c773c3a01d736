#include "controller/stats/multiplicity.h"

#include <algorithm>
#include <vector>

#include "controller/stats/bootstrap.h"
#include "gtest/gtest.h"

namespace tlbfleet::stats {
namespace {

TEST(BenjaminiHochbergTest, HandWorkedAndUndefinedStaysOut) {
  // m = 4 defined: sorted 0.01, 0.02, 0.03, 0.5 -> 0.04, 0.04, 0.04, 0.5.
  const std::vector<std::optional<double>> p = {0.03, std::nullopt, 0.01, 0.5, 0.02};
  const std::vector<std::optional<double>> q = BenjaminiHochberg(p);
  ASSERT_EQ(q.size(), 5u);
  EXPECT_NEAR(*q[0], 0.04, 1e-15);
  EXPECT_FALSE(q[1].has_value());
  EXPECT_NEAR(*q[2], 0.04, 1e-15);
  EXPECT_NEAR(*q[3], 0.5, 1e-15);
  EXPECT_NEAR(*q[4], 0.04, 1e-15);
  EXPECT_TRUE(BenjaminiHochberg({}).empty());
  // One row: q = p.
  EXPECT_EQ(*BenjaminiHochberg({0.03})[0], 0.03);
}

// At the adjusted level a row's interval excludes 1 (p < 1 - level) exactly when q < alpha:
// the printed interval and the adjusted verdict agree.
TEST(BenjaminiHochbergTest, FcrAdjustedLevelAgreesWithQ) {
  Rng rng(1);
  int discoveries_seen = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const size_t m = 1 + trial % 30;
    std::vector<std::optional<double>> p;
    for (size_t i = 0; i < m; ++i) {
      // A mix of nulls (uniform) and real effects (small p).
      const double u = rng.Uniform();
      p.push_back(i % 3 == 0 ? u * 0.01 : u);
    }
    const std::vector<std::optional<double>> q = BenjaminiHochberg(p);
    const size_t r = static_cast<size_t>(
        std::count_if(q.begin(), q.end(), [](const auto& v) { return *v < 0.05; }));
    discoveries_seen += r > 0;
    const double level = FcrAdjustedLevel(0.95, r, m);
    for (size_t i = 0; i < m; ++i) {
      EXPECT_EQ(*p[i] < 1 - level, *q[i] < 0.05) << trial << " " << i << " p " << *p[i];
      EXPECT_GE(*q[i], *p[i]);
    }
  }
  EXPECT_GT(discoveries_seen, 100);
  EXPECT_EQ(FcrAdjustedLevel(0.95, 0, 0), 0.95);
  EXPECT_NEAR(FcrAdjustedLevel(0.95, 0, 10), 0.995, 1e-15);
  EXPECT_NEAR(FcrAdjustedLevel(0.95, 4, 10), 0.98, 1e-15);
}

}  // namespace
}  // namespace tlbfleet::stats
