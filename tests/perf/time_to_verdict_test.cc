// Logic of the time-to-verdict harness (not its figures, not its speed): its own look loop
// reaches the decisions of the project's replay (report::ReplayAdaptive, which the CLI's
// `adaptive --from-csv` runs) on the same data, per-row stopping saves machine time without
// changing a verdict, and mmtests' protocol gets no project verdict (one boot per kernel).

#include <gtest/gtest.h>

#include <cmath>

#include "controller/report/adaptive_replay.h"
#include "tests/perf/time_to_verdict_sim.h"

namespace tlbfleet::time_to_verdict {
namespace {

World TestWorld() {
  World w;
  w.seed = 7;
  w.boot_sd = 0.01;
  const double changes[4] = {0.15, 0.06, 0.0, 0.02};
  for (int t = 1; t <= 4; ++t) {
    w.rows.push_back({t, 6000, changes[t - 1], 0.045, 0.2});
  }
  return w;
}

Protocol SequentialProtocol(bool per_row_stop) {
  Protocol p;
  p.name = "sequential";  // the same name draws the same iteration noise
  p.adaptive = true;
  p.seconds = 2;
  p.iterations = 5;
  p.spec.set_stop(v1::AdaptiveSpec::STOP_VERDICT);
  p.spec.mutable_boots()->set_min(1);
  p.spec.mutable_boots()->set_max(8);
  p.per_row_stop = per_row_stop;
  return p;
}

TEST(TimeToVerdictTest, LoopReachesTheReplaysVerdictsAndPerRowStoppingOnlySavesTime) {
  const World w = TestWorld();
  const Costs costs;
  int saved = 0;
  for (int index = 0; index < 20; ++index) {
    absl::StatusOr<RunResult> per_row = RunProtocol(w, SequentialProtocol(true), costs, index);
    absl::StatusOr<RunResult> whole = RunProtocol(w, SequentialProtocol(false), costs, index);
    ASSERT_TRUE(per_row.ok()) << per_row.status();
    ASSERT_TRUE(whole.ok()) << whole.status();
    // The replay over every sample the run could have taken (8 boots x 5 per row and kernel).
    report::ReplayOptions options;
    options.adaptive = SequentialProtocol(true).spec;
    options.iterations = 5;
    const std::vector<std::vector<uint32_t>> all(w.rows.size(), std::vector<uint32_t>(8, 5));
    absl::StatusOr<report::ReplayResult> replay = report::ReplayAdaptive(
        ObservationsOf(w, SequentialProtocol(true), index, all), {}, options);
    ASSERT_TRUE(replay.ok()) << replay.status();
    ASSERT_EQ(replay->rows.size(), w.rows.size());
    EXPECT_EQ(per_row->boots, replay->looks.back().plan.boots) << "run " << index;
    EXPECT_EQ(per_row->looks, replay->looks.size()) << "run " << index;
    for (size_t r = 0; r < w.rows.size(); ++r) {
      const report::RowOutcome& expected = replay->rows[r];
      ASSERT_EQ(expected.param_value, std::to_string(w.rows[r].threads));
      EXPECT_EQ(per_row->rows[r].verdict, expected.verdict) << "run " << index << " row " << r;
      EXPECT_EQ(whole->rows[r].verdict, expected.verdict) << "run " << index << " row " << r;
      EXPECT_EQ(per_row->rows[r].ratio, expected.ratio) << "run " << index << " row " << r;
      EXPECT_EQ(per_row->rows[r].boots, expected.arm_boots) << "run " << index << " row " << r;
      EXPECT_LE(per_row->rows[r].seconds, whole->rows[r].seconds);
    }
    EXPECT_EQ(per_row->boots, whole->boots);
    saved += per_row->machine_seconds < whole->machine_seconds;
  }
  EXPECT_GT(saved, 0) << "no run stopped a row before the others";
}

TEST(TimeToVerdictTest, OneBootPerKernelGetsNoProjectVerdictButMmtestsReadsOne) {
  World w = TestWorld();
  w.rows.resize(1);  // +15 %
  Protocol fixed;
  fixed.name = "fixed";
  fixed.seconds = 10;
  fixed.iterations = 100;
  absl::StatusOr<RunResult> r = RunProtocol(w, fixed, Costs{10, 0.05}, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rows[0].verdict, report::Verdict::kUnknown);
  EXPECT_EQ(r->rows[0].verdict_ignoring_boots, report::Verdict::kBetter);
  EXPECT_EQ(r->boots, 1u);
  EXPECT_EQ(r->looks, 1u);
  EXPECT_DOUBLE_EQ(r->machine_seconds, 2 * 100 * 10.05 + 2 * 10);
}

TEST(TimeToVerdictTest, MeanOfSecondsVarianceIsTheAr1Formula) {
  RowModel independent{1, 6000, 0, 0.1, 0};
  EXPECT_DOUBLE_EQ(MeanOfSecondsVariance(independent, 4), 0.01 / 4);
  RowModel correlated{1, 6000, 0, 0.1, 0.5};
  // Two seconds: (1 + 1 + 2 x 0.5) / 4 of one second's variance.
  EXPECT_DOUBLE_EQ(MeanOfSecondsVariance(correlated, 2), 0.01 * 3 / 4);
  // Long means approach the effective sample size T (1 - rho) / (1 + rho).
  EXPECT_NEAR(MeanOfSecondsVariance(correlated, 10000) * 10000, 0.01 * 3, 0.01 * 3 * 1e-3);
}

TEST(TimeToVerdictTest, TimeBoundIsTheClosedFormWithoutBootNoise) {
  // One row of +10 %, sd 10 % per independent second, no boot noise, free boots: the z-test
  // needs n = 2 sd^2 (z_0.975 + z_0.9)^2 / ln(1.1)^2 = 23.1 seconds per kernel, however they
  // are split into boots: 2 x 24 s of machine time.
  World w;
  w.boot_sd = 0;
  w.rows.push_back({1, 6000, 0.10, 0.10, 0});
  const TimeBound bound = MinimumMachineTime(w, Costs{0, 0}, 0.9, 0.95, 0.05);
  EXPECT_NEAR(bound.machine_seconds, 48, 0.5);
  // Rows below the change that counts and null rows cost nothing; a second row of the same
  // kind costs as much again.
  w.rows.push_back({2, 6000, 0.02, 0.10, 0});
  w.rows.push_back({3, 6000, 0.0, 0.10, 0});
  EXPECT_NEAR(MinimumMachineTime(w, Costs{0, 0}, 0.9, 0.95, 0.05).machine_seconds, 48, 0.5);
  w.rows.push_back({4, 6000, 0.10, 0.10, 0});
  EXPECT_NEAR(MinimumMachineTime(w, Costs{0, 0}, 0.9, 0.95, 0.05).machine_seconds, 96, 1);
}

TEST(TimeToVerdictTest, TimeBoundGrowsWithNoiseAutocorrelationAndBootNoise) {
  World w;
  w.boot_sd = 0;
  w.rows.push_back({1, 6000, 0.06, 0.10, 0});
  const Costs costs{10, 0};
  const double base = MinimumMachineTime(w, costs, 0.9, 0.95, 0.05).machine_seconds;
  World noisier = w;
  noisier.rows[0].second_sd = 0.2;
  EXPECT_GT(MinimumMachineTime(noisier, costs, 0.9, 0.95, 0.05).machine_seconds, 3 * base);
  World correlated = w;
  correlated.rows[0].second_rho = 0.6;
  EXPECT_GT(MinimumMachineTime(correlated, costs, 0.9, 0.95, 0.05).machine_seconds, 3 * base);
  // Boot noise cannot be averaged within a boot: it takes boots, each costing its boot time.
  World boots = w;
  boots.boot_sd = 0.03;
  const TimeBound with_boot_noise = MinimumMachineTime(boots, costs, 0.9, 0.95, 0.05);
  EXPECT_GT(with_boot_noise.machine_seconds, base);
  EXPECT_GE(with_boot_noise.boots, 6u);  // 2 x 0.03^2 / B <= (ln 1.06 / 3.24)^2: B >= 5.6
  // Out of reach within the boots allowed: infinite.
  EXPECT_TRUE(std::isinf(MinimumMachineTime(boots, costs, 0.9, 0.95, 0.05, 2).machine_seconds));
}

}  // namespace
}  // namespace tlbfleet::time_to_verdict
