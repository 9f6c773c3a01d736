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

TEST(FlushProfileTest, TheProtoCarriesBucketsAndReasonsPerArmAndReadsBack) {
  const std::vector<ArmFlushProfile> profiles = BuildFlushProfiles(TwoArms(), {}, {});
  ASSERT_EQ(profiles.size(), 2u);
  const v1::FlushProfile p = FlushProfileToProto(profiles[0]);
  ASSERT_GT(p.pages_size(), 0);
  EXPECT_EQ(p.pages(0).bucket(), "-1");
  EXPECT_EQ(p.pages(0).events(), 780);
  EXPECT_DOUBLE_EQ(p.pages(0).percent(), 97.5);
  bool reason = false;
  for (const auto& r : p.reasons()) {
    reason = reason || (r.code() == 3 && r.name() == "local mm shootdown" && r.events() == 300);
  }
  EXPECT_TRUE(reason);
  EXPECT_EQ(FlushProfileToProto(profiles[1]).arm(), "c512");
  // Back from the proto, the profile renders as before.
  std::vector<ArmFlushProfile> back;
  for (const ArmFlushProfile& a : profiles)
    back.push_back(FlushProfileFromProto(FlushProfileToProto(a)));
  EXPECT_EQ(RenderFlushProfileText(back), RenderFlushProfileText(profiles));
}

// What an agent with the cross table sends: ceiling 1 vs 1024 over a 128-page munmap loop.
std::vector<v1::Sample> WithCrossTable() {
  std::vector<v1::Sample> s = {
      S("c1", 1, "reason=3,pages=-1", 77),
      S("c1", 1, "reason=3,pages=1", 205),
      S("c1", 1, "reason=1,pages=-1", 63),
      S("c1", 1, "reason=4,pages=-1", 65),
      S("c1", 1, "reason=3", 282),
      S("c1", 1, "reason=1", 63),
      S("c1", 1, "reason=4", 65),
      S("c1", 1, "pages=-1", 205),
      S("c1", 1, "pages=1", 205),
      S("c1", 1, "", 0, "tlb_flush_lost"),
      S("c1024", 1, "reason=3,pages=65-128", 50),
      S("c1024", 1, "reason=3,pages=>512", 15),
      S("c1024", 1, "reason=3,pages=-1", 3),
      S("c1024", 1, "reason=3,pages=1", 211),
      S("c1024", 1, "reason=3", 279),
      S("c1024", 1, "", 12, "tlb_flush_lost"),
      // cost: two iterations of c1's full flushes
      S("c1", 1, "pages=-1,stat=mean", 1000, "tlb_flush_cost_cycles"),
      S("c1", 1, "pages=-1,stat=p90", 1500, "tlb_flush_cost_cycles"),
      S("c1", 1, "pages=-1", 10, "tlb_flush_cost_calls"),
      S("c1", 2, "pages=-1,stat=mean", 2000, "tlb_flush_cost_cycles"),
      S("c1", 2, "pages=-1,stat=p90", 2500, "tlb_flush_cost_cycles"),
      S("c1", 2, "pages=-1", 30, "tlb_flush_cost_calls"),
      S("c1024", 1, "no kprobe_events in tracefs", 1, "tlb_flush_cost_unavailable"),
      S("c1024", 1, "", 1, "tlb_flush_invlpgb"),
  };
  return s;
}

TEST(FlushProfileTest, TheTwoThousandFourteenTableIsTheLocalMmShootdownsAlone) {
  auto profiles = BuildFlushProfiles(WithCrossTable(), {"c1", "c1024"}, std::nullopt);
  ASSERT_EQ(profiles.size(), 2u);
  EXPECT_TRUE(profiles[0].HasCross());
  EXPECT_DOUBLE_EQ(profiles[0].Local().at("-1"), 77);
  EXPECT_DOUBLE_EQ(profiles[0].cross.at(1).at("-1"), 63);
  // cost: call-weighted mean (10 x 1000 + 30 x 2000) / 40; p90 the median of iterations
  EXPECT_DOUBLE_EQ(profiles[0].cost.at("-1").mean, 1750);
  EXPECT_DOUBLE_EQ(profiles[0].cost.at("-1").calls, 40);
  EXPECT_DOUBLE_EQ(profiles[0].cost.at("-1").p90, 2000);
  EXPECT_EQ(profiles[0].cost_unit, "cycles");
  EXPECT_EQ(profiles[1].lossy_iterations, 1u);
  EXPECT_TRUE(profiles[1].invlpgb);

  std::string text = RenderFlushProfileText(profiles);
  EXPECT_THAT(text, HasSubstr("local mm shootdowns (reason 3)"));
  // c1: 77 of 282 local flushes are full: 27.30 %, avg 1750 cycles; the remote ones (63)
  // and IPI sends (65) are not in this table.
  EXPECT_THAT(text, HasSubstr(" GLOBAL:     27.30%   27.30%          1750"));
  EXPECT_THAT(text, HasSubstr("avg cycles"));
  EXPECT_THAT(text, HasSubstr("4 remote IPI send"));
  EXPECT_THAT(text, HasSubstr("c1024: 12 events lost in 1 of 1 iterations"));
  EXPECT_THAT(text, HasSubstr("c1024: ran where the kernel may flush by INVLPGB broadcast"));
  EXPECT_THAT(text, HasSubstr("c1024: no cost per flush: no kprobe_events in tracefs"));

  const v1::FlushProfile c1024 = FlushProfileToProto(profiles[1]);
  EXPECT_EQ(c1024.scope(), "workload");
  const v1::FlushProfile c1 = FlushProfileToProto(profiles[0]);
  ASSERT_GT(c1.local_mm_shootdowns_size(), 0);
  EXPECT_EQ(c1.local_mm_shootdowns(0).bucket(), "-1");
  EXPECT_EQ(c1.local_mm_shootdowns(0).events(), 77);
  bool costed = false, cross = false;
  for (const v1::FlushProfile& p : {c1, c1024}) {
    for (const auto& b : p.local_mm_shootdowns()) {
      costed = costed || (b.has_calls() && b.calls() == 40 && b.cost_mean() == 1750);
    }
    for (const auto& x : p.cross()) {
      cross = cross || (x.code() == 1 && x.bucket() == "-1" && x.events() == 63);
    }
  }
  EXPECT_TRUE(costed);
  EXPECT_TRUE(cross);
  EXPECT_TRUE(c1024.invlpgb());
  std::vector<ArmFlushProfile> back = {FlushProfileFromProto(c1), FlushProfileFromProto(c1024)};
  EXPECT_EQ(RenderFlushProfileText(back), text);
}

TEST(FlushProfileTest, OldSystemWideProfilesSaySo) {
  std::string text = RenderFlushProfileText(BuildFlushProfiles(TwoArms(), {}, {}));
  EXPECT_THAT(text, HasSubstr("all events, every reason together (recorded system-wide"));
  EXPECT_EQ(FlushProfileToProto(BuildFlushProfiles(TwoArms(), {}, {})[0]).scope(), "system");
}

TEST(FlushProfileTest, FlushSizesReplayTheLocalFlushes) {
  auto profiles = BuildFlushProfiles(WithCrossTable(), {"c1", "c1024"}, std::nullopt);
  std::vector<std::string> warnings;
  absl::StatusOr<std::string> sizes = FlushSizesFromProfile(profiles[1], &warnings);
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_EQ(*sizes, "1:211,65-128:50,513-1024:15");
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_THAT(warnings[0], HasSubstr("3 full flushes left out"));
  EXPECT_THAT(warnings[1], HasSubstr("15 flushes above 512 pages"));
  auto old = BuildFlushProfiles(TwoArms(), {}, {});
  EXPECT_TRUE(absl::IsFailedPrecondition(FlushSizesFromProfile(old[0], &warnings).status()));
}

TEST(FlushProfileTest, SaysHowToGetAProfileWhenThereIsNone) {
  EXPECT_THAT(RenderFlushProfileText({}), HasSubstr("monitors: [flush_profile]"));
}

}  // namespace
}  // namespace tlbfleet::report
