#include "common/clock.h"

#include <gtest/gtest.h>

namespace tlbfleet {
namespace {

TEST(FakeClockTest, MovesOnlyWhenSetAdvancedOrSleptOn) {
  FakeClock clock(absl::FromUnixMillis(1'000'000));
  EXPECT_EQ(clock.Now(), absl::FromUnixMillis(1'000'000));
  EXPECT_EQ(clock.NowMillis(), 1'000'000);
  EXPECT_EQ(clock.Now(), absl::FromUnixMillis(1'000'000));

  clock.Advance(absl::Seconds(2));
  EXPECT_EQ(clock.NowMillis(), 1'002'000);
  // A sleep on a fake clock is time passing at once: code that polls runs in no real time.
  clock.SleepFor(absl::Milliseconds(500));
  EXPECT_EQ(clock.NowMillis(), 1'002'500);
  clock.Set(absl::FromUnixSeconds(7));
  EXPECT_EQ(clock.NowMillis(), 7'000);
}

TEST(RealClockTest, IsTheSystemClockAndSleeps) {
  Clock& clock = Clock::Real();
  EXPECT_EQ(&clock, &Clock::Real());
  const absl::Time before = absl::Now();
  const absl::Time now = clock.Now();
  EXPECT_GE(now, before);
  EXPECT_LT(now - before, absl::Minutes(1));
  clock.SleepFor(absl::Milliseconds(20));
  EXPECT_GE(clock.Now() - now, absl::Milliseconds(20));
}

TEST(SteadyClockTest, StartsAtTheWallTimeAndNeverGoesBack) {
  Clock& clock = Clock::Steady();
  EXPECT_EQ(&clock, &Clock::Steady());
  absl::Time last = clock.Now();
  EXPECT_LT(absl::AbsDuration(last - absl::Now()), absl::Minutes(1));
  for (int i = 0; i < 1000; ++i) {
    const absl::Time now = clock.Now();
    ASSERT_GE(now, last);
    last = now;
  }
  clock.SleepFor(absl::Milliseconds(20));
  EXPECT_GE(clock.Now() - last, absl::Milliseconds(20));
}

}  // namespace
}  // namespace tlbfleet
