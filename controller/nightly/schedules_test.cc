#include "controller/nightly/schedules.h"

#include <vector>

#include "common/clock.h"
#include "gtest/gtest.h"

namespace tlbfleet::nightly {
namespace {

absl::Time Utc(int y, int mo, int d, int h = 0, int mi = 0) {
  return absl::FromCivil(absl::CivilMinute(y, mo, d, h, mi), absl::UTCTimeZone());
}

ScheduleState Schedule(std::string id, std::string_view cron, absl::Time created) {
  absl::StatusOr<CronSchedule> parsed = CronSchedule::Parse(cron);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return ScheduleState{std::move(id), *parsed, false, created};
}

// Drives the schedules like the controller's loop: sleep (on the fake clock) until the next
// wake-up, take what is due. `down_from`..`down_until` the controller is not running.
std::vector<DueRun> RunUntil(std::vector<ScheduleState>* schedules, FakeClock* clock,
                             absl::Time end, absl::Time down_from = absl::InfiniteFuture(),
                             absl::Time down_until = absl::InfiniteFuture()) {
  std::vector<DueRun> runs;
  while (true) {
    absl::Time wake = NextWakeUp(*schedules, clock->Now());
    if (wake >= down_from && wake < down_until) wake = down_until;  // it starts again
    if (wake > end) break;
    clock->Set(wake);
    for (DueRun& r : TakeDue(schedules, clock->Now())) runs.push_back(r);
  }
  return runs;
}

TEST(SchedulesTest, AMonthOfNightsRunsEachNightOnce) {
  FakeClock clock(Utc(2026, 1, 1));
  std::vector<ScheduleState> schedules = {Schedule("nightly", "0 2 * * *", clock.Now()),
                                          Schedule("weekly", "30 3 * * SUN", clock.Now())};
  const std::vector<DueRun> runs = RunUntil(&schedules, &clock, Utc(2026, 2, 1));
  int nightly = 0, weekly = 0;
  for (const DueRun& r : runs) {
    EXPECT_EQ(r.skipped, 0);
    if (r.schedule_id == "nightly") {
      EXPECT_EQ(r.slot, Utc(2026, 1, 1 + nightly, 2));
      ++nightly;
    } else {
      EXPECT_EQ(absl::GetWeekday(absl::CivilDay(absl::ToCivilDay(r.slot, absl::UTCTimeZone()))),
                absl::Weekday::sunday);
      ++weekly;
    }
  }
  EXPECT_EQ(nightly, 31);
  EXPECT_EQ(weekly, 4);  // January 2026: Sundays 4, 11, 18, 25
  // Ordered by slot.
  for (size_t i = 1; i < runs.size(); ++i) EXPECT_LE(runs[i - 1].slot, runs[i].slot);
}

TEST(SchedulesTest, SlotsMissedWhileDownRunOnceOnStart) {
  FakeClock clock(Utc(2026, 1, 1));
  std::vector<ScheduleState> schedules = {Schedule("nightly", "0 2 * * *", clock.Now())};
  // Down from Jan 10 01:00 until Jan 13 05:00: the nights of the 10th..13th are missed; on
  // start one run for the 13th, with 3 skipped, and then every night again.
  const std::vector<DueRun> runs =
      RunUntil(&schedules, &clock, Utc(2026, 1, 20, 12), Utc(2026, 1, 10, 1), Utc(2026, 1, 13, 5));
  ASSERT_EQ(runs.size(), 9u + 1 + 7);  // Jan 1..9, the catch-up, Jan 14..20
  EXPECT_EQ(runs[8].slot, Utc(2026, 1, 9, 2));
  EXPECT_EQ(runs[9].slot, Utc(2026, 1, 13, 2));
  EXPECT_EQ(runs[9].skipped, 3);
  EXPECT_EQ(runs[10].slot, Utc(2026, 1, 14, 2));
  EXPECT_EQ(runs[10].skipped, 0);
}

TEST(SchedulesTest, APausedScheduleIsNeverDueAndResumesFromNow) {
  FakeClock clock(Utc(2026, 1, 1));
  std::vector<ScheduleState> schedules = {Schedule("n", "0 2 * * *", clock.Now())};
  Pause(&schedules[0]);
  EXPECT_EQ(NextWakeUp(schedules, clock.Now()), absl::InfiniteFuture());
  EXPECT_TRUE(TakeDue(&schedules, Utc(2026, 1, 9)).empty());
  Resume(&schedules[0], Utc(2026, 1, 10, 5));
  EXPECT_TRUE(TakeDue(&schedules, Utc(2026, 1, 10, 6)).empty());  // not the 10th's 02:00
  const std::vector<DueRun> due = TakeDue(&schedules, Utc(2026, 1, 11, 2));
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].slot, Utc(2026, 1, 11, 2));
  EXPECT_EQ(due[0].skipped, 0);
}

TEST(SchedulesTest, NeverHandledStartsAtNowAndAPassedSlotWakesAtOnce) {
  std::vector<ScheduleState> schedules = {Schedule("n", "0 2 * * *", absl::InfinitePast())};
  EXPECT_TRUE(TakeDue(&schedules, Utc(2026, 1, 5, 12)).empty());
  EXPECT_EQ(schedules[0].last_handled, Utc(2026, 1, 5, 12));
  EXPECT_EQ(NextWakeUp(schedules, Utc(2026, 1, 5, 12)), Utc(2026, 1, 6, 2));
  // The controller looked up late: the slot passed, so it is due now.
  EXPECT_EQ(NextWakeUp(schedules, Utc(2026, 1, 6, 9)), Utc(2026, 1, 6, 9));
}

}  // namespace
}  // namespace tlbfleet::nightly
