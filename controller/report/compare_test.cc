#include "controller/report/compare.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "controller/report/render.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kTolerance = 1e-9;

v1::Sample MakeSample(const std::string& arm, const std::string& threads, double value,
                      const std::string& metric = "records_per_sec",
                      v1::Better better = v1::BETTER_HIGHER,
                      const std::string& unit = "records/s") {
  v1::Sample s;
  s.set_arm(arm);
  s.set_param_name(threads.empty() ? "" : "threads");
  s.set_param_value(threads);
  s.set_metric(metric);
  s.set_unit(unit);
  s.set_better(better);
  s.set_value(value);
  return s;
}

std::vector<std::string> StatNames(const v1::Report::Group& group) {
  std::vector<std::string> names;
  for (const v1::Report::Stat& stat : group.stats()) names.push_back(stat.name());
  return names;
}

const v1::Report::Stat& FindStat(const v1::Report::Group& group, const std::string& name) {
  for (const v1::Report::Stat& stat : group.stats()) {
    if (stat.name() == name) return stat;
  }
  ADD_FAILURE() << "no stat " << name;
  static const v1::Report::Stat kEmpty;
  return kEmpty;
}

TEST(BuildReportTest, HigherIsBetterRowsValuesAndPercentages) {
  std::vector<v1::Sample> samples = {
      MakeSample("mmap", "1", 100),
      MakeSample("malloc", "1", 150),
      MakeSample("mmap", "1", 300),
      MakeSample("malloc", "1", 450),
  };
  absl::StatusOr<v1::Report> report = BuildReport(samples, {"mmap", "malloc"});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->arms(), ElementsAre("mmap", "malloc"));
  ASSERT_EQ(report->groups_size(), 1);
  const v1::Report::Group& g = report->groups(0);
  EXPECT_EQ(g.metric(), "records_per_sec");
  EXPECT_EQ(g.unit(), "records/s");
  EXPECT_EQ(g.better(), v1::BETTER_HIGHER);
  EXPECT_EQ(g.param_name(), "threads");
  EXPECT_EQ(g.param_value(), "1");
  EXPECT_THAT(g.n(), ElementsAre(2u, 2u));
  EXPECT_THAT(StatNames(g),
              ElementsAre("Min", "Hmean", "Stddev", "CoeffVar", "Max", "BAmean-99", "BAmean-95"));

  const v1::Report::Stat& min = FindStat(g, "Min");
  EXPECT_THAT(min.values(), ElementsAre(100, 150));
  EXPECT_THAT(min.defined(), ElementsAre(true, true));
  EXPECT_NEAR(min.pct_diff(0), 0, kTolerance);
  EXPECT_NEAR(min.pct_diff(1), 50, kTolerance);  // 150/100*100-100: higher, so better

  const v1::Report::Stat& hmean = FindStat(g, "Hmean");
  EXPECT_NEAR(hmean.values(0), 150, kTolerance);  // 2 / (1/100 + 1/300)
  EXPECT_NEAR(hmean.values(1), 225, kTolerance);
  EXPECT_NEAR(hmean.pct_diff(1), 50, kTolerance);

  // Spread: lower is better, so 1.5 times the stddev is 50% worse.
  const v1::Report::Stat& stddev = FindStat(g, "Stddev");
  EXPECT_NEAR(stddev.values(0), 100 * std::sqrt(2.0), 1e-9);
  EXPECT_NEAR(stddev.values(1), 150 * std::sqrt(2.0), 1e-9);
  EXPECT_NEAR(stddev.pct_diff(1), -50, 1e-9);

  const v1::Report::Stat& coeffvar = FindStat(g, "CoeffVar");
  EXPECT_NEAR(coeffvar.values(0), 50 * std::sqrt(2.0), 1e-9);
  EXPECT_NEAR(coeffvar.pct_diff(1), 0, 1e-9);

  const v1::Report::Stat& max = FindStat(g, "Max");
  EXPECT_THAT(max.values(), ElementsAre(300, 450));
  EXPECT_NEAR(max.pct_diff(1), 50, kTolerance);

  // mmtests' BAmean of two samples is the best one: the higher here.
  for (const char* row : {"BAmean-99", "BAmean-95"}) {
    const v1::Report::Stat& bamean = FindStat(g, row);
    EXPECT_THAT(bamean.values(), ElementsAre(300, 450)) << row;
    EXPECT_NEAR(bamean.pct_diff(1), 50, kTolerance) << row;
  }
}

v1::Sample InBoot(v1::Sample sample, const std::string& boot) {
  sample.set_boot_id(boot);
  return sample;
}

TEST(BuildReportTest, VarianceSplitPerArmBetweenAndWithinBoots) {
  // Arm "two-boots": boots of {10, 12} and {20, 22}. Within: each boot's variance is 2;
  // the boot means 11 and 21 vary by 50, of which 2 / 2 is within-boot noise: between 49.
  // Arm "one-boot": within 2, and no between-boot estimate from one boot.
  const std::vector<v1::Sample> samples = {
      InBoot(MakeSample("two-boots", "", 10), "b1"), InBoot(MakeSample("two-boots", "", 12), "b1"),
      InBoot(MakeSample("two-boots", "", 20), "b2"), InBoot(MakeSample("two-boots", "", 22), "b2"),
      InBoot(MakeSample("one-boot", "", 30), "b3"),  InBoot(MakeSample("one-boot", "", 32), "b3"),
  };
  absl::StatusOr<v1::Report> report = BuildReport(samples, {"two-boots", "one-boot"});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->groups_size(), 1);
  const v1::Report::Group& g = report->groups(0);
  ASSERT_EQ(g.variance_size(), 2);
  const v1::Report::Variance& two = g.variance(0);
  EXPECT_EQ(two.boots(), 2u);
  EXPECT_NEAR(two.iterations(), 2, kTolerance);
  ASSERT_TRUE(two.has_within() && two.has_between() && two.has_between_share());
  EXPECT_NEAR(two.within(), 2, kTolerance);
  EXPECT_NEAR(two.between(), 49, kTolerance);
  EXPECT_NEAR(two.between_share(), 49.0 / 51, kTolerance);
  const v1::Report::Variance& one = g.variance(1);
  EXPECT_EQ(one.boots(), 1u);
  ASSERT_TRUE(one.has_within());
  EXPECT_NEAR(one.within(), 2, kTolerance);
  EXPECT_FALSE(one.has_between());
  EXPECT_FALSE(one.has_between_share());
  EXPECT_FALSE(one.why_undefined().empty());
}

TEST(BuildReportTest, LowerIsBetterUsesAmeanAndFlipsTheSign) {
  std::vector<v1::Sample> samples;
  for (double v : {10.0, 30.0})
    samples.push_back(MakeSample("base", "", v, "latency", v1::BETTER_LOWER, "us"));
  for (double v : {8.0, 24.0})
    samples.push_back(MakeSample("new", "", v, "latency", v1::BETTER_LOWER, "us"));
  for (double v : {12.0, 36.0})
    samples.push_back(MakeSample("worse", "", v, "latency", v1::BETTER_LOWER, "us"));
  absl::StatusOr<v1::Report> report = BuildReport(samples, {"base", "new", "worse"});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->groups_size(), 1);
  const v1::Report::Group& g = report->groups(0);
  EXPECT_EQ(g.better(), v1::BETTER_LOWER);
  EXPECT_EQ(g.param_name(), "");
  EXPECT_THAT(StatNames(g),
              ElementsAre("Min", "Amean", "Stddev", "CoeffVar", "Max", "BAmean-99", "BAmean-95"));
  // 100 - new/base*100: 20% lower latency is +20%, 20% higher is -20%.
  for (const char* row : {"Min", "Amean", "Stddev", "Max"}) {
    const v1::Report::Stat& stat = FindStat(g, row);
    EXPECT_NEAR(stat.pct_diff(0), 0, kTolerance) << row;
    EXPECT_NEAR(stat.pct_diff(1), 20, 1e-9) << row;
    EXPECT_NEAR(stat.pct_diff(2), -20, 1e-9) << row;
  }
  EXPECT_NEAR(FindStat(g, "Amean").values(1), 16, kTolerance);
}

TEST(BuildReportTest, UnspecifiedDirectionReadsAsHigherIsBetter) {
  std::vector<v1::Sample> samples = {MakeSample("a", "", 1, "ops", v1::BETTER_UNSPECIFIED),
                                     MakeSample("b", "", 2, "ops", v1::BETTER_UNSPECIFIED)};
  absl::StatusOr<v1::Report> report = BuildReport(samples, {"a", "b"});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->groups(0).better(), v1::BETTER_HIGHER);
  EXPECT_NEAR(FindStat(report->groups(0), "Hmean").pct_diff(1), 100, kTolerance);
}

TEST(BuildReportTest, GroupsByMetricInFirstAppearanceThenNumericSweepValue) {
  std::vector<v1::Sample> samples = {
      MakeSample("a", "10", 1, "z_metric"), MakeSample("a", "2", 1, "z_metric"),
      MakeSample("a", "1", 1, "a_metric"),  MakeSample("a", "1", 1, "z_metric"),
      MakeSample("a", "10", 1, "a_metric"), MakeSample("a", "9", 1, "a_metric"),
  };
  absl::StatusOr<v1::Report> report = BuildReport(samples, {"a"});
  ASSERT_TRUE(report.ok()) << report.status();
  std::vector<std::string> order;
  for (const v1::Report::Group& g : report->groups()) {
    order.push_back(g.metric() + "@" + g.param_value());
  }
  EXPECT_THAT(order, ElementsAre("z_metric@1", "z_metric@2", "z_metric@10", "a_metric@1",
                                 "a_metric@9", "a_metric@10"));
}

TEST(BuildReportTest, NonNumericSweepValuesSortAsStrings) {
  std::vector<v1::Sample> samples = {MakeSample("a", "never", 1), MakeSample("a", "always", 1),
                                     MakeSample("a", "10", 1)};
  absl::StatusOr<v1::Report> report = BuildReport(samples, {"a"});
  ASSERT_TRUE(report.ok()) << report.status();
  std::vector<std::string> values;
  for (const v1::Report::Group& g : report->groups()) values.push_back(g.param_value());
  EXPECT_THAT(values, ElementsAre("10", "always", "never"));
}

TEST(BuildReportTest, IgnoresPerThreadSeriesAndArmsNotCompared) {
  std::vector<v1::Sample> samples = {MakeSample("a", "1", 10), MakeSample("b", "1", 20),
                                     MakeSample("other", "1", 1000)};
  v1::Sample per_thread = MakeSample("a", "1", 5);
  per_thread.set_series("thread0");
  samples.push_back(per_thread);
  absl::StatusOr<v1::Report> report = BuildReport(samples, {"b", "a"});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->arms(), ElementsAre("b", "a"));
  ASSERT_EQ(report->groups_size(), 1);
  EXPECT_THAT(report->groups(0).n(), ElementsAre(1u, 1u));
  const v1::Report::Stat& min = FindStat(report->groups(0), "Min");
  EXPECT_THAT(min.values(), ElementsAre(20, 10));  // baseline is b, the first in arm_order
  EXPECT_NEAR(min.pct_diff(1), -50, kTolerance);
  // One sample per arm: no spread.
  EXPECT_THAT(FindStat(report->groups(0), "Stddev").defined(), ElementsAre(false, false));
}

TEST(BuildReportTest, ArmWithoutSamplesIsUndefined) {
  std::vector<v1::Sample> samples = {MakeSample("a", "1", 10), MakeSample("a", "1", 12)};
  absl::StatusOr<v1::Report> report = BuildReport(samples, {"a", "missing"});
  ASSERT_TRUE(report.ok()) << report.status();
  const v1::Report::Group& g = report->groups(0);
  EXPECT_THAT(g.n(), ElementsAre(2u, 0u));
  for (const v1::Report::Stat& stat : g.stats()) {
    EXPECT_THAT(stat.defined(), ElementsAre(true, false)) << stat.name();
    EXPECT_EQ(stat.values(1), 0) << stat.name();
    EXPECT_EQ(stat.pct_diff(1), 0) << stat.name();
    EXPECT_FALSE(std::isnan(stat.values(1)));
  }
}

TEST(BuildReportTest, RefusesEmptyOrRepeatedArmOrder) {
  absl::StatusOr<v1::Report> empty = BuildReport({}, {});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<v1::Report> twice = BuildReport({}, {"a", "b", "a"});
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(twice.status().message()), HasSubstr("\"a\""));
}

// A stop: verdict run's judged rows carry their sequential verdicts; the fixed-sample test of
// every sample is only a note (after adaptive looks it does not keep its error rate).
TEST(CompareRunSamplesTest, AStopVerdictRunReportsItsSequentialVerdicts) {
  std::vector<v1::Sample> samples;
  for (int i = 0; i < 10; ++i) {
    const double wiggle = 1 + 0.001 * (i % 3);
    samples.push_back(MakeSample("a", "1", 1000 * wiggle));
    samples.push_back(MakeSample("b", "1", 1100 * wiggle));  // 10 % better
    samples.push_back(MakeSample("a", "2", 1000 * wiggle));
    samples.push_back(MakeSample("b", "2", 1100 * wiggle));
  }
  CompareOptions options;
  options.arm_order = {"a", "b"};
  google::protobuf::RepeatedPtrField<v1::AdaptiveRow> rows;
  v1::AdaptiveRow* one = rows.Add();
  one->set_metric("records_per_sec");
  one->set_param_name("threads");
  one->set_param_value("1");
  one->set_arm("b");
  one->set_decided(true);
  one->set_verdict("better");
  one->set_decided_round(1);
  one->set_arm_samples(6);
  one->set_arm_boots(1);
  one->set_base_samples(6);
  one->set_base_boots(1);
  v1::AdaptiveRow* two = rows.Add();  // never decided by the maximum
  *two = *one;
  two->set_param_value("2");
  two->set_decided(false);
  two->set_verdict("");

  RunReportOptions fixed;
  absl::StatusOr<v1::CompareResponse> plain = CompareRunSamples(samples, options, "t", fixed);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_EQ(plain->report().groups_size(), 2);
  EXPECT_EQ(plain->report().groups(1).verdicts(0).verdict(), "better");

  RunReportOptions sequential;
  sequential.adaptive_rows = &rows;
  absl::StatusOr<v1::CompareResponse> r = CompareRunSamples(samples, options, "t", sequential);
  ASSERT_TRUE(r.ok()) << r.status();
  const v1::Report::Verdict& at_one = r->report().groups(0).verdicts(0);
  EXPECT_EQ(at_one.verdict(), "better");
  ASSERT_GE(at_one.notes_size(), 1);
  EXPECT_THAT(at_one.notes(0), HasSubstr("sequential verdict (stop: verdict): better at look 2, "
                                         "on 6 samples in 1 boot of the arm"));
  const v1::Report::Verdict& at_two = r->report().groups(1).verdicts(0);
  EXPECT_EQ(at_two.verdict(), "unknown");
  ASSERT_GE(at_two.notes_size(), 1);
  EXPECT_THAT(at_two.notes(0), HasSubstr("none by the run's maximum; the fixed-sample test of "
                                         "every sample says better"));
  EXPECT_THAT(r->text(), HasSubstr("sequential verdict"));
}

TEST(RenderTextTest, Golden) {
  std::vector<v1::Sample> samples = {
      MakeSample("mmap", "1", 6395.44),   MakeSample("mmap", "1", 6405.44),
      MakeSample("malloc", "1", 6789.09), MakeSample("malloc", "1", 6799.09),
      MakeSample("mmap", "2", 12000),     MakeSample("mmap", "2", 12400),
      MakeSample("malloc", "2", 11000),   MakeSample("malloc", "2", 11100),
  };
  absl::StatusOr<v1::Report> report = BuildReport(samples, {"mmap", "malloc"});
  ASSERT_TRUE(report.ok()) << report.status();
  report->set_title("ebizzy");
  // The table alone: without records a report has no verdict section and no `*` marks.
  for (v1::Report::Group& g : *report->mutable_groups()) g.clear_records();
  const std::string kExpected =
      "ebizzy\n"
      "\n"
      "records_per_sec (records/s, higher is better)\n"
      "                                        mmap                  malloc\n"
      "Min        threads=1      6395.44 (   0.00%)      6789.09 (   6.16%)\n"
      "Hmean      threads=1      6400.44 (   0.00%)      6794.09 (   6.15%)\n"
      "Stddev     threads=1         7.07 (   0.00%)         7.07 (   0.00%)\n"
      "CoeffVar   threads=1         0.11 (   0.00%)         0.10 (   5.79%)\n"
      "Max        threads=1      6405.44 (   0.00%)      6799.09 (   6.15%)\n"
      "BAmean-99  threads=1      6405.44 (   0.00%)      6799.09 (   6.15%)\n"
      "BAmean-95  threads=1      6405.44 (   0.00%)      6799.09 (   6.15%)\n"
      "Min        threads=2     12000.00 (   0.00%)     11000.00 (  -8.33%)\n"
      "Hmean      threads=2     12196.72 (   0.00%)     11049.77 (  -9.40%)\n"
      "Stddev     threads=2       282.84 (   0.00%)        70.71 (  75.00%)\n"
      "CoeffVar   threads=2         2.32 (   0.00%)         0.64 (  72.40%)\n"
      "Max        threads=2     12400.00 (   0.00%)     11100.00 ( -10.48%)\n"
      "BAmean-99  threads=2     12400.00 (   0.00%)     11100.00 ( -10.48%)\n"
      "BAmean-95  threads=2     12400.00 (   0.00%)     11100.00 ( -10.48%)\n";
  EXPECT_EQ(RenderReportText(*report), kExpected) << RenderReportText(*report);
}

TEST(RenderTextTest, LongArmNamesUndefinedValuesAndSeveralMetrics) {
  std::vector<v1::Sample> samples = {
      MakeSample("base", "", 0, "faults", v1::BETTER_LOWER, ""),
      MakeSample("a-much-longer-arm-name-than-a-cell", "", 3, "faults", v1::BETTER_LOWER, ""),
      MakeSample("base", "", 10, "ops", v1::BETTER_HIGHER, "ops/s"),
      MakeSample("base", "", 20, "ops", v1::BETTER_HIGHER, "ops/s"),
  };
  absl::StatusOr<v1::Report> report =
      BuildReport(samples, {"base", "a-much-longer-arm-name-than-a-cell"});
  ASSERT_TRUE(report.ok()) << report.status();
  for (v1::Report::Group& g : *report->mutable_groups()) g.clear_records();
  // A zero baseline has no percentage; one sample has no spread; an arm without samples
  // has no values. All print as NaN, and the long name widens its column.
  const std::string kExpected =
      "faults (lower is better)\n"
      "                               base a-much-longer-arm-name-than-a-cell\n"
      "Min                 0.00 (   0.00%)                    3.00 (    NaN%)\n"
      "Amean               0.00 (   0.00%)                    3.00 (    NaN%)\n"
      "Stddev               NaN (    NaN%)                     NaN (    NaN%)\n"
      "CoeffVar             NaN (    NaN%)                     NaN (    NaN%)\n"
      "Max                 0.00 (   0.00%)                    3.00 (    NaN%)\n"
      "BAmean-99           0.00 (   0.00%)                    3.00 (    NaN%)\n"
      "BAmean-95           0.00 (   0.00%)                    3.00 (    NaN%)\n"
      "\n"
      "ops (ops/s, higher is better)\n"
      "                               base a-much-longer-arm-name-than-a-cell\n"
      "Min                10.00 (   0.00%)                     NaN (    NaN%)\n"
      "Hmean              13.33 (   0.00%)                     NaN (    NaN%)\n"
      "Stddev              7.07 (   0.00%)                     NaN (    NaN%)\n"
      "CoeffVar           47.14 (   0.00%)                     NaN (    NaN%)\n"
      "Max                20.00 (   0.00%)                     NaN (    NaN%)\n"
      "BAmean-99          20.00 (   0.00%)                     NaN (    NaN%)\n"
      "BAmean-95          20.00 (   0.00%)                     NaN (    NaN%)\n";
  EXPECT_EQ(RenderReportText(*report), kExpected) << RenderReportText(*report);
}

}  // namespace
}  // namespace tlbfleet::report
