#include "agent/runner/metric_line.h"

#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

TEST(MetricLineTest, PerThreadLine) {
  absl::StatusOr<v1::Sample> s = ParseMetricLine(
      R"({"metric":"records_per_sec","value":1234.5,"unit":"records/s","better":"higher",)"
      R"("series":"thread0","iteration":1,"param":{"threads":"2"}})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->metric(), "records_per_sec");
  EXPECT_DOUBLE_EQ(s->value(), 1234.5);
  EXPECT_EQ(s->unit(), "records/s");
  EXPECT_EQ(s->better(), v1::BETTER_HIGHER);
  EXPECT_EQ(s->series(), "thread0");
}

TEST(MetricLineTest, AggregateHasNoSeries) {
  absl::StatusOr<v1::Sample> s = ParseMetricLine(
      R"({"metric":"latency","value":9.66,"unit":"us/op","better":"lower","iteration":1})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->series(), "");
  EXPECT_EQ(s->better(), v1::BETTER_LOWER);
}

TEST(MetricLineTest, Rejects) {
  EXPECT_FALSE(ParseMetricLine("1234 records/s 617 617").ok());
  EXPECT_FALSE(ParseMetricLine(R"({"value":1})").ok());
  EXPECT_FALSE(ParseMetricLine(R"({"metric":"a"})").ok());
  EXPECT_FALSE(ParseMetricLine(R"({"metric":"a","value":"12"})").ok());
  EXPECT_FALSE(ParseMetricLine(R"({"metric":"a","value":null})").ok());
  EXPECT_FALSE(ParseMetricLine(R"({"metric":"a","value":1,"better":"up"})").ok());
  EXPECT_FALSE(ParseMetricLine(R"({"metric":"a","value":1,"series":3})").ok());
}

}  // namespace
}  // namespace tlbfleet::agent
