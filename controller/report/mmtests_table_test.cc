#include "controller/report/mmtests_table.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Names(const std::vector<MmtestsStat>& rows) {
  std::vector<std::string> out;
  for (const MmtestsStat& r : rows) out.push_back(r.name);
  return out;
}

// Ten ebizzy totals. The expected values were computed by hand from Stat.pm's formulas
// (python3), and mmtests' own bin/compare-mmtests.pl (checkout 638401e, 2026-06-25) printed
// the same for these samples as ebizzy-4-N.log files: Min 980.00, Hmean 1079.00, HStddev
// 92.47, HCoeffVar 8.57, Max 1300.00, BHmean.95 1091.25.
const std::vector<double> kSamples = {1000, 1100, 1210, 980, 1050, 1300, 1020, 990, 1075, 1150};

TEST(MmtestsTableTest, MultiopsHigherIsBetterUsesTheHarmonicMean) {
  std::vector<MmtestsStat> rows = MmtestsSummary(MmtestsSummarise::kMultiops, true, kSamples);
  ASSERT_THAT(Names(rows), ElementsAre("Min", "Hmean", "HStddev", "HCoeffVar", "Max", "BHmean.95"));
  EXPECT_DOUBLE_EQ(rows[0].value, 980);
  EXPECT_NEAR(rows[1].value, 1078.9991356318, 1e-9);
  EXPECT_NEAR(rows[2].value, 92.4719861444, 1e-9);
  EXPECT_NEAR(rows[3].value, 8.5701631346, 1e-9);
  EXPECT_DOUBLE_EQ(rows[4].value, 1300);
  // The best 9 of 10 (int(10 * 95 / 100)): the highest, 980 left out.
  EXPECT_NEAR(rows[5].value, 1091.2477276726, 1e-9);
  for (const MmtestsStat& r : rows) EXPECT_TRUE(r.defined) << r.name;
}

// hackbench's times (seconds = the samples / 1000): mmtests printed Amean 1.0875, Stddev
// 0.1049, CoeffVar 9.6473, BAmean.95 1.0639 for them.
TEST(MmtestsTableTest, MultiopsLowerIsBetterUsesTheArithmeticMean) {
  std::vector<MmtestsStat> rows = MmtestsSummary(MmtestsSummarise::kMultiops, false, kSamples);
  ASSERT_THAT(Names(rows), ElementsAre("Min", "Amean", "Stddev", "CoeffVar", "Max", "BAmean.95"));
  EXPECT_DOUBLE_EQ(rows[1].value, 1087.5);
  EXPECT_NEAR(rows[2].value, 104.9139859335, 1e-9);
  EXPECT_NEAR(rows[3].value, 9.6472630743, 1e-9);
  // The best 9 are the lowest: 1300 left out.
  EXPECT_NEAR(rows[5].value, 1063.8888888889, 1e-9);
}

TEST(MmtestsTableTest, NormalisedopsAddsThePercentile) {
  std::vector<MmtestsStat> rows = MmtestsSummary(MmtestsSummarise::kNormalisedops, false, kSamples);
  ASSERT_THAT(Names(rows),
              ElementsAre("Min", "Amean", "BAmean.95", "Pctile.95", "Stddev", "CoeffVar", "Max"));
  EXPECT_DOUBLE_EQ(rows[3].value, 1210);  // the 9th lowest of 10
}

TEST(MmtestsTableTest, WhatMmtestsCannotComputeIsUndefined) {
  std::vector<MmtestsStat> one = MmtestsSummary(MmtestsSummarise::kMultiops, true, {5});
  EXPECT_DOUBLE_EQ(one[1].value, 5);
  EXPECT_FALSE(one[2].defined);  // HStddev of one sample
  EXPECT_TRUE(one[3].defined);   // HCoeffVar: mmtests prints 0
  EXPECT_DOUBLE_EQ(one[3].value, 0);
  EXPECT_DOUBLE_EQ(one[5].value, 5);  // at least one sample in the best 95%
  std::vector<MmtestsStat> zero = MmtestsSummary(MmtestsSummarise::kMultiops, true, {0, 2});
  EXPECT_FALSE(zero[1].defined);  // no harmonic mean of a zero
}

}  // namespace
}  // namespace tlbfleet::report
