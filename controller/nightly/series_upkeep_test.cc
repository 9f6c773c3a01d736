#include "controller/nightly/series_upkeep.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::nightly {
namespace {

using ::testing::UnorderedElementsAre;

v1::Sample SampleOf(const std::string& arm, double value, const std::string& boot) {
  v1::Sample s;
  s.set_arm(arm);
  s.set_metric("records_per_sec");
  s.set_better(v1::BETTER_HIGHER);
  s.set_value(value);
  s.set_boot_id(boot);
  s.set_microarch("Zen 3");
  return s;
}

v1::Run RunOf(const std::vector<std::pair<std::string, std::string>>& arms) {
  v1::Run run;
  run.set_id("7");
  run.set_finished_unix(1'700'000'000);
  run.mutable_spec()->set_benchmark("ebizzy");
  for (const auto& [name, mmap] : arms) {
    v1::ArmSpec* arm = run.mutable_spec()->add_arms();
    arm->set_name(name);
    (*arm->mutable_params())["mmap"] = mmap;
  }
  return run;
}

std::set<std::string> Configs(const std::vector<store::NewPoint>& points) {
  std::set<std::string> out;
  for (const store::NewPoint& p : points) out.insert(p.key.config());
  return out;
}

// Arms that differ give a point each on their own series, as always.
TEST(PointsFromRunTest, ArmsThatDifferKeepTheirOwnSeries) {
  const v1::Run run = RunOf({{"a", "always"}, {"b", "never"}});
  const std::vector<store::NewPoint> points = PointsFromRun(
      run, {SampleOf("a", 100, "b0"), SampleOf("b", 200, "b0"), SampleOf("a", 102, "b1")}, "");
  ASSERT_EQ(points.size(), 2u);
  EXPECT_THAT(Configs(points), UnorderedElementsAre("mmap=always", "mmap=never"));
}

// Two arms on one series (an A/A run, or a multi-kernel import whose arms carry no boot
// entry) would store one point of the run there, the second replacing the first: each gets
// a series of its own instead, and neither arm's point is lost.
TEST(PointsFromRunTest, TwoArmsOnOneSeriesEachGetTheirOwnNoPointLost) {
  const v1::Run run = RunOf({{"6.1", "always"}, {"6.6", "always"}, {"other", "never"}});
  const std::vector<store::NewPoint> points = PointsFromRun(
      run, {SampleOf("6.1", 100, "b0"), SampleOf("6.6", 200, "b0"), SampleOf("other", 300, "b0")},
      "");
  ASSERT_EQ(points.size(), 3u);
  EXPECT_THAT(Configs(points),
              UnorderedElementsAre("mmap=always arm=6.1", "mmap=always arm=6.6", "mmap=never"));
  for (const store::NewPoint& p : points) {
    if (p.point.arm() == "6.6") {
      EXPECT_DOUBLE_EQ(p.point.estimate(), 200);
    }
  }
}

}  // namespace
}  // namespace tlbfleet::nightly
