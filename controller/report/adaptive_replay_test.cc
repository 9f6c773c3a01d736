#include "controller/report/adaptive_replay.h"

#include <fstream>
#include <sstream>

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
  absl::Status s = ReplayError(csv, Options(2, 8, 10));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("--boots 2..8 needs 8 boots of every arm; arm \"mmap\" has 5 "
                        "(its last boot \"mmap4\" starts on line"));
  ReplayOptions o = Options(2, 5, 0);
  o.adaptive.mutable_iterations()->set_min(5);
  o.adaptive.mutable_iterations()->set_max(20);
  s = ReplayError(csv, o);
  EXPECT_THAT(std::string(s.message()), StartsWith("line "));
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("ends after 10 iterations of records at threads=1; "
                        "--iterations 5..20 may need 20"));
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
