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

// The table mmtests' compare printed for these samples as arms A and B (B's ten:
// 900 1200 1180 1010 1040 1250 1005 995 1100 1120), number for number.
TEST(MmtestsTableTest, RendersTheRowsAndDifferencesMmtestsPrints) {
  const std::vector<double> b = {900, 1200, 1180, 1010, 1040, 1250, 1005, 995, 1100, 1120};
  v1::Report report;
  report.set_title("ebizzy");
  report.add_arms("A");
  report.add_arms("B");
  v1::Report::Group* g = report.add_groups();
  g->set_metric("records_per_sec");
  g->set_param_name("threads");
  g->set_param_value("4");
  g->set_better(v1::BETTER_HIGHER);
  std::vector<v1::Sample> samples;
  auto add = [&](const std::string& arm, double v, const std::string& series) {
    v1::Sample s;
    s.set_arm(arm);
    s.set_metric("records_per_sec");
    s.set_param_value("4");
    s.set_series(series);
    s.set_value(v);
    samples.push_back(s);
  };
  for (double v : kSamples) add("A", v, "");
  for (double v : b) add("B", v, "");
  add("B", 1, "thread0");  // per-thread series are not the total's samples
  const std::string text = RenderMmtestsTable(report, samples, MmtestsSummarise::kMultiops, 2);
  EXPECT_THAT(text,
              ::testing::HasSubstr(
                  "Min       records_per_sec-4       980.00 (   0.00%)       900.00 (  -8.16%)\n"
                  "Hmean     records_per_sec-4      1079.00 (   0.00%)      1070.03 (  -0.83%)\n"
                  "HStddev   records_per_sec-4        92.47 (   0.00%)       103.64 ( -12.07%)\n"
                  "HCoeffVar records_per_sec-4         8.57 (   0.00%)         9.69 ( -13.01%)\n"
                  "Max       records_per_sec-4      1300.00 (   0.00%)      1250.00 (  -3.85%)\n"
                  "BHmean.95 records_per_sec-4      1091.25 (   0.00%)      1092.97 (   0.16%)\n"))
      << text;
}

}  // namespace
}  // namespace tlbfleet::report
