#include "controller/nightly/cron.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::nightly {
namespace {

using ::testing::HasSubstr;

absl::Time Utc(int y, int mo, int d, int h = 0, int mi = 0, int s = 0) {
  return absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, s), absl::UTCTimeZone());
}

CronSchedule MustParse(std::string_view text) {
  absl::StatusOr<CronSchedule> s = CronSchedule::Parse(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status();
  return *s;
}

// The first `n` fire times after `from`.
std::vector<absl::Time> Fires(const CronSchedule& s, absl::Time from, int n) {
  std::vector<absl::Time> out;
  for (int i = 0; i < n; ++i) out.push_back(from = s.NextAfter(from));
  return out;
}

std::string ErrorOf(std::string_view text) {
  absl::StatusOr<CronSchedule> s = CronSchedule::Parse(text);
  EXPECT_FALSE(s.ok()) << text;
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << text;
  return std::string(s.status().message());
}

TEST(CronScheduleTest, NightlyFiresOncePerDayAtTheMinute) {
  const CronSchedule s = MustParse("0 2 * * *");
  EXPECT_EQ(s.NextAfter(Utc(2026, 1, 1)), Utc(2026, 1, 1, 2));
  // Strictly after: at 02:00 itself the next is tomorrow's.
  EXPECT_EQ(s.NextAfter(Utc(2026, 1, 1, 2)), Utc(2026, 1, 2, 2));
  EXPECT_EQ(s.NextAfter(Utc(2026, 1, 1, 2, 0, 59)), Utc(2026, 1, 2, 2));
  EXPECT_EQ(s.NextAfter(Utc(2026, 12, 31, 3)), Utc(2027, 1, 1, 2));
}

TEST(CronScheduleTest, StepsRangesListsAndNames) {
  EXPECT_EQ(Fires(MustParse("*/15 * * * *"), Utc(2026, 3, 1, 0, 0, 30), 3),
            (std::vector<absl::Time>{Utc(2026, 3, 1, 0, 15), Utc(2026, 3, 1, 0, 30),
                                     Utc(2026, 3, 1, 0, 45)}));
  // N/STEP runs from N to the maximum.
  EXPECT_EQ(Fires(MustParse("5/20 3 * * *"), Utc(2026, 3, 1), 4),
            (std::vector<absl::Time>{Utc(2026, 3, 1, 3, 5), Utc(2026, 3, 1, 3, 25),
                                     Utc(2026, 3, 1, 3, 45), Utc(2026, 3, 2, 3, 5)}));
  // 2026-03-06 is a Friday: weekdays 09..17 every 2 hours, then Monday.
  const CronSchedule office = MustParse("0 9-17/4 * * mon-FRI");
  EXPECT_EQ(
      Fires(office, Utc(2026, 3, 6, 12), 3),
      (std::vector<absl::Time>{Utc(2026, 3, 6, 13), Utc(2026, 3, 6, 17), Utc(2026, 3, 9, 9)}));
  EXPECT_EQ(Fires(MustParse("0 0 1 jan,Jul *"), Utc(2026, 2, 1), 2),
            (std::vector<absl::Time>{Utc(2026, 7, 1), Utc(2027, 1, 1)}));
  // 0 and 7 are both Sunday (2026-03-08 is one).
  EXPECT_EQ(MustParse("0 0 * * 7").NextAfter(Utc(2026, 3, 6)), Utc(2026, 3, 8));
  EXPECT_EQ(MustParse("0 0 * * 0").NextAfter(Utc(2026, 3, 6)), Utc(2026, 3, 8));
  EXPECT_EQ(MustParse("0 0 * * SUN").NextAfter(Utc(2026, 3, 6)), Utc(2026, 3, 8));
}

TEST(CronScheduleTest, BothDayFieldsRestrictedMeansEither) {
  // The 1st and 15th, and every Friday (Vixie cron). March 2026: Fri 6, 13, 15th (Sun), 20.
  EXPECT_EQ(Fires(MustParse("30 4 1,15 * 5"), Utc(2026, 3, 2), 4),
            (std::vector<absl::Time>{Utc(2026, 3, 6, 4, 30), Utc(2026, 3, 13, 4, 30),
                                     Utc(2026, 3, 15, 4, 30), Utc(2026, 3, 20, 4, 30)}));
  // With `*` in one day field, both must match: the 13th only when it is a Friday.
  EXPECT_EQ(MustParse("0 0 13 * 5").NextAfter(Utc(2026, 1, 1)), Utc(2026, 1, 2));  // either
  EXPECT_EQ(MustParse("0 0 13 */1 5").NextAfter(Utc(2026, 1, 1)), Utc(2026, 1, 2));
  EXPECT_EQ(MustParse("0 0 */1 * 5").NextAfter(Utc(2026, 1, 1)), Utc(2026, 1, 2));
}

TEST(CronScheduleTest, LeapDayAndMacros) {
  EXPECT_EQ(MustParse("0 0 29 2 *").NextAfter(Utc(2026, 1, 1)), Utc(2028, 2, 29));
  EXPECT_EQ(MustParse("@daily").NextAfter(Utc(2026, 1, 1, 5)), Utc(2026, 1, 2));
  EXPECT_EQ(MustParse("@midnight").NextAfter(Utc(2026, 1, 1, 5)), Utc(2026, 1, 2));
  EXPECT_EQ(MustParse("@hourly").NextAfter(Utc(2026, 1, 1, 5, 1)), Utc(2026, 1, 1, 6));
  EXPECT_EQ(MustParse("@weekly").NextAfter(Utc(2026, 3, 6)), Utc(2026, 3, 8));
  EXPECT_EQ(MustParse("@monthly").NextAfter(Utc(2026, 3, 6)), Utc(2026, 4, 1));
  EXPECT_EQ(MustParse("@yearly").NextAfter(Utc(2026, 3, 6)), Utc(2027, 1, 1));
  EXPECT_EQ(MustParse("  0 2 * * *  ").text(), "0 2 * * *");
}

TEST(CronScheduleTest, MatchesAgreesWithNextAfter) {
  const CronSchedule s = MustParse("10,40 */6 1-10 * MON,WED");
  absl::Time t = Utc(2026, 1, 1);
  for (int i = 0; i < 50; ++i) {
    const absl::Time next = s.NextAfter(t);
    EXPECT_TRUE(s.Matches(absl::ToCivilMinute(next, absl::UTCTimeZone())));
    for (absl::Time m = t + absl::Minutes(1); m < next; m += absl::Minutes(1)) {
      ASSERT_FALSE(s.Matches(absl::ToCivilMinute(m, absl::UTCTimeZone())))
          << absl::FormatTime(m, absl::UTCTimeZone());
      if (m > t + absl::Hours(24 * 3)) break;  // enough minutes checked per gap
    }
    t = next;
  }
}

TEST(CronScheduleTest, BadSchedulesNameTheField) {
  EXPECT_EQ(ErrorOf("0 24 * * *"), "cron field 2 (hour) '24': 24 is out of range 0-23");
  EXPECT_EQ(ErrorOf("60 * * * *"), "cron field 1 (minute) '60': 60 is out of range 0-59");
  EXPECT_EQ(ErrorOf("0 0 0 * *"), "cron field 3 (day-of-month) '0': 0 is out of range 1-31");
  EXPECT_EQ(ErrorOf("0 0 * 13 *"), "cron field 4 (month) '13': 13 is out of range 1-12");
  EXPECT_EQ(ErrorOf("0 0 * * 8"), "cron field 5 (day-of-week) '8': 8 is out of range 0-7");
  EXPECT_THAT(ErrorOf("* * * *"), HasSubstr("expected 5 fields"));
  EXPECT_THAT(ErrorOf("* * * *"), HasSubstr("got 4"));
  EXPECT_THAT(ErrorOf("0 0 * * * *"), HasSubstr("got 6"));
  EXPECT_THAT(ErrorOf(""), HasSubstr("got 0"));
  EXPECT_EQ(ErrorOf("*/0 * * * *"), "cron field 1 (minute) '*/0': a step must be at least 1");
  EXPECT_EQ(ErrorOf("*/x * * * *"), "cron field 1 (minute) '*/x': step 'x' is not a number");
  EXPECT_EQ(ErrorOf("5-1 * * * *"), "cron field 1 (minute) '5-1': the range 5-1 runs backwards");
  EXPECT_EQ(ErrorOf("0 0 * FOO *"),
            "cron field 4 (month) 'FOO': 'FOO' is not a number or a name (JAN..DEC)");
  EXPECT_EQ(ErrorOf("0 0 * * MON-"), "cron field 5 (day-of-week) 'MON-': a value is missing");
  EXPECT_EQ(ErrorOf("1,,2 * * * *"), "cron field 1 (minute) '1,,2': an empty list element");
  EXPECT_EQ(ErrorOf("0 x * * *"), "cron field 2 (hour) 'x': 'x' is not a number");
  EXPECT_EQ(ErrorOf("0 -1 * * *"), "cron field 2 (hour) '-1': a value is missing");
  EXPECT_THAT(ErrorOf("@reboot"), HasSubstr("unknown macro '@reboot'"));
  EXPECT_EQ(ErrorOf("0 0 30 2 *"),
            "cron field 3 (day-of-month) '30': never fires, no such day in month '2'");
  EXPECT_EQ(ErrorOf("0 0 31 4,6,9,11 *"),
            "cron field 3 (day-of-month) '31': never fires, no such day in month '4,6,9,11'");
}

TEST(DecideFireTest, MissedSlotsRunOnceForTheLatest) {
  const CronSchedule s = MustParse("0 2 * * *");
  // Handled Jan 1; the controller was down until Jan 4 03:00: Jan 2, 3 and 4 were missed.
  const FireDecision d = DecideFire(s, Utc(2026, 1, 1, 2), Utc(2026, 1, 4, 3));
  EXPECT_TRUE(d.fire);
  EXPECT_EQ(d.slot, Utc(2026, 1, 4, 2));
  EXPECT_EQ(d.skipped, 2);
  EXPECT_EQ(d.next, Utc(2026, 1, 5, 2));
  // Nothing due: the next slot is still ahead.
  const FireDecision none = DecideFire(s, Utc(2026, 1, 4, 2), Utc(2026, 1, 4, 3));
  EXPECT_FALSE(none.fire);
  EXPECT_EQ(none.next, Utc(2026, 1, 5, 2));
  // Exactly at the slot it is due.
  EXPECT_TRUE(DecideFire(s, Utc(2026, 1, 4, 2), Utc(2026, 1, 5, 2)).fire);
  // Every minute for a day down: one run, 1439 skipped.
  const FireDecision busy = DecideFire(MustParse("* * * * *"), Utc(2026, 1, 1), Utc(2026, 1, 2));
  EXPECT_EQ(busy.slot, Utc(2026, 1, 2));
  EXPECT_EQ(busy.skipped, 24 * 60 - 1);
}

}  // namespace
}  // namespace tlbfleet::nightly
