#include "controller/report/adaptive_replay.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "controller/report/sequential.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ReadReplayFixture(const std::string& path) {
  // This file is controller/report/adaptive_replay_test.cc; fixtures live under tests/.
  const std::string full =
      std::string(__FILE__).substr(0, std::string(__FILE__).rfind("/controller/")) +
      "/tests/fixtures/" + path;
  std::ifstream in(full);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << full;
  return text.str();
}

ReplayOptions Options(uint32_t boots_min, uint32_t boots_max, uint32_t iterations,
                      double target = 0.01) {
  ReplayOptions o;
  o.adaptive.mutable_boots()->set_min(boots_min);
  o.adaptive.mutable_boots()->set_max(boots_max);
  o.adaptive.set_target_ci(target);
  o.iterations = iterations;
  return o;
}

// The samples of the first `boots` boots (by number) and `iterations` iterations of each:
// what the driver has after planning that much.
std::vector<Observation> FirstOf(const std::vector<Observation>& all, int boots, int iterations) {
  std::vector<Observation> out;
  for (const Observation& o : all) {
    const int boot = std::stoi(o.boot.substr(o.boot.find_first_of("0123456789")));
    if (boot < boots && static_cast<int>(o.iteration) < iterations) out.push_back(o);
  }
  return out;
}

// Every look of the replay is the decision DecideAdaptive takes on the comparison of the
// samples the driver would have had: the replay adds nothing of its own.
TEST(ReplayAdaptiveTest, EveryLookIsTheDriversDecisionOnTheSamplesItWouldHaveHad) {
  const std::string csv = ReadReplayFixture("stats/simulated-boots.csv");
  absl::StatusOr<ReplayResult> r =
      ReplayAdaptiveCsv(csv, stats::Direction::kHigherIsBetter, Options(2, 5, 10, 0.01));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(r->looks.empty());
  absl::StatusOr<std::vector<Observation>> all =
      ParseObservationsCsv(csv, stats::Direction::kHigherIsBetter);
  ASSERT_TRUE(all.ok());
  CompareOptions compare;
  compare.cross_checks = false;
  for (size_t i = 0; i < r->looks.size(); ++i) {
    const ReplayLook& look = r->looks[i];
    EXPECT_EQ(look.plan.boots, 2 + i);
    const std::vector<Observation> had = FirstOf(*all, static_cast<int>(look.plan.boots), 10);
    EXPECT_EQ(look.samples, had.size());
    absl::StatusOr<Comparison> c = Compare(had, compare);
    ASSERT_TRUE(c.ok());
    const AdaptiveDecision d =
        DecideAdaptive(Options(2, 5, 10).adaptive, {"records"}, *c, look.plan);
    EXPECT_EQ(look.decision.reason, d.reason) << "look " << i + 1;
    EXPECT_EQ(look.decision.action, d.action);
  }
  EXPECT_EQ(r->looks.back().decision.action, AdaptiveDecision::Action::kStop);
  EXPECT_EQ(r->samples_available, 200u);
  EXPECT_EQ(r->rows.size(), 2u);  // threads=1 and threads=4
  const std::string text = RenderReplayText(*r);
  EXPECT_THAT(text, HasSubstr("look 1: 2 boots, 10 iterations in the latest, 80 samples"));
  EXPECT_THAT(text, HasSubstr("records threads=1, arm malloc"));
  EXPECT_THAT(RenderReplayJson(*r), HasSubstr("\"samples_available\":200"));
}

// The real lab run of docs/statistics.md (ceiling 1 against 512, 6 boots of 4 iterations,
// boots numbered in the order they ran): stop: verdict decides it before the sixth boot.
TEST(ReplayAdaptiveTest, SequentialReplayOfTheLabsCeilingRun) {
  ReplayOptions o;
  o.adaptive.set_stop(v1::AdaptiveSpec::STOP_VERDICT);
  o.adaptive.mutable_boots()->set_min(2);
  o.adaptive.mutable_boots()->set_max(6);
  o.iterations = 4;
  absl::StatusOr<ReplayResult> r =
      ReplayAdaptiveCsv(ReadReplayFixture("adaptive/ebizzy-ceiling-vm-6-boots-numbered.csv"),
                        stats::Direction::kHigherIsBetter, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_TRUE(r->sequential);
  const RowOutcome& row = r->rows[0];
  EXPECT_EQ(row.label, "records_per_sec, arm ceiling-512");
  // Each look's row carries the level it was tested at, which adds up to at most alpha.
  double spent = 0;
  for (const ReplayLook& look : r->looks) {
    ASSERT_EQ(look.decision.rows.size(), 1u);
    if (!look.decision.rows[0].decided || &look == &r->looks.back()) {
      spent += look.decision.rows[0].look_alpha;
    }
  }
  EXPECT_LE(spent, 0.05 + 1e-12);
  EXPECT_THAT(RenderReplayJson(*r), HasSubstr("\"stop\":\"verdict\""));
}

TEST(ReplayAdaptiveTest, OneBootGrowsIterationsInTheDoublingSchedule) {
  ReplayOptions o;
  o.adaptive.set_stop(v1::AdaptiveSpec::STOP_VERDICT);
  o.adaptive.mutable_iterations()->set_min(5);
  o.adaptive.mutable_iterations()->set_max(10);
  absl::StatusOr<ReplayResult> r = ReplayAdaptiveCsv(
      ReadReplayFixture("stats/ebizzy-mmap-vs-malloc.csv"), stats::Direction::kHigherIsBetter, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->looks.size(), 2u);  // 5 (nothing testable yet), then 10
  EXPECT_EQ(r->looks[0].decision.action, AdaptiveDecision::Action::kAddIterations);
  EXPECT_EQ(r->looks[1].plan.iterations_per_boot, 10u);
  ASSERT_EQ(r->rows.size(), 2u);
  // mmap against malloc differs by a factor of ~2.8: decided at the first testable look.
  for (const RowOutcome& row : r->rows) EXPECT_TRUE(row.decided) << row.label;
}

// Per-row stopping, as the driver does it: threads=1 (arm b at twice the baseline) is decided
// at the first look, and neither of its arms gets another boot; threads=2 (3 % apart under 5 %
// boot-to-boot noise) goes on growing.
TEST(ReplayAdaptiveTest, ADecidedRowsSweepValueIsMeasuredNoMoreWhileTheOthersGrow) {
  std::string csv = "arm,boot,param,iteration,metric,value\n";
  const double boot_effect[] = {1.00, 1.06, 0.95, 1.04, 0.97, 1.05};
  for (int boot = 0; boot < 6; ++boot) {
    for (const char* arm : {"a", "b"}) {
      const bool b = std::string(arm) == "b";
      for (int it = 0; it < 4; ++it) {
        const double wiggle = 1 + 0.0005 * it;
        absl::StrAppend(&csv, arm, ",b", boot, ",threads=1,", it, ",records,",
                        1000 * (b ? 2.0 : 1.0) * wiggle, "\n");
        absl::StrAppend(&csv, arm, ",b", boot, ",threads=2,", it, ",records,",
                        1000 * (b ? 1.03 : 1.0) * boot_effect[(boot + (b ? 3 : 0)) % 6] * wiggle,
                        "\n");
      }
    }
  }
  ReplayOptions o;
  o.adaptive.set_stop(v1::AdaptiveSpec::STOP_VERDICT);
  o.adaptive.mutable_boots()->set_min(2);
  o.adaptive.mutable_boots()->set_max(6);
  o.iterations = 4;
  absl::StatusOr<ReplayResult> r = ReplayAdaptiveCsv(csv, stats::Direction::kHigherIsBetter, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_GE(r->looks.size(), 2u) << RenderReplayText(*r);
  ASSERT_EQ(r->rows.size(), 2u);
  const RowOutcome& one = r->rows[0].param_value == "1" ? r->rows[0] : r->rows[1];
  const RowOutcome& two = r->rows[0].param_value == "1" ? r->rows[1] : r->rows[0];
  ASSERT_EQ(one.param_value, "1") << RenderReplayText(*r);
  EXPECT_TRUE(one.decided);
  EXPECT_EQ(one.verdict, Verdict::kBetter);
  EXPECT_EQ(one.decided_round, 0u);
  EXPECT_EQ(one.arm_boots, 2u);
  EXPECT_FALSE(two.decided && two.decided_round == 0) << RenderReplayText(*r);
  // The samples the replay took at the stop: threads=1's two boots of both arms, and every
  // boot the run grew to for threads=2.
  const size_t boots = r->looks.back().plan.boots;
  EXPECT_GT(boots, 2u);
  EXPECT_EQ(r->samples_used, 2 * 2 * 4 + boots * 2 * 4) << RenderReplayText(*r);
  // Later looks' comparisons still see threads=1 with 2 boots per arm.
  for (size_t i = 1; i < r->looks.size(); ++i) {
    EXPECT_EQ(r->looks[i].samples, 2 * 2 * 4 + r->looks[i].plan.boots * 2 * 4) << "look " << i + 1;
  }
  EXPECT_THAT(RenderReplayText(*r), HasSubstr("look 1"));
  EXPECT_THAT(RenderReplayJson(*r), HasSubstr("\"decided_look\":1"));
}

constexpr char kHeader[] = "arm,boot,param,iteration,metric,value\n";

std::string Csv(const std::string& body) { return kHeader + body; }

absl::Status ReplayError(const std::string& csv, const ReplayOptions& o) {
  return ReplayAdaptiveCsv(csv, stats::Direction::kHigherIsBetter, o).status();
}

TEST(ReplayAdaptiveTest, RefusesBootsThatAreNotNumberedNamingTheLine) {
  absl::Status s =
      ReplayError(Csv("a,b1,,0,ops,1\nb,b1,,0,ops,1\na,x,,0,ops,2\n"), Options(1, 2, 1));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("line 4: boot \"x\" does not end in a number"));
  s = ReplayError(Csv("a,b1,,0,ops,1\nb,b1,,0,ops,1\na,c1,,0,ops,2\n"), Options(1, 2, 1));
  EXPECT_THAT(std::string(s.message()),
              StartsWith("line 4: boot \"c1\" of arm \"a\" has number 1 like boot "
                         "\"b1\": boots must be numbered in order"));
}

TEST(ReplayAdaptiveTest, RefusesIterationsOutOfOrderNamingTheLine) {
  absl::Status s = ReplayError(Csv("a,1,,0,ops,1\na,1,,1,ops,1\nb,1,,0,ops,1\nb,1,,0,ops,2\n"),
                               Options(1, 2, 1));
  EXPECT_THAT(std::string(s.message()),
              StartsWith("line 5: iteration 0 of boot \"1\" of arm \"b\" (ops) is "
                         "repeated"));
  s = ReplayError(Csv("a,1,t=2,0,ops,1\na,1,t=2,2,ops,1\n"), Options(1, 2, 1));
  EXPECT_THAT(std::string(s.message()),
              StartsWith("line 3: iteration 2 of boot \"1\" of arm \"a\" (ops at "
                         "t=2) follows 0: iterations must be numbered in order"));
  s = ReplayError(Csv("a,1,,3,ops,1\n"), Options(1, 2, 1));
  EXPECT_THAT(std::string(s.message()), StartsWith("line 2: the first iteration"));
}

TEST(ReplayAdaptiveTest, RefusesTooFewSamplesForTheOptions) {
  const std::string csv = ReadReplayFixture("stats/simulated-boots.csv");
  // A target no run reaches: the looks grow the run to its maxima, past what the CSV has.
  absl::Status s = ReplayError(csv, Options(2, 8, 10, 0.00001));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("--boots 2..8: look 5 asks for 6 boots of every arm; arm \"mmap\" has 5 "
                        "(its last boot \"mmap4\" starts on line"));
  ReplayOptions o = Options(1, 1, 0, 0.00001);
  o.adaptive.mutable_boots()->set_max(0);
  o.boots = 1;
  o.adaptive.mutable_iterations()->set_min(5);
  o.adaptive.mutable_iterations()->set_max(20);
  s = ReplayError(csv, o);
  EXPECT_THAT(std::string(s.message()), StartsWith("line "));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("ends after 10 iterations of records at threads=1; look 3 asks for "));
  EXPECT_THAT(std::string(s.message()), HasSubstr("(--iterations 5..20)"));
  // The same CSV with options whose looks stop within it: replayed, though the options'
  // maxima would need more than it has (a run that stopped early has only what it measured).
  absl::StatusOr<ReplayResult> r =
      ReplayAdaptiveCsv(csv, stats::Direction::kHigherIsBetter, Options(2, 8, 10, 0.05));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LE(r->looks.back().plan.boots, 5u);
}

TEST(ReplayAdaptiveTest, RefusesInconsistentOptionsNamingThem) {
  const std::string csv = ReadReplayFixture("stats/simulated-boots.csv");
  ReplayOptions o = Options(0, 0, 10);
  o.adaptive.set_stop(v1::AdaptiveSpec::STOP_VERDICT);
  EXPECT_THAT(std::string(ReplayError(csv, o).message()),
              StartsWith("adaptive.spending: alpha spending needs a maximum"));
  o = Options(2, 5, 10, 0);
  EXPECT_THAT(std::string(ReplayError(csv, o).message()), StartsWith("target_ci:"));
  o = Options(2, 5, 10);
  o.adaptive.add_metrics("absent");
  EXPECT_THAT(std::string(ReplayError(csv, o).message()),
              StartsWith("metric: \"absent\" is not in the CSV"));
}

}  // namespace
}  // namespace tlbfleet::report
