#include "controller/cli/changepoints_command.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "controller/cli/app.h"
#include "controller/cli/exit_codes.h"
#include "controller/cli/fake_fleet_for_test.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace tlbfleet::cli {
namespace {

using ::testing::HasSubstr;

std::string ParseError(std::string_view csv) {
  absl::StatusOr<std::vector<CsvSeries>> s = ParseChangePointCsv(csv);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << csv;
  return std::string(s.status().message());
}

TEST(ParseChangePointCsvTest, HeaderNamesAreCaseInsensitive) {
  absl::StatusOr<std::vector<CsvSeries>> series =
      ParseChangePointCsv("Series,ORDER,Value\na,1,10\na,2,11\n");
  ASSERT_TRUE(series.ok()) << series.status();
  ASSERT_EQ(series->size(), 1u);
  EXPECT_EQ((*series)[0].points.size(), 2u);
}

TEST(ParseChangePointCsvTest, BadLinesNameTheLineAndColumn) {
  EXPECT_EQ(ParseError("series,order,value,color\n"),
            "line 1: unknown column 'color' (the header names series, order, value, and "
            "optionally low and high)");
  EXPECT_THAT(ParseError("series,value\na,1\n"), HasSubstr("line 1: missing column 'order'"));
  EXPECT_EQ(ParseError("series,order,value,low\n"), "line 1: column 'low' without 'high'");
  EXPECT_EQ(ParseError("series,order,value,value\n"), "line 1: column 'value' appears twice");
  EXPECT_EQ(ParseError("series,order,value\na,1,10\na,2,abc\n"),
            "line 3: column 'value': 'abc' is not a finite number");
  EXPECT_EQ(ParseError("series,order,value\na,1,10\na,x,11\n"),
            "line 3: column 'order': 'x' is not a finite number");
  EXPECT_EQ(ParseError("series,order,value\na,1,nan\n"),
            "line 2: column 'value': 'nan' is not a finite number");
  EXPECT_EQ(ParseError("series,order,value\na,1,\n"), "line 2: column 'value' is empty");
  EXPECT_EQ(ParseError("series,order,value\n,1,3\n"), "line 2: column 'series' is empty");
  EXPECT_EQ(ParseError("series,order,value\na,1,10,4\n"), "line 2: 4 fields, the header has 3");
  EXPECT_EQ(ParseError("series,order,value\n\"a,1,10\n"), "line 2: a stray double quote");
  EXPECT_EQ(ParseError("series,order,value,low,high\na,1,10,9,\n"),
            "line 2: column 'low' without 'high'");
  EXPECT_EQ(ParseError("series,order,value,low,high\na,1,10,11,12\n"),
            "line 2: columns 'low', 'high': [11, 12] does not hold the value 10");
  EXPECT_EQ(ParseError("series,order,value,low,high\na,1,10,9,11\nb,1,5,,\na,2,10,,\n"),
            "line 4: series 'a': this point has no interval but line 2's has one; give every "
            "point of a series an interval, or none");
  EXPECT_EQ(ParseError("series,order,value\na,1,10\nb,1,3\n# note\n\na,1,11\n"),
            "line 6: series 'a' has order 1 twice (lines 2 and 6)");
  EXPECT_EQ(ParseError(""), "no header line (series,order,value)");
}

TEST(ParseChangePointCsvTest, SeriesInFirstAppearanceOrderPointsByOrder) {
  absl::StatusOr<std::vector<CsvSeries>> s = ParseChangePointCsv(
      "Order,Series,Value\n3,b,30\n2,\"a, quoted\",20\n1,b,10\n1,\"a, quoted\",5\n10,b,1\n");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].name, "b");
  EXPECT_EQ((*s)[0].orders, (std::vector<std::string>{"1", "3", "10"}));  // numeric order
  EXPECT_EQ((*s)[0].points[2].value, 1);
  EXPECT_EQ((*s)[1].name, "a, quoted");
  EXPECT_FALSE((*s)[1].points[0].low.has_value());
}

class ChangepointsCliTest : public ::testing::Test {
 protected:
  int Run(std::vector<std::string> args) {
    args.insert(args.begin(), "tlbfleet");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    out_.str("");
    err_.str("");
    return RunCli(static_cast<int>(argv.size()), argv.data(), out_, err_, env_, clock_);
  }

  std::string WriteCsv(const std::string& text) {
    const std::string path =
        absl::StrCat(::testing::TempDir(), "/changepoints_", getpid(), "_", ++files_, ".csv");
    std::ofstream(path) << text;
    return path;
  }

  // Series "step": 20 points near 100 then 12 near 90, rows shuffled; series "flat": 30 near
  // 50 with intervals.
  std::string StepCsv() {
    std::string csv = "series,order,value,low,high\n";
    const double wiggle[] = {0.4, -0.3, 0.1, -0.5, 0.2, 0.3, -0.1, -0.4, 0.5, 0.0};
    for (int i = 31; i >= 0; --i) {
      const double v = (i < 20 ? 100 : 90) + wiggle[i % 10];
      absl::StrAppend(&csv, "step,", 1000 + i, ",", v, ",", v - 1, ",", v + 1, "\n");
    }
    for (int i = 0; i < 30; ++i) {
      const double v = 50 + wiggle[(i * 3) % 10];
      absl::StrAppend(&csv, "flat,", i, ",", v, ",", v - 2, ",", v + 2, "\n");
    }
    return csv;
  }

  CliEnvironment env_;
  FakeClock clock_;
  std::ostringstream out_, err_;
  int files_ = 0;
};

TEST_F(ChangepointsCliTest, TextNamesTheFirstPointAfterTheChangeWithMagnitudeAndP) {
  const std::string csv = WriteCsv(StepCsv());
  ASSERT_EQ(Run({"changepoints", "--from-csv", csv}), kExitOk) << err_.str();
  const std::string text = out_.str();
  EXPECT_THAT(text, HasSubstr("E-Divisive means, permutation test (399 permutations"));
  EXPECT_THAT(text, HasSubstr(", AR(1) noise, drifts told from steps\n"));
  EXPECT_THAT(text, HasSubstr("series step: 32 points with intervals, 1 change point (phi "));
  EXPECT_THAT(text, HasSubstr(")\n  at order 1020 (after 1019): "));
  // The means of the two segments (the wiggle averages 0.02 and 0.025), the relative change
  // with its interval, the absolute difference with its interval.
  EXPECT_THAT(text, HasSubstr("100.02 -> 90.025, -9.99% [-10.36%, -9.63%], difference -9.995"));
  EXPECT_THAT(text, HasSubstr("p = 0.0025"));  // 1 / 400: no shuffle came close
  EXPECT_THAT(text, HasSubstr("(20 | 12 points)"));
  EXPECT_THAT(text, HasSubstr("series flat: 30 points with intervals, no change point"));
  EXPECT_TRUE(err_.str().empty());

  ASSERT_EQ(Run({"changepoints", "--from-csv", csv, "--explain", "--test", "student-t"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("student-t test, p <= 0.0001"));
  EXPECT_THAT(out_.str(), HasSubstr("candidate at order 1020: accepted"));
  EXPECT_THAT(out_.str(), HasSubstr(": not significant"));
}

TEST_F(ChangepointsCliTest, JsonIsTheReportMessage) {
  const std::string csv = WriteCsv(StepCsv());
  ASSERT_EQ(Run({"changepoints", "--from-csv", csv, "--format", "json"}), kExitOk);
  v1::ChangePointsReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_.str(), &report).ok()) << out_.str();
  ASSERT_EQ(report.series_size(), 2);
  ASSERT_EQ(report.series(0).changes_size(), 1);
  const v1::DetectedChange& c = report.series(0).changes(0);
  EXPECT_EQ(c.order(), "1020");
  EXPECT_EQ(c.order_before(), "1019");
  EXPECT_EQ(c.index(), 20u);
  EXPECT_NEAR(c.relative().estimate(), -0.1, 0.01);
  EXPECT_LT(c.relative().high(), -0.08);
  EXPECT_LT(c.relative().low(), c.relative().estimate());
  EXPECT_LE(c.p(), 0.005);
  EXPECT_EQ(report.series(1).changes_size(), 0);
  EXPECT_EQ(report.test(), "permutation");
}

TEST_F(ChangepointsCliTest, BadInputExitsTwoNamingTheProblem) {
  EXPECT_EQ(Run({"changepoints", "--from-csv", "/nonexistent/x.csv"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("cannot read CSV /nonexistent/x.csv"));
  const std::string bad = WriteCsv("series,order,value\na,1,10\na,2,ten\n");
  EXPECT_EQ(Run({"changepoints", "--from-csv", bad}), kExitUsage);
  EXPECT_EQ(err_.str(), absl::StrCat("tlbfleet: ", bad,
                                     ": line 3: column 'value': 'ten' is not a finite number\n"));
  EXPECT_TRUE(out_.str().empty());
  EXPECT_EQ(Run({"changepoints"}), kExitUsage);  // --from-csv is required
  EXPECT_EQ(Run({"changepoints", "--from-csv", bad, "--format", "xml"}), kExitUsage);
  EXPECT_EQ(Run({"changepoints", "--from-csv", bad, "--min-segment", "1"}), kExitUsage);
}

// Options that cannot work are refused before any detection, naming the option.
TEST_F(ChangepointsCliTest, OptionsThatCannotWorkExitTwoNamingTheOption) {
  const std::string csv = WriteCsv(StepCsv());  // 32 and 30 points
  EXPECT_EQ(Run({"changepoints", "--from-csv", csv, "--min-segment", "15"}), kExitOk) << err_.str();
  EXPECT_EQ(Run({"changepoints", "--from-csv", csv, "--min-segment", "16"}), kExitUsage);
  EXPECT_EQ(err_.str(),
            "tlbfleet: --min-segment 16 is more than half of series 'flat' (30 points): no "
            "split could be made\n");
  EXPECT_TRUE(out_.str().empty());
  EXPECT_EQ(Run({"changepoints", "--from-csv", csv, "--block-length", "0"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--block-length"));
  EXPECT_EQ(Run({"changepoints", "--from-csv", csv, "--drift-threshold", "-0.01"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--drift-threshold"));
  EXPECT_EQ(Run({"changepoints", "--from-csv", csv, "--serial", "block"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--serial block needs --block-length"));
  EXPECT_EQ(Run({"changepoints", "--from-csv", csv, "--serial", "ar1", "--block-length", "4"}),
            kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--block-length needs --serial block"));
  EXPECT_EQ(Run({"changepoints", "--from-csv", csv, "--serial", "markov"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--serial"));

  ASSERT_EQ(Run({"changepoints", "--from-csv", csv, "--block-length", "2"}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr(", blocks of 2 points shuffled"));
  EXPECT_THAT(out_.str(), HasSubstr("at order 1020 (after 1019)"));
}

// A slow drift: 60 nights rising 0.1 a night from 100, with a small deterministic wiggle.
std::string DriftCsv() {
  std::string csv = "series,order,value\n";
  const double wiggle[] = {0.4, -0.3, 0.1, -0.5, 0.2, 0.3, -0.1, -0.4, 0.5, 0.0, -0.2};
  for (int i = 0; i < 60; ++i) {
    absl::StrAppend(&csv, "drift,", i, ",", 100 + 0.1 * i + wiggle[i % 11], "\n");
  }
  return csv;
}

TEST_F(ChangepointsCliTest, ADriftIsReportedAsADriftWithItsSlope) {
  const std::string csv = WriteCsv(DriftCsv());
  ASSERT_EQ(Run({"changepoints", "--from-csv", csv, "--format", "json"}), kExitOk) << err_.str();
  v1::ChangePointsReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_.str(), &report).ok()) << out_.str();
  ASSERT_EQ(report.series_size(), 1);
  const v1::SeriesChanges& s = report.series(0);
  EXPECT_EQ(s.changes_size(), 0);
  ASSERT_EQ(s.trends_size(), 1);
  EXPECT_EQ(s.trends(0).order_first(), "0");
  EXPECT_EQ(s.trends(0).order_last(), "59");
  EXPECT_LT(s.trends(0).slope().low(), 0.1);
  EXPECT_GT(s.trends(0).slope().high(), 0.1);
  EXPECT_GT(s.trends(0).slope().low(), 0);
  ASSERT_TRUE(s.trends(0).has_relative_change());
  EXPECT_NEAR(s.trends(0).relative_change(), 6.0 / 103, 0.01);
  EXPECT_EQ(report.serial(), "ar1");
  EXPECT_TRUE(report.drift());

  ASSERT_EQ(Run({"changepoints", "--from-csv", csv}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("no change point, 1 drift"));
  EXPECT_THAT(out_.str(), HasSubstr("  drift from order 0 to 59 (60 points): 0.0996"));

  // Without drift detection the same series is cut into steps.
  ASSERT_EQ(Run({"changepoints", "--from-csv", csv, "--no-drift", "--format", "json"}), kExitOk);
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_.str(), &report).ok());
  EXPECT_GT(report.series(0).changes_size(), 0);
  EXPECT_EQ(report.series(0).trends_size(), 0);

  // A threshold above the drift's 5.8 % hides it.
  ASSERT_EQ(
      Run({"changepoints", "--from-csv", csv, "--drift-threshold", "0.1", "--format", "json"}),
      kExitOk);
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_.str(), &report).ok());
  EXPECT_EQ(report.series(0).trends_size(), 0);
  EXPECT_EQ(report.series(0).changes_size(), 0);
}

// The lab's 60 nights with nothing changed (docs/nightly.md, "The lab's own nights"): no change
// point and no drift in any series, and little correlation.
TEST_F(ChangepointsCliTest, TheLabsQuietNightsRaiseNothing) {
  // This file is controller/cli/changepoints_command_test.cc; fixtures live under tests/.
  const std::string path =
      std::string(__FILE__).substr(0, std::string(__FILE__).rfind("/controller/")) +
      "/tests/fixtures/nightly/lab-60-quiet-nights.csv";
  ASSERT_EQ(Run({"changepoints", "--from-csv", path, "--format", "json"}), kExitOk) << err_.str();
  v1::ChangePointsReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out_.str(), &report).ok()) << out_.str();
  ASSERT_EQ(report.series_size(), 5);
  for (const v1::SeriesChanges& s : report.series()) {
    EXPECT_EQ(s.points(), 60u) << s.series();
    EXPECT_EQ(s.changes_size(), 0) << s.series();
    EXPECT_EQ(s.trends_size(), 0) << s.series();
    EXPECT_LT(s.phi(), 0.3) << s.series();
  }
}

}  // namespace
}  // namespace tlbfleet::cli
