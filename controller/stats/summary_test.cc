#include "controller/stats/summary.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace tlbfleet::stats {
namespace {

constexpr double kTolerance = 1e-9;

TEST(SummarizeTest, HandComputedValues) {
  const std::vector<double> values = {1, 2, 3, 4};
  const Summary s = Summarize(values);
  EXPECT_EQ(s.n, 4u);
  ASSERT_TRUE(s.min && s.max && s.amean && s.hmean && s.gmean && s.stddev && s.coeffvar);
  EXPECT_DOUBLE_EQ(*s.min, 1);
  EXPECT_DOUBLE_EQ(*s.max, 4);
  EXPECT_NEAR(*s.amean, 2.5, kTolerance);
  // Hmean = 4 / (1 + 1/2 + 1/3 + 1/4) = 4 / (25/12) = 48/25.
  EXPECT_NEAR(*s.hmean, 1.92, kTolerance);
  // Gmean = 24^(1/4).
  EXPECT_NEAR(*s.gmean, 2.2133638394006434, kTolerance);
  // Sample variance: (2.25 + 0.25 + 0.25 + 2.25) / 3 = 5/3.
  EXPECT_NEAR(*s.stddev, 1.2909944487358056, kTolerance);
  EXPECT_NEAR(*s.coeffvar, 100 * 1.2909944487358056 / 2.5, kTolerance);
}

TEST(SummarizeTest, UnsortedInput) {
  const std::vector<double> values = {6789.09, 6395.44, 6500.0};
  const Summary s = Summarize(values);
  EXPECT_DOUBLE_EQ(*s.min, 6395.44);
  EXPECT_DOUBLE_EQ(*s.max, 6789.09);
  EXPECT_NEAR(*s.amean, (6789.09 + 6395.44 + 6500.0) / 3, kTolerance);
}

TEST(SummarizeTest, EmptyInputHasNothing) {
  const Summary s = Summarize({});
  EXPECT_EQ(s.n, 0u);
  EXPECT_FALSE(s.min || s.max || s.amean || s.hmean || s.gmean || s.stddev || s.coeffvar);
}

TEST(SummarizeTest, OneValueHasNoSpread) {
  const std::vector<double> values = {5};
  const Summary s = Summarize(values);
  EXPECT_EQ(s.n, 1u);
  EXPECT_DOUBLE_EQ(*s.min, 5);
  EXPECT_DOUBLE_EQ(*s.max, 5);
  EXPECT_DOUBLE_EQ(*s.amean, 5);
  EXPECT_DOUBLE_EQ(*s.hmean, 5);
  EXPECT_NEAR(*s.gmean, 5, kTolerance);
  EXPECT_FALSE(s.stddev.has_value());
  EXPECT_FALSE(s.coeffvar.has_value());
}

TEST(SummarizeTest, NonPositiveValuesHaveNoHmeanOrGmean) {
  const std::vector<double> values = {-1, 1};
  const Summary s = Summarize(values);
  EXPECT_DOUBLE_EQ(*s.amean, 0);
  EXPECT_NEAR(*s.stddev, std::sqrt(2.0), kTolerance);
  EXPECT_FALSE(s.hmean.has_value());
  EXPECT_FALSE(s.gmean.has_value());
  EXPECT_FALSE(s.coeffvar.has_value());  // zero mean

  const std::vector<double> with_zero = {0, 2, 4};
  const Summary z = Summarize(with_zero);
  EXPECT_FALSE(z.hmean.has_value());
  EXPECT_FALSE(z.gmean.has_value());
  EXPECT_NEAR(*z.amean, 2, kTolerance);
  EXPECT_NEAR(*z.coeffvar, 100.0, kTolerance);  // stddev 2, mean 2
}

TEST(SummarizeTest, NaNOrInfinityLeavesEverythingUndefined) {
  for (double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    const std::vector<double> values = {1, bad, 3};
    const Summary s = Summarize(values);
    EXPECT_EQ(s.n, 3u);
    EXPECT_FALSE(s.min || s.max || s.amean || s.hmean || s.gmean || s.stddev || s.coeffvar);
  }
}

TEST(SummarizeTest, LargeValuesWithSmallSpreadKeepPrecision) {
  // A naive sum-of-squares formula loses the spread entirely at this magnitude.
  const std::vector<double> values = {1e9 + 1, 1e9 + 2, 1e9 + 3};
  const Summary s = Summarize(values);
  EXPECT_NEAR(*s.stddev, 1.0, 1e-6);
  EXPECT_NEAR(*s.amean, 1e9 + 2, 1e-6);
}

TEST(SummarizeTest, OverflowBecomesUndefinedNotInfinite) {
  const double big = std::numeric_limits<double>::max();
  const std::vector<double> values = {big, -big};
  const Summary s = Summarize(values);
  EXPECT_DOUBLE_EQ(*s.max, big);
  ASSERT_TRUE(s.amean.has_value());
  EXPECT_TRUE(std::isfinite(*s.amean));
  EXPECT_FALSE(s.stddev.has_value());  // the true value exceeds double's range

  const std::vector<double> same = {big, big};  // the sum overflows, the mean does not
  const Summary t = Summarize(same);
  EXPECT_DOUBLE_EQ(*t.amean, big);
  EXPECT_DOUBLE_EQ(*t.stddev, 0);
}

}  // namespace
}  // namespace tlbfleet::stats

namespace tlbfleet::stats {
namespace {

TEST(SummarizeBAmeanTest, BestByDirectionMmtestsDefinition) {
  // 20 values 1..20: the best floor(20 * 95 / 100) = 19 and floor(20 * 99 / 100) = 19.
  std::vector<double> values;
  for (int i = 20; i >= 1; --i) values.push_back(i);
  const Summary high = Summarize(values, Direction::kHigherIsBetter);
  EXPECT_NEAR(*high.bamean95, (210.0 - 1) / 19, 1e-12);  // drops the 1
  EXPECT_NEAR(*high.bamean99, (210.0 - 1) / 19, 1e-12);
  const Summary low = Summarize(values, Direction::kLowerIsBetter);
  EXPECT_NEAR(*low.bamean95, (210.0 - 20) / 19, 1e-12);  // drops the 20

  // 100 values: 95 best and 99 best differ.
  std::vector<double> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(i);
  const Summary h = Summarize(hundred, Direction::kHigherIsBetter);
  EXPECT_NEAR(*h.bamean95, (6 + 100) / 2.0, 1e-12);  // mean of 6..100
  EXPECT_NEAR(*h.bamean99, (2 + 100) / 2.0, 1e-12);  // mean of 2..100
}

TEST(SummarizeBAmeanTest, OneOrTwoSamples) {
  const std::vector<double> one = {7};
  EXPECT_DOUBLE_EQ(*Summarize(one).bamean95, 7);  // floor(0.95) = 0 keeps all, as mmtests
  const std::vector<double> two = {7, 9};
  EXPECT_DOUBLE_EQ(*Summarize(two, Direction::kHigherIsBetter).bamean95, 9);
  EXPECT_DOUBLE_EQ(*Summarize(two, Direction::kLowerIsBetter).bamean95, 7);
}

TEST(SummarizeReasonTest, DegenerateInputsSayWhy) {
  EXPECT_EQ(Summarize({}).why_undefined, "no samples");
  const std::vector<double> one = {5};
  EXPECT_EQ(Summarize(one).why_undefined, "one sample: no stddev or coeffvar");
  const std::vector<double> with_zero = {0, 2};
  EXPECT_EQ(Summarize(with_zero).why_undefined, "a sample <= 0: no hmean or gmean");
  const std::vector<double> nan = {1, std::numeric_limits<double>::quiet_NaN()};
  const Summary n = Summarize(nan);
  EXPECT_EQ(n.why_undefined, "a sample is NaN or infinite");
  EXPECT_FALSE(n.bamean95 || n.bamean99);
  const std::vector<double> equal = {3, 3, 3};
  const Summary e = Summarize(equal);
  EXPECT_TRUE(e.why_undefined.empty());
  EXPECT_DOUBLE_EQ(*e.stddev, 0);
  EXPECT_DOUBLE_EQ(*e.coeffvar, 0);
  EXPECT_DOUBLE_EQ(*e.hmean, 3);
}

TEST(PctDiffTest, SignConventionAndZeroBase) {
  EXPECT_NEAR(*PctDiff(100, 106.16, Direction::kHigherIsBetter), 6.16, 1e-9);
  EXPECT_NEAR(*PctDiff(100, 106.16, Direction::kLowerIsBetter), -6.16, 1e-9);
  EXPECT_EQ(*PctDiff(0, 0, Direction::kHigherIsBetter), 0);
  EXPECT_FALSE(PctDiff(0, 1, Direction::kHigherIsBetter).has_value());
}

}  // namespace
}  // namespace tlbfleet::stats
