#include "agent/runner/backoff.h"

#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

TEST(BackoffTest, DoublesToTheCapAndResets) {
  Backoff b(0.5, 4, [] { return 0.5; });  // jitter factor exactly 1
  EXPECT_DOUBLE_EQ(b.NextDelaySeconds(), 0.5);
  EXPECT_DOUBLE_EQ(b.NextDelaySeconds(), 1);
  EXPECT_DOUBLE_EQ(b.NextDelaySeconds(), 2);
  EXPECT_DOUBLE_EQ(b.NextDelaySeconds(), 4);
  EXPECT_DOUBLE_EQ(b.NextDelaySeconds(), 4);
  b.Reset();
  EXPECT_DOUBLE_EQ(b.NextDelaySeconds(), 0.5);
}

TEST(BackoffTest, JitterStaysWithinTwentyPercentAndTheCap) {
  Backoff low(1, 30, [] { return 0.0; });
  EXPECT_DOUBLE_EQ(low.NextDelaySeconds(), 0.8);
  Backoff high(1, 30, [] { return 0.999999; });
  EXPECT_NEAR(high.NextDelaySeconds(), 1.2, 1e-5);
  Backoff capped(30, 30, [] { return 0.999999; });
  EXPECT_DOUBLE_EQ(capped.NextDelaySeconds(), 30);
}

TEST(BackoffTest, DefaultRandomSourceStaysInRange) {
  Backoff b(0.5, 30);
  for (int i = 0; i < 100; ++i) {
    double d = b.NextDelaySeconds();
    EXPECT_GE(d, 0.4);
    EXPECT_LE(d, 30);
  }
}

}  // namespace
}  // namespace tlbfleet::agent
