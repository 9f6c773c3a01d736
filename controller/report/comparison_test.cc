#include "controller/report/comparison.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "controller/report/compare.h"
#include "controller/report/render.h"
#include "controller/stats/bootstrap.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

// The comparison as the one message every format renders.
v1::Report Titled(const Comparison& c, const std::string& title = "") {
  v1::Report report = ReportFromComparison(c);
  report.set_title(title);
  return report;
}

using stats::Direction;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// boots x iterations values around `mean`: boot b adds between * (b - (boots-1)/2) and
// iteration i adds within * (i - (iterations-1)/2), so every spread is known exactly.
// Boots are named <boot_prefix><b>: arms with the same prefix were measured in the same
// boots (interleaved, the paired design), arms with different prefixes in boots of their own.
void Add(std::vector<Observation>* out, const std::string& arm, double mean, int boots,
         int iterations, double between, double within,
         Direction direction = Direction::kHigherIsBetter, const std::string& param = "1",
         const std::string& boot_prefix = "boot") {
  for (int b = 0; b < boots; ++b) {
    for (int i = 0; i < iterations; ++i) {
      Observation o;
      o.arm = arm;
      o.boot = boot_prefix + std::to_string(b);
      o.param_name = "threads";
      o.param_value = param;
      o.iteration = static_cast<uint32_t>(i);
      o.metric = "ops";
      o.unit = "ops/s";
      o.direction = direction;
      o.value = mean + between * (b - (boots - 1) / 2.0) + within * (i - (iterations - 1) / 2.0);
      out->push_back(o);
    }
  }
}

const ArmResult& Arm(const Comparison& c, size_t group, size_t arm) {
  return c.groups.at(group).arms.at(arm);
}

TEST(ParseCsvTest, HeaderAnyOrderQuotingAndParams) {
  const std::string csv =
      "value,metric,arm,boot,iteration,param,extra\n"
      "1.5,ops,\"a,b\",x,0,threads=4,ignored\r\n"
      "\n"
      "2.5,ops,base,y,1,4,\n"
      "nan,ops,base,y,2,4,\n";
  absl::StatusOr<std::vector<Observation>> obs =
      ParseObservationsCsv(csv, Direction::kLowerIsBetter);
  ASSERT_TRUE(obs.ok()) << obs.status();
  ASSERT_EQ(obs->size(), 3u);
  EXPECT_EQ((*obs)[0].arm, "a,b");
  EXPECT_EQ((*obs)[0].param_name, "threads");
  EXPECT_EQ((*obs)[0].param_value, "4");
  EXPECT_EQ((*obs)[0].boot, "x");
  EXPECT_EQ((*obs)[0].direction, Direction::kLowerIsBetter);
  EXPECT_DOUBLE_EQ((*obs)[0].value, 1.5);
  EXPECT_EQ((*obs)[1].param_name, "");
  EXPECT_EQ((*obs)[1].param_value, "4");
  EXPECT_EQ((*obs)[1].iteration, 1u);
  EXPECT_TRUE(std::isnan((*obs)[2].value));
}

TEST(ParseCsvTest, HeaderNamesAreCaseInsensitive) {
  absl::StatusOr<std::vector<Observation>> obs =
      ParseObservationsCsv("Arm,BOOT,Param,Iteration,Metric,VALUE\nmmap,0,threads=1,0,ops,5\n",
                           Direction::kHigherIsBetter);
  ASSERT_TRUE(obs.ok()) << obs.status();
  ASSERT_EQ(obs->size(), 1u);
  EXPECT_EQ((*obs)[0].arm, "mmap");
  EXPECT_EQ((*obs)[0].value, 5);
}

TEST(ParseCsvTest, ErrorsNameTheLine) {
  auto error = [](const std::string& csv) {
    absl::StatusOr<std::vector<Observation>> obs =
        ParseObservationsCsv(csv, Direction::kHigherIsBetter);
    EXPECT_EQ(obs.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(obs.status().message());
  };
  EXPECT_THAT(error(""), HasSubstr("no header"));
  EXPECT_THAT(error("arm,boot,param,metric,value\n"), HasSubstr("\"iteration\""));
  const std::string header = "arm,boot,param,iteration,metric,value\n";
  EXPECT_THAT(error(header + "a,0,1,0,ops,fast\n"), HasSubstr("line 2: value \"fast\""));
  EXPECT_THAT(error(header + "a,0,1,0,ops\n"), HasSubstr("line 2"));
  EXPECT_THAT(error(header + "a,0,1,x,ops,1\n"), HasSubstr("iteration"));
  EXPECT_THAT(error(header + "\"a,0,1,0,ops,1\n"), HasSubstr("line 2: a stray double quote"));
  EXPECT_THAT(error(header + ",0,1,0,ops,1\n"), HasSubstr("must not be empty"));
}

TEST(ObservationsFromSamplesTest, BootDirectionAndSeries) {
  std::vector<v1::Sample> samples(3);
  samples[0].set_arm("a");
  samples[0].set_boot_id("boot-1");
  samples[0].set_param_name("threads");
  samples[0].set_param_value("2");
  samples[0].set_iteration(4);
  samples[0].set_metric("lat");
  samples[0].set_unit("us");
  samples[0].set_better(v1::BETTER_LOWER);
  samples[0].set_value(7.5);
  samples[1] = samples[0];
  samples[1].set_series("thread0");  // per-thread: left out
  samples[2] = samples[0];
  samples[2].set_better(v1::BETTER_UNSPECIFIED);
  const std::vector<Observation> obs = ObservationsFromSamples(samples);
  ASSERT_EQ(obs.size(), 2u);
  EXPECT_EQ(obs[0].boot, "boot-1");
  EXPECT_EQ(obs[0].param_name, "threads");
  EXPECT_EQ(obs[0].param_value, "2");
  EXPECT_EQ(obs[0].iteration, 4u);
  EXPECT_EQ(obs[0].unit, "us");
  EXPECT_EQ(obs[0].direction, Direction::kLowerIsBetter);
  EXPECT_DOUBLE_EQ(obs[0].value, 7.5);
  EXPECT_EQ(obs[1].direction, Direction::kHigherIsBetter);
}

TEST(CompareTest, ArmOrderAndBaseline) {
  std::vector<Observation> obs;
  Add(&obs, "x", 100, 2, 3, 1, 1);
  Add(&obs, "y", 110, 2, 3, 1, 1);
  CompareOptions options;
  absl::StatusOr<Comparison> c = Compare(obs, options);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->arms, ElementsAre("x", "y"));
  options.baseline = "y";
  c = Compare(obs, options);
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c->arms, ElementsAre("y", "x"));
  EXPECT_EQ(Arm(*c, 0, 0).verdict, Verdict::kBaseline);
  options.baseline = "z";
  EXPECT_EQ(Compare(obs, options).status().code(), absl::StatusCode::kInvalidArgument);
  options.baseline = "";
  options.arm_order = {"x", "x"};
  EXPECT_EQ(Compare(obs, options).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Compare({}, CompareOptions{}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CompareTest, VerdictsFollowTheRatioTest) {
  std::vector<Observation> obs;
  Add(&obs, "base", 1000, 5, 10, 2, 1);
  Add(&obs, "faster", 1050, 5, 10, 2, 1);   // +5 %, tight
  Add(&obs, "slower", 950, 5, 10, 2, 1);    // -5 %
  Add(&obs, "equal", 1000.5, 5, 10, 2, 1);  // +0.05 %, within 1 %
  Add(&obs, "noisy", 1010, 5, 10, 60, 1);   // +1 %, but boots vary by 12 %
  absl::StatusOr<Comparison> c = Compare(obs, CompareOptions{});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Arm(*c, 0, 1).verdict, Verdict::kBetter);
  EXPECT_EQ(Arm(*c, 0, 2).verdict, Verdict::kWorse);
  EXPECT_EQ(Arm(*c, 0, 3).verdict, Verdict::kSame);
  EXPECT_EQ(Arm(*c, 0, 4).verdict, Verdict::kUnknown);
  EXPECT_TRUE(Arm(*c, 0, 1).significant);
  EXPECT_NEAR(*Arm(*c, 0, 1).pct_diff, 5, 0.01);
  EXPECT_STREQ(Arm(*c, 0, 1).ratio_ci_method, "paired t");
  EXPECT_EQ(Arm(*c, 0, 1).test.design, stats::Design::kPairedBoots);
  EXPECT_EQ(c->rows, 4u);
  EXPECT_THAT(Arm(*c, 0, 4).notes,
              testing::Contains(HasSubstr("% of this arm's variance is between boots: add boots, "
                                          "not iterations")));
  EXPECT_THAT(Arm(*c, 0, 4).notes, testing::Contains(HasSubstr(" per boot, ")));
}

// Two kernels, one boot each, 30 % apart with tight iterations: the iterations alone would
// call it "better" with a tiny p, but nothing measures how much two boots differ, so the row
// has no verdict, takes no part in the adjustment, and says what to measure.
TEST(CompareTest, OneBootPerArmOfItsOwnHasNoVerdict) {
  std::vector<Observation> obs;
  for (uint32_t i = 0; i < 10; ++i) {
    obs.push_back(
        {"old", "boot-a", "", "", i, "ops", "", stats::Direction::kHigherIsBetter, 1000.0 + i});
    obs.push_back(
        {"new", "boot-b", "", "", i, "ops", "", stats::Direction::kHigherIsBetter, 1300.0 + i});
  }
  absl::StatusOr<Comparison> c = Compare(obs, CompareOptions{});
  ASSERT_TRUE(c.ok()) << c.status();
  const ArmResult& arm = Arm(*c, 0, 1);
  ASSERT_TRUE(arm.test.p.has_value());
  EXPECT_LT(*arm.test.p, 1e-6);
  EXPECT_EQ(arm.verdict, Verdict::kUnknown);
  EXPECT_FALSE(arm.significant);
  EXPECT_EQ(c->rows, 0u);
  EXPECT_THAT(arm.notes, testing::Contains(HasSubstr("each arm was measured in one boot of its "
                                                     "own")));
  // The same values in one shared boot are a within-boot "better".
  for (Observation& o : obs) o.boot = "boot-a";
  c = Compare(obs, CompareOptions{});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Arm(*c, 0, 1).verdict, Verdict::kBetter);
}

TEST(CompareTest, UnpairedBootsAreTheUnitsPairedBootsCancelWhatTheArmsShare) {
  // Boot means 970/1000/1030 against 980/1010/1040. On boots of their own (two kernels) the
  // three boot means per arm cannot tell 1 % from boot noise, although 150 samples per arm
  // make the per-sample Welch test "significant".
  std::vector<Observation> obs;
  Add(&obs, "base", 1000, 3, 50, 30, 0.1, Direction::kHigherIsBetter, "1", "k1-");
  Add(&obs, "new", 1010, 3, 50, 30, 0.1, Direction::kHigherIsBetter, "1", "k2-");
  absl::StatusOr<Comparison> c = Compare(obs, CompareOptions{});
  ASSERT_TRUE(c.ok());
  const ArmResult& unpaired = Arm(*c, 0, 1);
  EXPECT_EQ(unpaired.test.design, stats::Design::kUnpairedBoots);
  EXPECT_EQ(unpaired.test.scope, stats::Scope::kAcrossBoots);
  EXPECT_LT(*unpaired.welch.p, 0.001);
  EXPECT_GT(*unpaired.significance_p, 0.5);
  EXPECT_FALSE(unpaired.significant);
  EXPECT_EQ(unpaired.verdict, Verdict::kUnknown);
  EXPECT_THAT(unpaired.notes,
              testing::Contains(HasSubstr("100 % of this arm's variance is between boots")));
  EXPECT_THAT(unpaired.notes, testing::Contains(HasSubstr("pooled Welch, Mann–Whitney and "
                                                          "Hodges–Lehmann figures take all 150 + "
                                                          "150 samples as independent")));
  // The same values with both arms in the same three boots (interleaved): each boot's slow
  // or fast state hits both arms and cancels in the per-boot ratio.
  obs.clear();
  Add(&obs, "base", 1000, 3, 50, 30, 0.1);
  Add(&obs, "new", 1010, 3, 50, 30, 0.1);
  c = Compare(obs, CompareOptions{});
  ASSERT_TRUE(c.ok());
  const ArmResult& paired = Arm(*c, 0, 1);
  EXPECT_EQ(paired.test.design, stats::Design::kPairedBoots);
  EXPECT_EQ(paired.verdict, Verdict::kBetter);
  EXPECT_LT(*paired.test.p, 0.01);
  EXPECT_THAT(paired.notes, testing::Contains(HasSubstr("the test pairs them")));
  // Asked not to pair: back to the unpaired answer.
  CompareOptions unpaired_options;
  unpaired_options.pairing = stats::Pairing::kNone;
  c = Compare(obs, unpaired_options);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Arm(*c, 0, 1).verdict, Verdict::kUnknown);
}

TEST(CompareTest, PairingDisjointBootsIsRefusedNamingTheOptionTheArmsAndTheRow) {
  std::vector<Observation> obs;
  Add(&obs, "base", 1000, 3, 4, 30, 1, Direction::kHigherIsBetter, "1", "k1-");
  Add(&obs, "new", 1010, 3, 4, 30, 1, Direction::kHigherIsBetter, "1", "k2-");
  CompareOptions options;
  options.pairing = stats::Pairing::kBoots;
  absl::StatusOr<Comparison> c = Compare(obs, options);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), testing::StartsWith("pairing: "));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("(arms base and new) at ops threads=1"));
}

TEST(CompareTest, InvalidOptionsAreRefusedNamingTheOption) {
  std::vector<Observation> obs;
  Add(&obs, "base", 1000, 1, 4, 0, 1);
  for (double margin : {0.0, -0.01, 1.0, 1.5, std::nan("")}) {
    CompareOptions options;
    options.margin = margin;
    absl::StatusOr<Comparison> c = Compare(obs, options);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << margin;
    EXPECT_THAT(std::string(c.status().message()), testing::StartsWith("margin: ")) << margin;
  }
  for (double level : {0.0, 1.0, -0.5, 95.0}) {
    CompareOptions options;
    options.level = level;
    absl::StatusOr<Comparison> c = Compare(obs, options);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << level;
    EXPECT_THAT(std::string(c.status().message()), testing::StartsWith("level: ")) << level;
  }
  CompareOptions fine;
  fine.margin = 0.05;
  fine.level = 0.9;
  EXPECT_TRUE(Compare(obs, fine).ok());
}

// Ten rows, each with p just under 0.05 on its own: nothing survives Benjamini–Hochberg
// across the ten, and the notes say why and how to see each row alone.
TEST(CompareTest, VerdictsAreAdjustedAcrossRowsUnlessAskedNotTo) {
  std::vector<Observation> obs;
  for (int k = 0; k < 10; ++k) {
    const std::string param = std::to_string(k + 1);
    for (int i = 0; i < 5; ++i) {
      // Two arms of 5 iterations, one boot: +1 % with enough noise for p ~ 0.03 (Welch on
      // the logs: t = 0.00995 / (0.0060 * sqrt(2 / 5)) = 2.6, df 8).
      for (const auto& [arm, mean] : {std::pair{"base", 100.0}, std::pair{"new", 101.0}}) {
        Observation o;
        o.arm = arm;
        o.boot = "b";
        o.param_name = "threads";
        o.param_value = param;
        o.iteration = static_cast<uint32_t>(i);
        o.metric = "ops";
        o.value = mean * (1 + 0.0038 * (i - 2));
        obs.push_back(o);
      }
    }
  }
  absl::StatusOr<Comparison> adjusted = Compare(obs, CompareOptions{});
  CompareOptions options;
  options.adjust = false;
  absl::StatusOr<Comparison> alone = Compare(obs, options);
  ASSERT_TRUE(adjusted.ok() && alone.ok());
  EXPECT_EQ(adjusted->rows, 10u);
  for (size_t g = 0; g < 10; ++g) {
    const ArmResult& a = Arm(*adjusted, g, 1);
    const ArmResult& u = Arm(*alone, g, 1);
    ASSERT_LT(*a.test.p, 0.05) << g;  // the premise: each row alone is "better"
    EXPECT_EQ(u.verdict, Verdict::kBetter) << g;
    EXPECT_EQ(*u.q, *u.test.p);
    EXPECT_DOUBLE_EQ(*a.q, *a.test.p);  // all ten equal p: BH keeps them all (q = p)
    EXPECT_EQ(a.verdict, Verdict::kBetter);
  }
  // Now only one of them is a real change, the other nine are noise (p near 1).
  for (Observation& o : obs) {
    if (o.param_value != "1" && o.arm == "new") o.value /= 1.01;
  }
  adjusted = Compare(obs, CompareOptions{});
  alone = Compare(obs, options);
  ASSERT_TRUE(adjusted.ok() && alone.ok());
  EXPECT_EQ(Arm(*alone, 0, 1).verdict, Verdict::kBetter);
  EXPECT_EQ(Arm(*adjusted, 0, 1).verdict, Verdict::kUnknown);
  EXPECT_THAT(Arm(*adjusted, 0, 1).notes[0], HasSubstr("across the 10 rows (Benjamini–Hochberg); "
                                                       "--unadjusted judges each row alone"));
  EXPECT_GT(*Arm(*adjusted, 0, 1).adjusted_ci_high - *Arm(*adjusted, 0, 1).adjusted_ci_low,
            *Arm(*adjusted, 0, 1).ratio_ci_high - *Arm(*adjusted, 0, 1).ratio_ci_low);
  EXPECT_LT(*Arm(*adjusted, 0, 1).adjusted_ci_low, 1);  // the adjusted interval agrees
}

TEST(CompareTest, LowerIsBetterFlipsTheVerdict) {
  std::vector<Observation> obs;
  Add(&obs, "base", 100, 4, 5, 0.5, 0.5, Direction::kLowerIsBetter);
  Add(&obs, "new", 90, 4, 5, 0.5, 0.5, Direction::kLowerIsBetter);
  absl::StatusOr<Comparison> c = Compare(obs, CompareOptions{});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Arm(*c, 0, 1).verdict, Verdict::kBetter);
  EXPECT_NEAR(*Arm(*c, 0, 1).pct_diff, 10, 1e-9);  // Amean, 100 - 90/100*100
  EXPECT_LT(*Arm(*c, 0, 1).ratio_ci_high, 1);
}

TEST(CompareTest, DegenerateArmsGiveUnknownNotCrash) {
  std::vector<Observation> obs;
  Add(&obs, "base", 5, 1, 1, 0, 0);  // one sample
  Add(&obs, "new", 5, 1, 1, 0, 0);
  Observation nan = obs.back();
  nan.arm = "nan";
  nan.value = std::nan("");
  obs.push_back(nan);
  absl::StatusOr<Comparison> c = Compare(obs, CompareOptions{});
  ASSERT_TRUE(c.ok());
  const ArmResult& one = Arm(*c, 0, 1);
  EXPECT_FALSE(one.welch.p.has_value());
  EXPECT_FALSE(one.significant);
  EXPECT_EQ(Arm(*c, 0, 2).verdict, Verdict::kUnknown);
  EXPECT_FALSE(Arm(*c, 0, 2).test.ratio.has_value());
  const std::string json = RenderReportJson(Titled(*c));
  EXPECT_THAT(json, Not(HasSubstr(": nan")));
  EXPECT_THAT(json, Not(HasSubstr(": inf")));
  EXPECT_THAT(json, HasSubstr("\"arm\": \"nan\",\n     \"param\": \"threads=1\""));
  EXPECT_THAT(RenderReportText(Titled(*c)), HasSubstr("NaN (    NaN%)"));
}

TEST(CompareTest, EmptyArmsAndConstantArms) {
  std::vector<Observation> obs;
  Add(&obs, "flat", 7, 2, 3, 0, 0);  // every value 7
  Add(&obs, "flat2", 7, 2, 3, 0, 0);
  CompareOptions options;
  options.arm_order = {"missing", "flat", "flat2"};  // the baseline has no samples
  absl::StatusOr<Comparison> c = Compare(obs, options);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(Arm(*c, 0, 0).n, 0u);
  EXPECT_EQ(Arm(*c, 0, 0).summary.why_undefined, "no samples");
  EXPECT_EQ(Arm(*c, 0, 1).verdict, Verdict::kUnknown);
  EXPECT_EQ(Arm(*c, 0, 1).test.why_undefined, "an arm has no samples");
  EXPECT_THAT(RenderReportText(Titled(*c)),
              HasSubstr("Hmean      threads=1          NaN (    NaN%)         7.00 (    NaN%)"));

  options.arm_order = {"flat", "flat2"};
  c = Compare(obs, options);
  ASSERT_TRUE(c.ok());
  const ArmResult& flat = Arm(*c, 0, 1);
  EXPECT_FALSE(flat.mwu.p.has_value());  // every value tied
  EXPECT_FALSE(flat.welch.p.has_value());
  EXPECT_FALSE(flat.significant);
  EXPECT_STREQ(flat.ratio_ci_method, "paired t");
  EXPECT_EQ(flat.verdict, Verdict::kSame);           // no spread at all, and no change
  EXPECT_FALSE(flat.bootstrap.bca_low.has_value());  // no jackknife spread
  EXPECT_DOUBLE_EQ(*flat.hl.shift, 0);
}

TEST(RenderTest, JsonHasEveryFieldAndNullComparisonsForTheBaseline) {
  std::vector<Observation> obs;
  Add(&obs, "base", 100, 3, 4, 1, 1);
  Add(&obs, "new", 103, 3, 4, 1, 1);
  absl::StatusOr<Comparison> c = Compare(obs, CompareOptions{});
  ASSERT_TRUE(c.ok());
  // JSON is the Report message in protobuf's JSON mapping: it parses back to the same
  // message, and each record has every field, the baseline's comparison fields unset.
  const std::string json = RenderReportJson(Titled(*c));
  v1::Report parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok()) << json;
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, Titled(*c)));
  ASSERT_EQ(parsed.groups_size(), 1);
  ASSERT_EQ(parsed.groups(0).records_size(), 2);
  const v1::Report::Record& base = parsed.groups(0).records(0);
  const v1::Report::Record& other = parsed.groups(0).records(1);
  EXPECT_EQ(base.arm(), "base");
  EXPECT_EQ(base.param(), "threads=1");
  EXPECT_EQ(base.n(), 12u);
  EXPECT_EQ(base.boots(), 3u);
  EXPECT_TRUE(base.has_hmean() && base.has_gmean() && base.has_stddev() && base.has_bamean95());
  EXPECT_FALSE(base.has_pct_diff());
  EXPECT_FALSE(base.has_welch_p());
  EXPECT_FALSE(base.has_ratio_ci_low());
  EXPECT_FALSE(base.has_verdict());
  EXPECT_EQ(other.verdict(), "better");
  for (bool has :
       {other.has_pct_diff(), other.has_welch_t(), other.has_welch_df(), other.has_welch_p(),
        other.has_mwu_u(), other.has_mwu_p(), other.has_hl_shift(), other.has_hl_ci_low(),
        other.has_hl_ci_high(), other.has_ratio(), other.has_ratio_ci_low(),
        other.has_ratio_ci_high(), other.has_var_between_boots(), other.has_var_within_boots(),
        other.has_recommend_iterations(), other.has_recommend_boots()}) {
    EXPECT_TRUE(has);
  }

  const std::string csv = RenderReportCsv(Titled(*c));
  EXPECT_THAT(csv, testing::StartsWith("arm,param,param_name,param_value,metric,unit,better,n,"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
}

TEST(RenderTest, TextTableMarksSignificantDifferences) {
  std::vector<Observation> obs;
  for (double v : {6395.44, 6405.44, 6400.0}) {
    obs.push_back(
        {"mmap", "", "threads", "1", 0, "records", "records/s", Direction::kHigherIsBetter, v});
  }
  for (double v : {6789.09, 6799.09, 6794.0}) {
    obs.push_back(
        {"malloc", "", "threads", "1", 0, "records", "records/s", Direction::kHigherIsBetter, v});
  }
  absl::StatusOr<Comparison> c = Compare(obs, CompareOptions{});
  ASSERT_TRUE(c.ok());
  const std::string text = RenderReportText(Titled(*c, "ebizzy"));
  const std::string kTable =
      "ebizzy\n"
      "\n"
      "records (records/s, higher is better)\n"
      "                                        mmap                  malloc\n"
      "Min        threads=1      6395.44 (   0.00%)      6789.09 (   6.16%)\n"
      "Hmean      threads=1      6400.29 (   0.00%)      6794.06 *   6.15%*\n"
      "Stddev     threads=1         5.01 (   0.00%)         5.00 (   0.12%)\n"
      "CoeffVar   threads=1         0.08 (   0.00%)         0.07 (   5.91%)\n"
      "Max        threads=1      6405.44 (   0.00%)      6799.09 (   6.15%)\n"
      "BAmean-99  threads=1      6402.72 (   0.00%)      6796.55 (   6.15%)\n"
      "BAmean-95  threads=1      6402.72 (   0.00%)      6796.55 (   6.15%)\n"
      "\n"
      "Verdicts: ratio of geometric means, other / baseline (not the Hmean/Amean above), 95 % "
      "intervals\n";
  EXPECT_EQ(text.substr(0, kTable.size()), kTable) << text;
  EXPECT_THAT(text, HasSubstr("threads=1  malloc  better  ratio 1.0615"));
  EXPECT_THAT(text, HasSubstr("within-boot\n"));
  EXPECT_THAT(text, HasSubstr("within one boot: both arms were measured in one boot, so this "
                              "speaks for that boot, not for the kernel"));
}

}  // namespace
}  // namespace tlbfleet::report

namespace tlbfleet::report {
namespace {

std::string ReadFixture(const std::string& name) {
  // This file is controller/report/comparison_test.cc; fixtures live under tests/.
  const std::string path =
      std::string(__FILE__).substr(0, std::string(__FILE__).rfind("/controller/")) +
      "/tests/fixtures/stats/" + name;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << path;
  return text.str();
}

// The figures docs/statistics.md quotes from the real ebizzy run.
TEST(WorkedExampleTest, EbizzyFiguresInTheDocs) {
  absl::StatusOr<std::vector<Observation>> obs =
      ParseObservationsCsv(ReadFixture("ebizzy-mmap-vs-malloc.csv"), Direction::kHigherIsBetter);
  ASSERT_TRUE(obs.ok()) << obs.status();
  absl::StatusOr<Comparison> c = Compare(*obs, CompareOptions{});
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->groups.size(), 2u);
  const ArmResult& malloc1 = Arm(*c, 0, 1);
  EXPECT_EQ(malloc1.verdict, Verdict::kBetter);
  EXPECT_NEAR(*malloc1.pct_diff, 39.89, 0.005);
  EXPECT_NEAR(*malloc1.welch.p, 0.009844, 5e-7);
  EXPECT_DOUBLE_EQ(*malloc1.mwu.u, 87);
  EXPECT_NEAR(*malloc1.mwu.p, 0.005795, 5e-7);
  // The verdict's test, Welch on the log iterations (scipy.stats.ttest_ind on np.log of the
  // values: p 0.010968, ratio of geometric means 1.36148 [1.08498, 1.70846]).
  EXPECT_EQ(malloc1.test.design, stats::Design::kUnpairedIterations);
  EXPECT_EQ(malloc1.test.scope, stats::Scope::kWithinBoot);
  EXPECT_NEAR(*malloc1.test.p, 0.010968, 5e-7);
  EXPECT_NEAR(*malloc1.test.ratio, 1.36148, 5e-6);
  EXPECT_NEAR(*malloc1.ratio_ci_low, 1.08498, 5e-6);
  EXPECT_NEAR(*malloc1.ratio_ci_high, 1.70846, 5e-6);
  EXPECT_NEAR(*malloc1.q, 0.019028, 5e-7);  // BH over the 2 rows: max(2 p1, p2)
  const ArmResult& malloc2 = Arm(*c, 1, 1);
  EXPECT_EQ(malloc2.verdict, Verdict::kBetter);
  EXPECT_NEAR(*malloc2.test.p, 0.019028, 5e-7);
  EXPECT_NEAR(*malloc2.ratio_ci_low, 1.04211, 5e-6);
  EXPECT_THAT(RenderReportText(Titled(*c)),
              HasSubstr("Hmean      threads=1      3648.44 (   0.00%)      5103.89 *  39.89%*\n"));
}

// The real five-boot run in the microVM lab that docs/statistics.md quotes.
TEST(WorkedExampleTest, VmLabFiveBootFiguresInTheDocs) {
  absl::StatusOr<std::vector<Observation>> obs = ParseObservationsCsv(
      ReadFixture("ebizzy-ceiling-vm-5-boots.csv"), Direction::kHigherIsBetter);
  ASSERT_TRUE(obs.ok()) << obs.status();
  absl::StatusOr<Comparison> c = Compare(*obs, CompareOptions{});
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->groups.size(), 1u);
  const ArmResult& base = Arm(*c, 0, 0);
  const ArmResult& high = Arm(*c, 0, 1);
  EXPECT_EQ(base.boots, 5u);
  EXPECT_EQ(high.boots, 5u);
  EXPECT_EQ(high.n, 20u);
  EXPECT_NEAR(*base.variance.between, 19.134, 5e-3);
  EXPECT_NEAR(*base.variance.within, 148.47, 5e-3);
  EXPECT_DOUBLE_EQ(*high.variance.between, 0);  // clipped: S2^2 < S1^2 / r1
  EXPECT_EQ(high.verdict, Verdict::kUnknown);
  // Both arms ran in the same 5 boots: paired t on the per-boot log ratios
  // (scipy.stats.ttest_rel: p 0.45878; ratio 1.01250 [0.97076, 1.05603]).
  EXPECT_EQ(high.test.design, stats::Design::kPairedBoots);
  EXPECT_NEAR(*high.test.ratio, 1.01250, 5e-6);
  EXPECT_NEAR(*high.ratio_ci_low, 0.97076, 5e-6);
  EXPECT_NEAR(*high.ratio_ci_high, 1.05603, 5e-6);
  EXPECT_NEAR(*high.test.p, 0.45878, 5e-6);
  EXPECT_NEAR(*high.welch.p, 0.4024, 5e-5);
  EXPECT_NEAR(*high.mwu.p, 0.01234, 5e-6);
}

// The real six-boot run in the microVM lab that docs/statistics.md quotes: paired and
// unpaired side by side (scipy.stats.ttest_rel / ttest_ind on the per-boot log means).
TEST(WorkedExampleTest, VmLabSixBootsPairedAgainstUnpaired) {
  absl::StatusOr<std::vector<Observation>> obs = ParseObservationsCsv(
      ReadFixture("ebizzy-ceiling-vm-6-boots.csv"), Direction::kHigherIsBetter);
  ASSERT_TRUE(obs.ok()) << obs.status();
  absl::StatusOr<Comparison> paired = Compare(*obs, CompareOptions{});
  CompareOptions none;
  none.pairing = stats::Pairing::kNone;
  absl::StatusOr<Comparison> unpaired = Compare(*obs, none);
  ASSERT_TRUE(paired.ok() && unpaired.ok());
  const ArmResult& p = Arm(*paired, 0, 1);
  const ArmResult& u = Arm(*unpaired, 0, 1);
  EXPECT_EQ(p.test.design, stats::Design::kPairedBoots);
  EXPECT_EQ(u.test.design, stats::Design::kUnpairedBoots);
  EXPECT_NEAR(*p.test.ratio, 1.07850, 5e-6);
  EXPECT_NEAR(*u.test.ratio, 1.07850, 5e-6);  // the same estimate, another interval
  EXPECT_NEAR(*p.ratio_ci_low, 0.90126, 5e-6);
  EXPECT_NEAR(*p.ratio_ci_high, 1.29059, 5e-6);
  EXPECT_NEAR(*p.test.p, 0.32862, 5e-6);
  EXPECT_NEAR(*u.ratio_ci_low, 0.78771, 5e-6);
  EXPECT_NEAR(*u.ratio_ci_high, 1.47664, 5e-6);
  EXPECT_NEAR(*u.test.p, 0.59876, 5e-6);
  EXPECT_EQ(p.verdict, Verdict::kUnknown);
  EXPECT_THAT(RenderReportText(Titled(*paired)),
              HasSubstr("ceiling-512  unknown  ratio 1.0785 [0.9013, 1.2906]  p 0.3286  q 0.3286  "
                        "across-boots, paired over 6 boots\n"));
  EXPECT_THAT(RenderReportText(Titled(*unpaired)),
              HasSubstr("ratio 1.0785 [0.7877, 1.4766]  p 0.5988  q 0.5988  across-boots, 6 + 6 "
                        "boots\n"));
}

// The one-boot lab run: pairing by iteration index made the interval wider there
// (docs/statistics.md#pairing-by-iteration-index-measured).
TEST(WorkedExampleTest, VmLabOneBootPairedByIteration) {
  absl::StatusOr<std::vector<Observation>> obs =
      ParseObservationsCsv(ReadFixture("ebizzy-ceiling-vm-1-boot.csv"), Direction::kHigherIsBetter);
  ASSERT_TRUE(obs.ok()) << obs.status();
  CompareOptions by_iteration;
  by_iteration.pairing = stats::Pairing::kIterations;
  absl::StatusOr<Comparison> a = Compare(*obs, CompareOptions{});
  absl::StatusOr<Comparison> b = Compare(*obs, by_iteration);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Arm(*a, 0, 1).test.design, stats::Design::kUnpairedIterations);
  EXPECT_EQ(Arm(*b, 0, 1).test.design, stats::Design::kPairedIterations);
  EXPECT_NEAR(*Arm(*a, 0, 1).test.p, 0.80191, 5e-6);
  EXPECT_NEAR(*Arm(*b, 0, 1).test.p, 0.81363, 5e-6);
  EXPECT_NEAR(*Arm(*b, 0, 1).ratio_ci_low, 0.72434, 5e-6);
  EXPECT_NEAR(*Arm(*b, 0, 1).ratio_ci_high, 1.29692, 5e-6);
  EXPECT_GT(*Arm(*b, 0, 1).ratio_ci_high - *Arm(*b, 0, 1).ratio_ci_low,
            *Arm(*a, 0, 1).ratio_ci_high - *Arm(*a, 0, 1).ratio_ci_low);
}

TEST(WorkedExampleTest, SimulatedBootsFiguresInTheDocs) {
  absl::StatusOr<std::vector<Observation>> obs =
      ParseObservationsCsv(ReadFixture("simulated-boots.csv"), Direction::kHigherIsBetter);
  ASSERT_TRUE(obs.ok()) << obs.status();
  absl::StatusOr<Comparison> c = Compare(*obs, CompareOptions{});
  ASSERT_TRUE(c.ok());
  const std::string text = RenderReportText(Titled(*c));
  EXPECT_THAT(text, HasSubstr("threads=1  mmap  baseline\n    - 93 % of this arm's variance is "
                              "between boots: add boots, not iterations\n"));
  EXPECT_THAT(text, HasSubstr("threads=1  malloc  better  ratio 1.0325 [1.0168, 1.0485]  p "
                              "0.001387  q 0.001387  across-boots, 5 + 5 boots\n"));
  EXPECT_THAT(text, HasSubstr("    - to detect a ±1.00 % change, or show there is none, with 80 % "
                              "power: 1 iteration per boot, 21 boots per arm"));
  EXPECT_EQ(Arm(*c, 0, 1).test.design, stats::Design::kUnpairedBoots);
}

}  // namespace
}  // namespace tlbfleet::report
