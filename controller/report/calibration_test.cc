// Calibration: the verdicts' error rates under simulated designs with known truth, through
// the real Compare and the real adaptive decision function. Fixed seeds, so every count is
// reproducible; the bounds are binomial: with n data sets and a true false-verdict rate of
// 5 %, more than BinomialUpperBound(n, 0.05) false verdicts happen with probability 0.1 %.
// docs/statistics.md#calibration has the full table (tests/perf/calibration_bench.cc).

#include "controller/report/calibration.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "controller/stats/boots.h"
#include "gtest/gtest.h"

namespace tlbfleet::report::calibration {
namespace {

constexpr uint64_t kSeed = 20260901;
constexpr int kDataSets = 1000;

CompareOptions VerdictsOnly() {
  CompareOptions options;
  options.cross_checks = false;  // never used for a verdict (CrossChecksNeverChangeAVerdict)
  return options;
}

// Interleaved arms: a boot's state (5 %) is shared by both arms, a small arm x boot
// interaction (0.3 %) is not, iterations vary by 1 %.
Design Interleaved(int boots, int iterations, int iterations_max, double change = 0) {
  Design d;
  d.boots = boots;
  d.shared_boots = true;
  d.iterations = iterations;
  d.iterations_max = iterations_max;
  d.boot_sd = 0.05;
  d.interaction_sd = 0.003;
  d.iteration_sd = 0.01;
  d.change = change;
  return d;
}

// Two kernels: each arm on boots of its own (3 %), iterations 1 %.
Design Kernels(int boots, int iterations, int iterations_max) {
  Design d;
  d.boots = boots;
  d.iterations = iterations;
  d.iterations_max = iterations_max;
  d.boot_sd = 0.03;
  d.iteration_sd = 0.01;
  return d;
}

std::string Describe(const Design& d) {
  return absl::StrCat(
      d.shared_boots ? "shared" : "own", " boots, ", d.boots, " x ", d.iterations,
      d.iterations_max > d.iterations ? absl::StrCat("..", d.iterations_max) : std::string());
}

void ExpectNominalFalseRate(const Design& d, const Counts& c) {
  ASSERT_EQ(c.datasets, kDataSets) << Describe(d);
  const int bound = BinomialUpperBound(c.rows, 0.05);
  EXPECT_LE(c.better + c.worse, bound)
      << Describe(d) << ": " << c.better << " better, " << c.worse << " worse of " << c.rows;
}

// The designs at B = 1, 2, 3, 5, 10, shared and own boots, balanced and unbalanced
// iterations: nothing changed, so every better/worse is false.
TEST(CalibrationTest, NoChangeGivesAtMostTheNominalRateOfFalseVerdicts) {
  for (int boots : {1, 2, 3, 5, 10}) {
    for (bool unbalanced : {false, true}) {
      // One boot: at least 5 iterations per arm (below that a within-boot test has too
      // few degrees of freedom for Welch's approximation); with boots, from 2.
      const int it = unbalanced ? (boots == 1 ? 5 : 2) : 5;
      const int it_max = unbalanced ? (boots == 1 ? 12 : 8) : 0;
      for (Design d : {Interleaved(boots, it, it_max), Kernels(boots, it, it_max)}) {
        if (boots == 1 && d.shared_boots) {
          // Both arms in one boot: iid iterations (an arm x boot effect could not be told
          // from the arms' difference: the within-boot scope says so).
          d.boot_sd = d.interaction_sd = 0;
          d.iteration_sd = 0.02;
        }
        // One boot each with 3 % boot noise stays as it is: no verdict is given there
        // (ArmsConfoundedWithBoots), where a test on the iterations said better/worse in
        // 73 % of these data sets.
        ExpectNominalFalseRate(d, CountVerdicts(d, kDataSets, kSeed + boots, VerdictsOnly()));
      }
    }
  }
}

// The power requirement: interleaved arms, shared boot noise 5 %, 5 boots x 5
// iterations, a real +2 % change: "better" in at least 80 % of data sets (it was 2 % when the
// arms' boots were resampled independently).
TEST(CalibrationTest, PairedDesignFindsATwoPercentChangeUnderFivePercentBootNoise) {
  const Counts c = CountVerdicts(Interleaved(5, 5, 0, 0.02), kDataSets, kSeed, VerdictsOnly());
  EXPECT_GE(c.better, 0.8 * c.rows) << c.better << " of " << c.rows;
  EXPECT_EQ(c.worse, 0);
}

// The interval's coverage of the true ratio, for a design of each kind: within binomial
// bounds of 95 % (the lower bound for a true coverage of 95 %).
TEST(CalibrationTest, IntervalsCoverTheTrueRatioAtTheNominalRate) {
  for (const Design& d : {Interleaved(3, 5, 0, 0.01), Kernels(2, 5, 0), Interleaved(10, 2, 8)}) {
    const Counts c = CountVerdicts(d, kDataSets, kSeed, VerdictsOnly());
    EXPECT_GE(c.covered, c.rows - BinomialUpperBound(c.rows, 0.05)) << Describe(d);
  }
}

// Twenty rows with nothing changed anywhere: across the rows, Benjamini–Hochberg keeps the
// chance of any false verdict at the nominal rate; each row on its own p would give one in
// most data sets.
TEST(CalibrationTest, BenjaminiHochbergKeepsFalseVerdictsAcrossRowsNominal) {
  Design d = Interleaved(1, 5, 0);
  d.boot_sd = 0;
  d.iteration_sd = 0.02;
  d.rows = 20;
  const Counts adjusted = CountVerdicts(d, kDataSets / 2, kSeed, VerdictsOnly());
  EXPECT_LE(adjusted.any_false, BinomialUpperBound(adjusted.datasets, 0.05)) << adjusted.any_false;
  CompareOptions unadjusted = VerdictsOnly();
  unadjusted.adjust = false;
  const Counts alone = CountVerdicts(d, kDataSets / 2, kSeed, unadjusted);
  EXPECT_GT(alone.any_false, 0.4 * alone.datasets) << alone.any_false;
}

// recommend_boots: at the advised size, "same" when nothing changed and "better" for a
// change of the margin's size, each with the advised 80 % power (within 3 binomial sd).
TEST(CalibrationTest, TheAdvisedSizeGivesThePowerItPromises) {
  stats::LogRatioComponents truth;
  truth.within_base = truth.within_other = 0.01 * 0.01;
  truth.interaction = 0.003 * 0.003;
  const stats::RepetitionAdvice advice = stats::AdvisePaired(truth, stats::AdviceOptions{});
  ASSERT_TRUE(advice.boots && advice.iterations_per_boot) << advice.why_undefined;
  Design d = Interleaved(*advice.boots, *advice.iterations_per_boot, 0);
  const Counts null = CountVerdicts(d, kDataSets, kSeed, VerdictsOnly());
  EXPECT_GE(null.same, 0.8 * null.rows - 3 * std::sqrt(0.16 * null.rows))
      << null.same << " of " << null.rows;
  d.change = 0.01;
  const Counts margin = CountVerdicts(d, kDataSets, kSeed, VerdictsOnly());
  EXPECT_GE(margin.better, 0.8 * margin.rows - 3 * std::sqrt(0.16 * margin.rows))
      << margin.better << " of " << margin.rows;
}

v1::AdaptiveSpec Spec(uint32_t it_min, uint32_t it_max, uint32_t boots_min, uint32_t boots_max,
                      double target) {
  v1::AdaptiveSpec spec;
  spec.mutable_iterations()->set_min(it_max ? it_min : 0);
  spec.mutable_iterations()->set_max(it_max);
  spec.mutable_boots()->set_min(boots_max ? boots_min : 0);
  spec.mutable_boots()->set_max(boots_max);
  spec.set_target_ci(target);
  return spec;
}

// The adaptive designs, through DecideAdaptive exactly as the controller grows a run,
// then the verdict of the final comparison. Stopping when a verdict looked settled gave 29 %,
// 38 % and 72 % false verdicts here.
TEST(CalibrationTest, AdaptiveRunsKeepTheNominalRateOfFalseVerdicts) {
  Design iid;
  iid.shared_boots = true;
  iid.iterations = 5;
  iid.iteration_sd = 0.02;
  const std::vector<std::pair<std::string, AdaptiveDesign>> designs = {
      {"1 boot, iterations 5..100", {iid, Spec(5, 100, 0, 0, 0.01)}},
      {"boots 2..6 x iterations 3..12", {Interleaved(2, 3, 0), Spec(3, 12, 2, 6, 0.01)}},
      {"boots 1..6", {Interleaved(1, 5, 0), Spec(0, 0, 1, 6, 0.01)}},
  };
  for (const auto& [name, design] : designs) {
    const AdaptiveCounts c = RunAdaptive(design, kDataSets / 2, kSeed);
    ASSERT_EQ(c.datasets, kDataSets / 2) << name;
    EXPECT_LE(c.better + c.worse, BinomialUpperBound(c.rows, 0.05))
        << name << ": " << c.better << " better, " << c.worse << " worse of " << c.rows;
  }
}

// A run that may have several boots never settles on one boot: every run of "boots 1..6"
// ends with at least 2 boots per arm.
TEST(CalibrationTest, AdaptiveRunsWithSeveralBootsSettleOnTwoBootsOrMore) {
  AdaptiveDesign design{Interleaved(1, 5, 0), Spec(0, 0, 1, 6, 0.05)};
  design.noise.boot_sd = 0;  // nothing but iteration noise: one boot would look precise
  const AdaptiveCounts c = RunAdaptive(design, 50, kSeed);
  EXPECT_GE(c.boots, 2.0);
}

TEST(CalibrationTest, CrossChecksNeverChangeAVerdict) {
  const Design d = Interleaved(3, 4, 0, 0.01);
  CompareOptions full;
  full.bootstrap.resamples = 200;
  for (int k = 0; k < 50; ++k) {
    const std::vector<Observation> obs = Simulate(d, kSeed, k);
    absl::StatusOr<Comparison> a = Compare(obs, full);
    absl::StatusOr<Comparison> b = Compare(obs, VerdictsOnly());
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->groups[0].arms[1].verdict, b->groups[0].arms[1].verdict) << k;
    EXPECT_TRUE(a->groups[0].arms[1].mwu.p.has_value());
    EXPECT_FALSE(b->groups[0].arms[1].mwu.p.has_value());
  }
}

TEST(CalibrationTest, SimulationIsSeededAndBinomialBoundIsRight) {
  const Design d = Interleaved(2, 3, 0);
  EXPECT_EQ(Simulate(d, 1, 0).size(), 12u);
  EXPECT_EQ(Simulate(d, 1, 0)[5].value, Simulate(d, 1, 0)[5].value);
  EXPECT_NE(Simulate(d, 1, 0)[5].value, Simulate(d, 1, 1)[5].value);
  // Binomial(1000, 0.05) (scipy.stats.binom.cdf): P(X <= 72) = 0.99899, P(X <= 73) = 0.99935.
  EXPECT_EQ(BinomialUpperBound(1000, 0.05), 73);
}

}  // namespace
}  // namespace tlbfleet::report::calibration

namespace tlbfleet::report::calibration {
namespace {

// Two kernels measured in one boot each: the arms' difference cannot be told from the
// boots', so there is no verdict, whatever the iterations say, and the note says why.
TEST(CalibrationTest, OneBootPerArmOfItsOwnGivesNoVerdict) {
  Design d = Kernels(1, 5, 0);
  d.change = 0.10;  // even a large change: one boot each cannot show it is not the boots
  const Counts c = CountVerdicts(d, 200, kSeed, VerdictsOnly());
  EXPECT_EQ(c.better + c.worse + c.same, 0) << c.better << " better, " << c.worse << " worse";
}

}  // namespace
}  // namespace tlbfleet::report::calibration
