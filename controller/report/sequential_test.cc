#include "controller/report/sequential.h"

#include <cmath>

#include "controller/report/adaptive_replay.h"
#include "controller/report/calibration.h"
#include "controller/report/row_stopping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

using ::testing::HasSubstr;
using Action = AdaptiveDecision::Action;

v1::AdaptiveSpec VerdictSpec(uint32_t boots_min, uint32_t boots_max, uint32_t iter_min = 0,
                             uint32_t iter_max = 0) {
  v1::AdaptiveSpec a;
  a.set_stop(v1::AdaptiveSpec::STOP_VERDICT);
  a.mutable_boots()->set_min(boots_min);
  a.mutable_boots()->set_max(boots_max);
  a.mutable_iterations()->set_min(iter_min);
  a.mutable_iterations()->set_max(iter_max);
  return a;
}

// Reference values: O'Brien–Fleming-type 2 - 2 Phi(1.959964 / sqrt(t)) and Pocock-type
// 0.05 ln(1 + (e - 1) t) (Lan & DeMets 1983; scipy.stats.norm.sf).
TEST(SpentAlphaTest, MatchesTheLanDeMetsFunctions) {
  EXPECT_NEAR(SpentAlpha(Spending::kOBrienFleming, 0.05, 1), 0.05, 1e-12);
  EXPECT_NEAR(SpentAlpha(Spending::kOBrienFleming, 0.05, 0.5), 0.0055746, 1e-6);
  EXPECT_NEAR(SpentAlpha(Spending::kOBrienFleming, 0.05, 0.25), 8.8574e-05, 1e-8);
  EXPECT_NEAR(SpentAlpha(Spending::kPocock, 0.05, 0.5), 0.031006, 1e-6);
  EXPECT_NEAR(SpentAlpha(Spending::kPocock, 0.05, 1), 0.05, 1e-12);
  EXPECT_EQ(SpentAlpha(Spending::kOBrienFleming, 0.05, 0), 0);
}

TEST(ValidateSequentialSpecTest, RefusesInconsistentOptionsNamingThem) {
  v1::AdaptiveSpec a = VerdictSpec(1, 6);
  EXPECT_TRUE(ValidateSequentialSpec(a).ok());
  a.set_level(1.5);
  EXPECT_THAT(ValidateSequentialSpec(a).message(), HasSubstr("adaptive.level: must be above 0"));
  a.set_level(-0.1);
  EXPECT_EQ(ValidateSequentialSpec(a).code(), absl::StatusCode::kInvalidArgument);
  a = VerdictSpec(1, 6);
  a.set_margin(1);
  EXPECT_THAT(ValidateSequentialSpec(a).message(), HasSubstr("adaptive.margin"));
  // Alpha spending with no maximum to spend over.
  a = VerdictSpec(0, 0);
  EXPECT_THAT(ValidateSequentialSpec(a).message(),
              HasSubstr("adaptive.spending: alpha spending needs a maximum"));
  // A maximum below the minimum.
  a = VerdictSpec(4, 3);
  EXPECT_THAT(ValidateSequentialSpec(a).message(),
              HasSubstr("boots.max: 3 is below boots.min (4)"));
  // Sequential options on a precision run.
  a = VerdictSpec(1, 6);
  a.set_stop(v1::AdaptiveSpec::STOP_PRECISION);
  a.set_spending(v1::AdaptiveSpec::SPENDING_POCOCK);
  EXPECT_THAT(ValidateSequentialSpec(a).message(),
              HasSubstr("adaptive.spending: only for stop: verdict"));
}

TEST(LookFractionTest, BootsAreTheInformationAndUntestableLooksSpendNothing) {
  const v1::AdaptiveSpec a = VerdictSpec(1, 6);
  LookFraction l = LookFractionOf(a, {5, 1});
  EXPECT_DOUBLE_EQ(l.fraction, 1.0 / 6);
  l = LookFractionOf(a, {5, 2});  // the first look that can test: spends from 0
  EXPECT_DOUBLE_EQ(l.fraction, 2.0 / 6);
  EXPECT_DOUBLE_EQ(l.previous, 0);
  l = LookFractionOf(a, {5, 3});
  EXPECT_DOUBLE_EQ(l.fraction, 0.5);
  EXPECT_DOUBLE_EQ(l.previous, 2.0 / 6);
  // Starting at 3 boots: no look at 2.
  l = LookFractionOf(VerdictSpec(3, 6), {5, 3});
  EXPECT_DOUBLE_EQ(l.previous, 0);
}

TEST(LookFractionTest, IterationsAloneFollowTheDoublingSchedule) {
  const v1::AdaptiveSpec a = VerdictSpec(0, 0, 5, 30);       // 5, 10, 20, 30
  EXPECT_DOUBLE_EQ(LookFractionOf(a, {10, 1}).previous, 0);  // 5 is below 10 iterations
  EXPECT_DOUBLE_EQ(LookFractionOf(a, {20, 1}).previous, 10.0 / 30);
  EXPECT_DOUBLE_EQ(LookFractionOf(a, {30, 1}).previous, 20.0 / 30);
  EXPECT_DOUBLE_EQ(LookFractionOf(a, {30, 1}).fraction, 1);
}

// A row with an across-boots test of the given log ratio and standard error (df 8).
GroupResult Row(double log_ratio, double se, size_t boots = 5) {
  GroupResult g;
  g.metric = "ops";
  g.param_name = "threads";
  g.param_value = "4";
  ArmResult base;
  base.arm = "base";
  base.boots = boots;
  base.n = boots * 5;
  ArmResult other = base;
  other.arm = "new";
  other.test.scope = stats::Scope::kAcrossBoots;
  other.test.log_ratio = log_ratio;
  other.test.ratio = std::exp(log_ratio);
  other.test.se = se;
  other.test.df = 8;
  // Two-sided t p-values at df 8 (scipy.stats.t.sf(|t|, 8) * 2).
  other.test.p = std::abs(log_ratio / se) > 6 ? 1e-5 : 0.5;
  g.arms = {base, other};
  return g;
}

TEST(DecideRowAtLookTest, SpendsTheIncrementSplitAcrossRows) {
  SequentialOptions o;
  const LookFraction look{0.5, 2.0 / 6};
  RowOutcome r = DecideRowAtLook(o, 8, true, Row(0.05, 0.005), 1, look);
  const double expected = SpentAlpha(Spending::kOBrienFleming, 0.05 / 8, 0.5) -
                          SpentAlpha(Spending::kOBrienFleming, 0.05 / 8, 2.0 / 6);
  EXPECT_NEAR(r.look_alpha, expected, 1e-15);
  EXPECT_EQ(r.verdict, Verdict::kBetter);
  EXPECT_TRUE(r.decided);
  EXPECT_EQ(r.label, "ops threads=4, arm new");
  // Lower is better: the same ratio is worse.
  GroupResult lower = Row(0.05, 0.005);
  lower.direction = stats::Direction::kLowerIsBetter;
  EXPECT_EQ(DecideRowAtLook(o, 8, true, lower, 1, look).verdict, Verdict::kWorse);
  // A tight interval around 1 is `same`: TOST at the margin.
  r = DecideRowAtLook(o, 8, true, Row(0.0005, 0.0005), 1, look);
  EXPECT_EQ(r.verdict, Verdict::kSame);
  EXPECT_LT(*r.same_p, r.look_alpha);
  // Not significant: open.
  r = DecideRowAtLook(o, 8, true, Row(0.01, 0.01), 1, look);
  EXPECT_EQ(r.verdict, Verdict::kUnknown);
  EXPECT_FALSE(r.decided);
  // One boot per arm in a run with several: never tested.
  r = DecideRowAtLook(o, 8, true, Row(0.05, 0.005, 1), 1, look);
  EXPECT_EQ(r.look_alpha, 0);
  EXPECT_FALSE(r.decided);
}

Comparison OneGroup(const GroupResult& g) {
  Comparison c;
  c.arms = {"base", "new"};
  c.groups = {g};
  return c;
}

TEST(DecideSequentialTest, StopsWhenEveryRowIsDecidedAndGrowsBootsOtherwise) {
  const v1::AdaptiveSpec a = VerdictSpec(1, 6);
  AdaptiveDecision d = DecideAdaptive(a, {"ops"}, OneGroup(Row(0.05, 0.005, 3)), {5, 3});
  EXPECT_EQ(d.action, Action::kStop);
  EXPECT_THAT(d.reason, HasSubstr("verdict reached after 5 iterations x 3 boots per arm: every "
                                  "row of 1 decided (better 1, worse 0, same 0"));
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].verdict, Verdict::kBetter);
  d = DecideAdaptive(a, {"ops"}, OneGroup(Row(0.01, 0.01, 3)), {5, 3});
  EXPECT_EQ(d.action, Action::kAddBoot);
  EXPECT_EQ(d.iterations_per_boot, 5u);
  EXPECT_THAT(d.reason, HasSubstr("adding boot 4 of at most 6: 1 of 1 row without a verdict"));
  d = DecideAdaptive(a, {"ops"}, OneGroup(Row(0.01, 0.01, 6)), {5, 6});
  EXPECT_EQ(d.action, Action::kStop);
  EXPECT_THAT(d.reason, HasSubstr("maximum reached (5 iterations x 6 boots per arm) with 1 of 1"));
}

// A verdict once reached stands: the caller passes the previous look's rows back, and a row
// decided then is not re-tested (what lets a driver stop measuring it).
TEST(DecideSequentialTest, ARowDecidedEarlierKeepsItsVerdictAndUsage) {
  const v1::AdaptiveSpec a = VerdictSpec(1, 6);
  AdaptiveDecision first = DecideAdaptive(a, {"ops"}, OneGroup(Row(0.05, 0.005, 3)), {5, 3});
  ASSERT_TRUE(first.rows[0].decided);
  AdaptiveDecision later =
      DecideAdaptive(a, {"ops"}, OneGroup(Row(0.01, 0.01, 4)), {5, 4}, &first.rows);
  EXPECT_EQ(later.action, Action::kStop);
  EXPECT_EQ(later.rows[0].verdict, Verdict::kBetter);
  EXPECT_EQ(later.rows[0].arm_boots, 3u);
}

TEST(DecideSequentialTest, IterationsAloneDoubleUpToTheMaximum) {
  const v1::AdaptiveSpec a = VerdictSpec(0, 0, 5, 30);
  GroupResult g = Row(0.01, 0.01, 1);
  g.arms[1].test.scope = stats::Scope::kWithinBoot;
  g.arms[0].n = g.arms[1].n = 20;
  AdaptiveDecision d = DecideAdaptive(a, {"ops"}, OneGroup(g), {20, 1});
  EXPECT_EQ(d.action, Action::kAddIterations);
  EXPECT_EQ(d.iterations_per_boot, 30u);
  EXPECT_THAT(d.reason, HasSubstr("growing to 30 iterations per arm (at most 30)"));
}

// --- calibration, through the replay (ReplayAdaptive -> Compare -> DecideAdaptive) ---

struct SequentialCounts {
  int runs = 0, rows = 0, better = 0, worse = 0, same = 0, any_false = 0;
  double samples = 0;  // mean samples per arm and row at the row's decision or the stop
};

SequentialCounts RunSequential(const calibration::Design& full, const v1::AdaptiveSpec& spec,
                               int runs, uint64_t seed) {
  SequentialCounts c;
  ReplayOptions options;
  options.adaptive = spec;
  options.iterations = static_cast<uint32_t>(full.iterations);
  options.boots = static_cast<uint32_t>(full.boots);
  for (int k = 0; k < runs; ++k) {
    absl::StatusOr<ReplayResult> r =
        ReplayAdaptive(calibration::Simulate(full, seed, k), {}, options);
    if (!r.ok()) {
      ADD_FAILURE() << r.status();
      return c;
    }
    ++c.runs;
    bool any_false = false;
    for (const RowOutcome& row : r->rows) {
      ++c.rows;
      c.better += row.verdict == Verdict::kBetter;
      c.worse += row.verdict == Verdict::kWorse;
      c.same += row.verdict == Verdict::kSame;
      any_false |= row.verdict == Verdict::kBetter || row.verdict == Verdict::kWorse;
      c.samples += static_cast<double>(row.arm_samples);
    }
    c.any_false += any_false;
  }
  if (c.rows > 0) c.samples /= c.rows;
  return c;
}

calibration::Design Interleaved(int boots, int iterations, double change, int rows = 1) {
  calibration::Design d;
  d.boots = boots;
  d.shared_boots = true;
  d.iterations = iterations;
  d.boot_sd = 0.05;
  d.interaction_sd = 0.003;
  d.iteration_sd = 0.01;
  d.change = change;
  d.rows = rows;
  return d;
}

calibration::Design OwnBoots(int boots, int iterations, double change) {
  calibration::Design d;
  d.boots = boots;
  d.iterations = iterations;
  d.boot_sd = 0.03;
  d.iteration_sd = 0.01;
  d.change = change;
  return d;
}

constexpr int kRuns = 400;
constexpr uint64_t kSeed = 20261203;

// Under no change, false better/worse stay within the binomial bound of alpha = 5 %,
// whatever look the run stopped at (O'Brien–Fleming and Pocock spending).
TEST(SequentialCalibrationTest, NoChangeGivesAtMostTheNominalFalseVerdicts) {
  const int bound = calibration::BinomialUpperBound(kRuns, 0.05);
  for (auto spending :
       {v1::AdaptiveSpec::SPENDING_OBRIEN_FLEMING, v1::AdaptiveSpec::SPENDING_POCOCK}) {
    v1::AdaptiveSpec spec = VerdictSpec(1, 6);
    spec.set_spending(spending);
    SequentialCounts c = RunSequential(Interleaved(6, 5, 0), spec, kRuns, kSeed);
    EXPECT_EQ(c.runs, kRuns);
    EXPECT_LE(c.better + c.worse, bound) << "interleaved, spending " << spending;
    c = RunSequential(OwnBoots(10, 5, 0), VerdictSpec(2, 10), kRuns, kSeed + 1);
    EXPECT_LE(c.better + c.worse, bound) << "own boots, spending " << spending;
  }
  calibration::Design one_boot;
  one_boot.iterations = 40;
  one_boot.shared_boots = true;
  one_boot.iteration_sd = 0.02;
  SequentialCounts c = RunSequential(one_boot, VerdictSpec(0, 0, 5, 40), kRuns, kSeed + 2);
  EXPECT_LE(c.better + c.worse, bound) << "one boot, iterations 5..40";
}

// Across 8 rows stopping at different looks, Bonferroni (alpha / 8 per row) keeps the chance
// of any false verdict in a run within 5 %.
TEST(SequentialCalibrationTest, EightRowsKeepTheFamilyWiseRate) {
  const int runs = 200;
  SequentialCounts c = RunSequential(Interleaved(6, 5, 0, 8), VerdictSpec(1, 6), runs, kSeed + 3);
  EXPECT_EQ(c.rows, 8 * runs);
  EXPECT_LE(c.any_false, calibration::BinomialUpperBound(runs, 0.05));
}

// A true change of 5 % under 5 % shared boot noise is found, mostly early; the margin's
// `same` is reached under no change with iterations' noise of 1 %.
TEST(SequentialCalibrationTest, FindsRealChangesAndStopsEarly) {
  SequentialCounts c = RunSequential(Interleaved(6, 5, 0.05), VerdictSpec(1, 6), 200, kSeed + 4);
  EXPECT_GE(c.better, 190);
  EXPECT_EQ(c.worse, 0);
  EXPECT_LT(c.samples, 6 * 5);  // fewer than the maximum's samples on average
}

// --- rows that stop on their own (row_stopping.h: DecideAdaptive with the previous look's
// rows, StillMeasured for the next boot, as the driver does) ---

TEST(StillMeasuredTest, ADecidedArmStopsAndTheBaselineGoesOnWhileAnyRowThereIsOpen) {
  Comparison c;
  for (const char* value : {"1", "2"}) {
    GroupResult g;
    g.metric = "ops";
    g.param_name = "threads";
    g.param_value = value;
    for (const char* arm : {"base", "x", "y"}) {
      ArmResult a;
      a.arm = arm;
      g.arms.push_back(a);
    }
    c.groups.push_back(g);
  }
  auto row = [](const char* value, const char* arm, bool decided) {
    RowOutcome r;
    r.metric = "ops";
    r.param_name = "threads";
    r.param_value = value;
    r.arm = arm;
    r.decided = decided;
    r.verdict = decided ? Verdict::kSame : Verdict::kUnknown;
    return r;
  };
  // threads=1: x decided, y open; threads=2: both decided.
  const std::set<SweepArm> measured = StillMeasured(
      {row("1", "x", true), row("1", "y", false), row("2", "x", true), row("2", "y", true)}, c);
  EXPECT_EQ(measured, (std::set<SweepArm>{{"threads", "1", "base"}, {"threads", "1", "y"}}));
  // Nothing decided: everything is measured.
  EXPECT_EQ(StillMeasured({row("1", "x", false), row("1", "y", false), row("2", "x", false),
                           row("2", "y", false)},
                          c)
                .size(),
            6u);
}

TEST(AdaptiveRowTest, RoundTripsWhatTheNextLookNeeds) {
  RowOutcome r;
  r.metric = "ops";
  r.param_name = "threads";
  r.param_value = "4";
  r.arm = "new";
  r.verdict = Verdict::kSame;
  r.decided = true;
  r.decided_round = 3;
  r.base_boots = 4;
  r.arm_boots = 4;
  r.base_samples = 20;
  r.arm_samples = 20;
  r.ratio = 1.002;
  r.p = 0.9;
  r.same_p = 0.0001;
  r.look_alpha = 0.002;
  const v1::AdaptiveRow out = ToAdaptiveRow(r, false, false);
  EXPECT_EQ(out.verdict(), "same");
  EXPECT_DOUBLE_EQ(out.p(), 0.0001);  // the TOST decided it
  EXPECT_FALSE(out.measuring());
  EXPECT_THAT(out.reason(), HasSubstr("same at round 3"));
  EXPECT_THAT(out.reason(), HasSubstr("no more jobs"));
  const RowOutcome back = FromAdaptiveRow(out);
  EXPECT_TRUE(back.decided);
  EXPECT_EQ(back.verdict, Verdict::kSame);
  EXPECT_EQ(back.decided_round, 3u);
  EXPECT_EQ(back.arm_samples, 20u);
  EXPECT_EQ(back.ratio, 1.002);
  EXPECT_EQ(back.same_p, 0.0001);
  EXPECT_EQ(back.label, "ops threads=4, arm new");

  RowOutcome open = r;
  open.decided = false;
  open.verdict = Verdict::kUnknown;
  const v1::AdaptiveRow o = ToAdaptiveRow(open, true, false);
  EXPECT_EQ(o.verdict(), "");
  EXPECT_TRUE(o.measuring());
  EXPECT_DOUBLE_EQ(o.p(), 0.9);
  EXPECT_THAT(o.reason(), HasSubstr("open"));
  EXPECT_THAT(ToAdaptiveRow(open, true, true).reason(), HasSubstr("no verdict by the maximum"));
  EXPECT_FALSE(ToAdaptiveRow(open, true, true).measuring());
  EXPECT_FALSE(FromAdaptiveRow(o).decided);
}

struct RowStoppingCounts {
  int runs = 0, rows = 0, any_false = 0;
  int false_rows = 0;     // better/worse under no change, worse under a gain
  int decided_early = 0;  // rows decided before the run's last look
  size_t boots_measured = 0, boots_whole_run = 0;
};

RowStoppingCounts CountRowStopping(const calibration::Design& noise,
                                   const std::vector<double>& changes, const v1::AdaptiveSpec& spec,
                                   int runs, uint64_t seed) {
  RowStoppingCounts c;
  for (int k = 0; k < runs; ++k) {
    absl::StatusOr<RowStoppingRun> r = SimulateRowStopping(noise, changes, spec, seed, k);
    if (!r.ok()) {
      ADD_FAILURE() << r.status();
      return c;
    }
    ++c.runs;
    bool any_false = false;
    for (const RowOutcome& row : r->rows) {
      ++c.rows;
      const double change = changes[std::stoul(row.param_value)];
      const bool wrong = change == 0
                             ? row.verdict == Verdict::kBetter || row.verdict == Verdict::kWorse
                             : row.verdict == Verdict::kWorse;
      c.false_rows += wrong;
      any_false |= wrong;
      c.decided_early += row.decided && row.decided_round + 1 < r->looks;
    }
    c.any_false += any_false;
    c.boots_measured += r->boots_measured;
    c.boots_whole_run += r->boots_whole_run;
  }
  return c;
}

// Eight null rows of one run, each stopping on its own (a decided row's sweep value gets no
// more boots while the others go on): Bonferroni per look across the 8 rows keeps the
// chance of any false better/worse in a run within 5 % (binomial bound), and rows do stop
// at different looks, saving machine time.
TEST(RowStoppingCalibrationTest, EightNullRowsStoppingOnTheirOwnKeepTheFamilyWiseRate) {
  const int runs = 200;
  const std::vector<double> none(8, 0.0);
  RowStoppingCounts c =
      CountRowStopping(Interleaved(10, 5, 0, 8), none, VerdictSpec(1, 10), runs, kSeed + 5);
  EXPECT_EQ(c.runs, runs);
  EXPECT_EQ(c.rows, 8 * runs);
  EXPECT_LE(c.any_false, calibration::BinomialUpperBound(runs, 0.05));
  EXPECT_GT(c.decided_early, 0);
  EXPECT_LT(c.boots_measured, c.boots_whole_run);
  // Pocock spends more early: more early stops, same guarantee.
  v1::AdaptiveSpec pocock = VerdictSpec(1, 10);
  pocock.set_spending(v1::AdaptiveSpec::SPENDING_POCOCK);
  c = CountRowStopping(Interleaved(10, 5, 0, 8), none, pocock, runs, kSeed + 6);
  EXPECT_LE(c.any_false, calibration::BinomialUpperBound(runs, 0.05));
}

// A mix of null and changed rows: the changed ones are found and stop early (their sweep
// values stop costing boots), the null ones get no false verdict beyond the bound.
TEST(RowStoppingCalibrationTest, AMixOfChangedRowsIsFoundAndStopsEarly) {
  const int runs = 100;
  const std::vector<double> mix = {0, 0, 0, 0, 0.02, 0.05, 0.10, 0.15};
  RowStoppingCounts c =
      CountRowStopping(Interleaved(10, 5, 0, 8), mix, VerdictSpec(1, 10), runs, kSeed + 7);
  EXPECT_EQ(c.runs, runs);
  EXPECT_LE(c.any_false, calibration::BinomialUpperBound(runs, 0.05));
  EXPECT_LT(c.boots_measured, c.boots_whole_run);
  int found = 0, early = 0;
  for (int k = 0; k < runs; ++k) {
    absl::StatusOr<RowStoppingRun> r =
        SimulateRowStopping(Interleaved(10, 5, 0, 8), mix, VerdictSpec(1, 10), kSeed + 7, k);
    ASSERT_TRUE(r.ok());
    for (const RowOutcome& row : r->rows) {
      if (row.param_value == "7") {  // the 15 % change
        found += row.verdict == Verdict::kBetter;
        early += row.decided && row.arm_boots < 10;
      }
    }
  }
  EXPECT_GE(found, 95);
  EXPECT_GE(early, 95);
}

TEST(RowStoppingCalibrationTest, RefusesASpecThatDoesNotGrowBoots) {
  EXPECT_EQ(SimulateRowStopping(Interleaved(10, 5, 0, 2), {}, VerdictSpec(0, 0, 5, 40), kSeed, 0)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tlbfleet::report
