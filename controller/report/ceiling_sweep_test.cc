#include "controller/report/ceiling_sweep.h"

#include "absl/strings/str_cat.h"
#include "controller/stats/bootstrap.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

using ::testing::HasSubstr;

// A sweep over 1..512 on `microarch`: throughput `low` below `knee`, `high` from it on; two
// boots of five iterations each, 0.3 % noise; a flush profile sample per iteration.
void AddSweep(const std::string& microarch, int64_t knee, double low, double high,
              std::vector<v1::Sample>* out) {
  stats::Rng rng(7);
  for (int boot = 0; boot < 2; ++boot) {
    for (int iteration = 1; iteration <= 5; ++iteration) {
      for (int64_t ceiling : {1, 2, 4, 8, 16, 33, 64, 128, 256, 512}) {
        v1::Sample s;
        s.set_arm("ebizzy");
        s.set_microarch(microarch);
        s.set_boot_id(absl::StrCat(microarch, "-boot", boot));
        s.set_param_name("ceiling");
        s.set_param_value(absl::StrCat(ceiling));
        s.set_iteration(iteration);
        s.set_metric("records_per_sec");
        s.set_unit("records/s");
        s.set_better(v1::BETTER_HIGHER);
        s.set_value((ceiling >= knee ? high : low) * (1 + 0.003 * rng.Normal()));
        out->push_back(s);
        v1::Sample flush = s;
        flush.set_metric("tlb_flush_events");
        flush.set_series(ceiling >= 128 ? "pages=65-128" : "pages=-1");
        flush.set_value(400);
        out->push_back(flush);
      }
    }
  }
}

TEST(CeilingRecommendationTest, RecommendsTheSmallestCeilingNotWorseThanTheBestPerMicroarch) {
  std::vector<v1::Sample> samples;
  AddSweep("IvyBridge", 33, 900, 1000, &samples);
  AddSweep("Zen 3", 128, 800, 1000, &samples);
  absl::StatusOr<std::vector<CeilingRecommendation>> recs = RecommendCeilings(samples);
  ASSERT_TRUE(recs.ok()) << recs.status();
  ASSERT_EQ(recs->size(), 2u);
  const CeilingRecommendation& ivy = (*recs)[0];
  EXPECT_EQ(ivy.microarch, "IvyBridge");
  EXPECT_EQ(ivy.metric, "records_per_sec");
  EXPECT_GE(ivy.best, 33);
  EXPECT_EQ(ivy.recommended, 33);
  ASSERT_EQ(ivy.values.size(), 10u);
  EXPECT_EQ(ivy.values[0].ceiling, 1);
  EXPECT_EQ(ivy.values[0].verdict, "worse");
  EXPECT_EQ(ivy.values[4].verdict, "worse");  // 16
  ASSERT_TRUE(ivy.profile.has_value());
  EXPECT_EQ(ivy.profile->pages.count("-1"), 1u);
  EXPECT_EQ(ivy.profile->pages.count("65-128"), 0u);
  const CeilingRecommendation& zen = (*recs)[1];
  EXPECT_EQ(zen.microarch, "Zen 3");
  EXPECT_EQ(zen.recommended, 128);
  EXPECT_EQ(zen.profile->pages.count("65-128"), 1u);

  const std::string text = RenderCeilingReport(*recs);
  EXPECT_THAT(text, HasSubstr("recommended ceiling for IvyBridge: 33"));
  EXPECT_THAT(text, HasSubstr("recommended ceiling for Zen 3: 128"));
  EXPECT_THAT(text, HasSubstr("<- recommended"));
  EXPECT_THAT(text, HasSubstr("flush profile at ceiling 33"));
  // The proto the report carries says the same, and reads back into the same text.
  bool found = false;
  std::vector<CeilingRecommendation> back;
  for (const CeilingRecommendation& rec : *recs) {
    const v1::CeilingRecommendation proto = CeilingRecommendationToProto(rec);
    found = found || (proto.microarch() == "Zen 3" && proto.recommended() == 128);
    back.push_back(CeilingRecommendationFromProto(proto));
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(RenderCeilingReport(back), text);
}

TEST(CeilingRecommendationTest, AFlatCurveRecommendsTheSmallestValueAndSaysHowSureItIs) {
  std::vector<v1::Sample> samples;
  AddSweep("Haswell", 1, 1000, 1000, &samples);
  absl::StatusOr<std::vector<CeilingRecommendation>> recs = RecommendCeilings(samples);
  ASSERT_TRUE(recs.ok());
  ASSERT_EQ(recs->size(), 1u);
  EXPECT_EQ((*recs)[0].recommended, 1);
  EXPECT_NE((*recs)[0].recommended_verdict, "worse");
}

TEST(CeilingRecommendationTest, SamplesOfAnotherSweepAreRefused) {
  v1::Sample s;
  s.set_param_name("threads");
  s.set_param_value("4");
  s.set_metric("records_per_sec");
  absl::StatusOr<std::vector<CeilingRecommendation>> recs = RecommendCeilings({s});
  EXPECT_EQ(recs.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tlbfleet::report
