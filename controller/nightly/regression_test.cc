#include "controller/nightly/regression.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "controller/nightly/schedules.h"
#include "controller/stats/bootstrap.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::nightly {
namespace {

using ::testing::HasSubstr;

absl::Time Utc(int y, int mo, int d, int h = 0) {
  return absl::FromCivil(absl::CivilHour(y, mo, d, h), absl::UTCTimeZone());
}

SeriesKey Key() {
  return SeriesKey{"unknown", "lab-nightly", "default", "pipetest", "", "usec_per_op"};
}

// A run's point: its estimate scattered by 0.5 % between runs, with a ±2 % interval.
HistoryPoint Point(stats::Rng& rng, absl::Time at, int night, const std::string& release,
                   double level) {
  HistoryPoint p;
  p.finished = at;
  p.estimate = level * (1 + 0.005 * rng.Normal());
  p.low = p.estimate * 0.98;
  p.high = p.estimate * 1.02;
  p.provenance.run_id = absl::StrCat("night-", night);
  p.provenance.boot_entry = "lab-nightly";
  p.provenance.kernel_release = release;
  p.provenance.schedule_id = "nightly";
  return p;
}

// A stand-in for the calibrated comparison: it knows which kernel is slower (as the real one
// would find from the samples) and says worse only when the sides ran different kernels.
absl::StatusOr<CalibratedVerdict> KernelAwareComparison(const SeriesKey&,
                                                        std::span<const HistoryPoint> before,
                                                        std::span<const HistoryPoint> after,
                                                        double) {
  CalibratedVerdict v;
  v.kind = before.back().provenance.kernel_release != after.front().provenance.kernel_release
               ? CalibratedVerdict::Kind::kWorse
               : CalibratedVerdict::Kind::kSame;
  v.summary = absl::StrCat(before.size(), " runs vs ", after.size(), " runs");
  return v;
}

// The nightly scenario: a schedule runs every night on the injectable clock; the
// entry boots 6.1.0-47 until night 15 and 6.1.0-52 (5 % slower) from then on. After every
// night the series is searched, as the controller will. The change is flagged at night 15
// exactly, once, and nothing is flagged before.
TEST(FindChangesTest, AMonthOfNightsFlagsTheSwitchAndNothingBefore) {
  FakeClock clock(Utc(2026, 1, 1));
  std::vector<ScheduleState> schedules;
  schedules.push_back(
      ScheduleState{"nightly", *CronSchedule::Parse("0 2 * * *"), false, clock.Now()});
  const int kSwitch = 15;
  stats::Rng rng(12);
  Series series;
  series.key = Key();
  series.direction = stats::Direction::kHigherIsBetter;
  std::set<std::string> recorded;
  std::vector<Finding> all;
  int night = 0;
  int flagged_on_night = -1;
  while (NextWakeUp(schedules, clock.Now()) < Utc(2026, 2, 1)) {
    clock.Set(NextWakeUp(schedules, clock.Now()));
    for (const DueRun& due : TakeDue(&schedules, clock.Now())) {
      const bool new_kernel = night >= kSwitch;
      series.points.push_back(Point(rng, due.slot + absl::Minutes(40), night,
                                    new_kernel ? "6.1.0-52-amd64" : "6.1.0-47-amd64",
                                    new_kernel ? 950 : 1000));
      absl::StatusOr<std::vector<Finding>> found =
          FindChanges(series, RegressionOptions{}, KernelAwareComparison, recorded);
      ASSERT_TRUE(found.ok()) << found.status();
      for (const Finding& f : *found) {
        recorded.insert(f.first_bad_run);
        all.push_back(f);
        if (flagged_on_night < 0) flagged_on_night = night;
      }
      ++night;
    }
  }
  EXPECT_EQ(night, 31);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].kind, Finding::Kind::kRegression);
  EXPECT_EQ(all[0].index, static_cast<size_t>(kSwitch));
  EXPECT_EQ(all[0].first_bad_run, "night-15");
  EXPECT_EQ(all[0].last_good_run, "night-14");
  // Found as soon as the detector's minimum segment allows: min_segment nights of the new
  // kernel, and never before the switch.
  EXPECT_GE(flagged_on_night, kSwitch);
  EXPECT_LE(flagged_on_night, kSwitch + 4);
  ASSERT_TRUE(all[0].change.estimate.relative.has_value());
  EXPECT_LT(*all[0].change.estimate.relative_high, -0.03);
}

TEST(FindChangesTest, AChangeTheComparisonCannotConfirmIsNoRegression) {
  stats::Rng rng(3);
  Series series;
  series.key = Key();
  for (int i = 0; i < 30; ++i) {
    series.points.push_back(Point(rng, Utc(2026, 1, 1 + i), i, "k", i < 20 ? 1000 : 950));
  }
  std::vector<size_t> before_sizes, after_sizes;
  std::string first_before_run;
  const CalibratedComparison unsure = [&](const SeriesKey& key, std::span<const HistoryPoint> b,
                                          std::span<const HistoryPoint> a, double) {
    EXPECT_EQ(key, Key());
    before_sizes.push_back(b.size());
    after_sizes.push_back(a.size());
    first_before_run = b.front().provenance.run_id;
    EXPECT_EQ(b.back().provenance.run_id, "night-19");  // adjacent to the change
    EXPECT_EQ(a.front().provenance.run_id, "night-20");
    CalibratedVerdict v;
    v.kind = CalibratedVerdict::Kind::kUnknown;
    v.summary = "ratio CI 0.93 .. 1.01: can't tell yet";
    return absl::StatusOr<CalibratedVerdict>(v);
  };
  absl::StatusOr<std::vector<Finding>> found = FindChanges(series, {}, unsure, {});
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].kind, Finding::Kind::kUnconfirmed);
  EXPECT_EQ((*found)[0].verdict.summary, "ratio CI 0.93 .. 1.01: can't tell yet");
  // At most compare_points (10) on each side, nearest the change.
  EXPECT_EQ(before_sizes, std::vector<size_t>{10});
  EXPECT_EQ(after_sizes, std::vector<size_t>{10});
  EXPECT_EQ(first_before_run, "night-10");
  // Once recorded, it is not reported again.
  absl::StatusOr<std::vector<Finding>> again = FindChanges(series, {}, unsure, {"night-20"});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

TEST(FindChangesTest, AnImprovementIsNotARegression) {
  stats::Rng rng(4);
  Series series;
  series.key = Key();
  for (int i = 0; i < 24; ++i) {
    series.points.push_back(Point(rng, Utc(2026, 1, 1 + i), i, "k", i < 12 ? 1000 : 1080));
  }
  const CalibratedComparison better = [](const SeriesKey&, std::span<const HistoryPoint>,
                                         std::span<const HistoryPoint>, double) {
    CalibratedVerdict v;
    v.kind = CalibratedVerdict::Kind::kBetter;
    return absl::StatusOr<CalibratedVerdict>(v);
  };
  absl::StatusOr<std::vector<Finding>> found = FindChanges(series, {}, better, {});
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].kind, Finding::Kind::kImprovement);
  EXPECT_EQ((*found)[0].index, 12u);
}

// A slow drift (10 % over 40 nights, 0.5 % scatter): the detector reports a trend, not a
// step; it opens nothing unless asked, and when asked its ends are compared.
TEST(FindChangesTest, ADriftIsJudgedOnlyWhenAskedComparingItsEnds) {
  stats::Rng rng(7);
  Series series;
  series.key = Key();
  for (int i = 0; i < 40; ++i) {
    series.points.push_back(Point(rng, Utc(2026, 1, 1 + i), i, "k", 1000 * (1 - 0.0025 * i)));
  }
  std::vector<std::string> compared;
  const CalibratedComparison worse = [&](const SeriesKey&, std::span<const HistoryPoint> b,
                                         std::span<const HistoryPoint> a, double) {
    compared.push_back(absl::StrCat(b.front().provenance.run_id, "..", b.back().provenance.run_id,
                                    " vs ", a.front().provenance.run_id, "..",
                                    a.back().provenance.run_id));
    CalibratedVerdict v;
    v.kind = CalibratedVerdict::Kind::kWorse;
    return absl::StatusOr<CalibratedVerdict>(v);
  };
  absl::StatusOr<std::vector<Finding>> quiet = FindChanges(series, {}, worse, {});
  ASSERT_TRUE(quiet.ok()) << quiet.status();
  EXPECT_TRUE(quiet->empty());  // no step, and drifts are not judged by default
  EXPECT_TRUE(compared.empty());

  RegressionOptions options;
  options.drift_opens_regression = true;
  absl::StatusOr<std::vector<Finding>> found = FindChanges(series, options, worse, {});
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 1u);
  const Finding& f = (*found)[0];
  EXPECT_EQ(f.kind, Finding::Kind::kRegression);
  ASSERT_TRUE(f.drift.has_value());
  EXPECT_EQ(f.drift->begin, 0u);
  EXPECT_EQ(f.drift->end, 40u);
  EXPECT_LT(f.drift->slope_high, 0);
  EXPECT_EQ(f.first_bad_run, "night-0");
  EXPECT_EQ(f.last_good_run, "");
  EXPECT_EQ(compared, std::vector<std::string>{"night-0..night-9 vs night-30..night-39"});
  // Recorded once, not again.
  absl::StatusOr<std::vector<Finding>> again = FindChanges(series, options, worse, {"night-0"});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

TEST(FindChangesTest, OnlyTheLatestWindowIsSearchedButIndexesAreTheSeries) {
  stats::Rng rng(5);
  Series series;
  series.key = Key();
  // An old step at 10 and a recent one at 70; a window of 40 sees only the recent one.
  for (int i = 0; i < 80; ++i) {
    const double level = i < 10 ? 1200 : (i < 70 ? 1000 : 940);
    series.points.push_back(Point(rng, Utc(2026, 1, 1) + absl::Hours(24 * i), i, "k", level));
  }
  RegressionOptions options;
  options.window = 40;
  absl::StatusOr<std::vector<Finding>> found =
      FindChanges(series, options, KernelAwareComparison, {});
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].index, 70u);
  EXPECT_EQ((*found)[0].change.index, 70u);
  EXPECT_EQ((*found)[0].change.estimate.after.begin, 70u);
  EXPECT_EQ((*found)[0].change.estimate.before.begin, 40u);
}

TEST(FindChangesTest, BadPointsAndComparisonErrorsAreReported) {
  stats::Rng rng(6);
  Series series;
  series.key = Key();
  for (int i = 0; i < 12; ++i) {
    series.points.push_back(Point(rng, Utc(2026, 1, 1 + i), i, "k", i < 6 ? 1000 : 900));
  }
  const CalibratedComparison failing = [](const SeriesKey&, std::span<const HistoryPoint>,
                                          std::span<const HistoryPoint>, double) {
    return absl::StatusOr<CalibratedVerdict>(absl::UnavailableError("samples not readable"));
  };
  EXPECT_EQ(FindChanges(series, {}, failing, {}).status().code(), absl::StatusCode::kUnavailable);
  series.points[3].confidence = 0.99;
  EXPECT_THAT(std::string(FindChanges(series, {}, failing, {}).status().message()),
              HasSubstr("point 3 (run night-3) has a 0.99 interval, the others 0.95"));
  series.points[3].confidence = 0.95;
  series.points[4].low = series.points[4].estimate + 1;
  EXPECT_THAT(std::string(FindChanges(series, {}, failing, {}).status().message()),
              HasSubstr("point 4 (run night-4): interval"));
  EXPECT_EQ(Key().ToString(), "unknown/lab-nightly/default/pipetest/-/usec_per_op");
}

}  // namespace
}  // namespace tlbfleet::nightly
