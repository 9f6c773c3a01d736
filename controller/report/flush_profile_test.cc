#include "controller/report/flush_profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tlbfleet::report {
namespace {

using ::testing::HasSubstr;

v1::Sample S(const std::string& arm, uint32_t iteration, const std::string& series, double v,
             const std::string& metric = "tlb_flush_events") {
  v1::Sample s;
  s.set_arm(arm);
  s.set_iteration(iteration);
  s.set_metric(metric);
  s.set_series(series);
  s.set_value(v);
  s.set_param_value("2");
  return s;
}

std::vector<v1::Sample> TwoArms() {
  return {
      // ceiling 1: the 128-page unmaps become full flushes.
      S("c1", 1, "pages=-1", 380),
      S("c1", 1, "pages=1", 20),
      S("c1", 2, "pages=-1", 400),
      S("c1", 1, "reason=3", 300),
      S("c1", 1, "reason=1", 100),
      S("c1", 1, "total", 400),
      S("c1", 1, "", 2, "tlb_flush_lost"),
      S("c1", 1, "", 123, "records_per_sec"),
      // ceiling 512: ranged 128-page flushes.
      S("c512", 1, "pages=65-128", 390),
      S("c512", 1, "pages=1", 10),
      S("c512", 1, "reason=3", 400),
  };
}

TEST(FlushProfileTest, SumsIterationsPerArmAndIgnoresOtherMetrics) {
  auto profiles = BuildFlushProfiles(TwoArms(), {"c1", "c512"}, std::nullopt);
  ASSERT_EQ(profiles.size(), 2u);
  EXPECT_EQ(profiles[0].arm, "c1");
  EXPECT_DOUBLE_EQ(profiles[0].pages.at("-1"), 780);
  EXPECT_DOUBLE_EQ(profiles[0].PagesTotal(), 800);  // "total" series is not a page bucket
  EXPECT_DOUBLE_EQ(profiles[0].reasons.at(3), 300);
  EXPECT_DOUBLE_EQ(profiles[0].lost, 2);
  EXPECT_EQ(profiles[0].iterations, 2u);
  EXPECT_DOUBLE_EQ(profiles[1].pages.at("65-128"), 390);
}

TEST(FlushProfileTest, CountsTheSameIterationNumberInEachBootOnce) {
  std::vector<v1::Sample> samples;
  for (const char* boot : {"boot-a", "boot-b", "boot-c"}) {
    for (uint32_t iteration = 1; iteration <= 2; ++iteration) {
      v1::Sample s = S("c1", iteration, "pages=-1", 10);
      s.set_boot_id(boot);
      samples.push_back(s);
    }
  }
  auto profiles = BuildFlushProfiles(samples, {"c1"}, std::nullopt);
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].iterations, 6u);
  EXPECT_DOUBLE_EQ(profiles[0].pages.at("-1"), 60);
}

TEST(FlushProfileTest, FiltersBySweepValue) {
  EXPECT_TRUE(BuildFlushProfiles(TwoArms(), {}, std::string("1")).empty());
  EXPECT_EQ(BuildFlushProfiles(TwoArms(), {}, std::string("2")).size(), 2u);
}

TEST(FlushProfileTest, TextPutsGlobalFirstWithPercentAndCumulativePercent) {
  std::string text = RenderFlushProfileText(BuildFlushProfiles(TwoArms(), {"c1", "c512"}, {}));
  // c1: 780 of 800 full flushes = 97.50 %; the 1-page row then reaches 100 %.
  EXPECT_THAT(text, HasSubstr(" GLOBAL:     97.50%   97.50%"));
  EXPECT_THAT(text, HasSubstr("      1:      2.50%  100.00%      2.50%    2.50%"));
  EXPECT_THAT(text, HasSubstr(" 65-128:      0.00%  100.00%     97.50%  100.00%"));
  EXPECT_LT(text.find("GLOBAL"), text.find("65-128"));
  EXPECT_THAT(text, HasSubstr("3 local mm shootdown"));
  EXPECT_THAT(text, HasSubstr("lost"));
}

TEST(FlushProfileTest, JsonCarriesBucketsAndReasonsPerArm) {
  std::string json = RenderFlushProfileJson(BuildFlushProfiles(TwoArms(), {}, {}));
  EXPECT_THAT(json, HasSubstr(R"({"bucket":"-1","events":780,"percent":97.5,)"));
  EXPECT_THAT(json, HasSubstr(R"({"code":3,"name":"local mm shootdown","events":300})"));
  EXPECT_THAT(json, HasSubstr(R"("arm":"c512")"));
}

TEST(FlushProfileTest, SaysHowToGetAProfileWhenThereIsNone) {
  EXPECT_THAT(RenderFlushProfileText({}), HasSubstr("monitors: [flush_profile]"));
}

}  // namespace
}  // namespace tlbfleet::report
