#include "controller/stats/changepoint.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "controller/stats/bootstrap.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::stats {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

SeriesPoint P(double v) {
  SeriesPoint p;
  p.value = v;
  return p;
}
SeriesPoint P(double v, double low, double high) {
  SeriesPoint p = P(v);
  p.low = low;
  p.high = high;
  return p;
}

std::vector<size_t> Indexes(const ChangePointResult& r) {
  std::vector<size_t> out;
  for (const ChangePoint& cp : r.change_points) out.push_back(cp.index);
  return out;
}

ChangePointOptions StudentT(double max_p) {
  ChangePointOptions o;
  o.test = ChangePointTest::kStudentT;
  o.max_p = max_p;
  return o;
}

// q̂ of the paper, straight from its definition (pairs i < k within a side).
double QhatByDefinition(const std::vector<double>& z, size_t tau, size_t kappa, double alpha) {
  auto d = [&](double a, double b) { return std::pow(std::fabs(a - b), alpha); };
  const double n = static_cast<double>(tau), m = static_cast<double>(kappa - tau);
  double between = 0, within_x = 0, within_y = 0;
  for (size_t i = 0; i < tau; ++i) {
    for (size_t j = tau; j < kappa; ++j) between += d(z[i], z[j]);
  }
  for (size_t i = 0; i < tau; ++i) {
    for (size_t k = i + 1; k < tau; ++k) within_x += d(z[i], z[k]);
  }
  for (size_t j = tau; j < kappa; ++j) {
    for (size_t k = j + 1; k < kappa; ++k) within_y += d(z[j], z[k]);
  }
  const double e =
      2 * between / (n * m) - within_x / (n * (n - 1) / 2) - within_y / (m * (m - 1) / 2);
  return n * m / (n + m) * e;
}

TEST(BestEnergySplitTest, MatchesTheDefinitionOnRandomSeries) {
  Rng rng(11);
  for (int round = 0; round < 40; ++round) {
    const size_t n = 4 + rng.Below(20);
    const size_t min_segment = 2 + rng.Below(2);
    const double alpha = round % 2 == 0 ? 1.0 : 0.5;
    std::vector<double> z(n);
    for (double& v : z) v = 100 * rng.Normal() + (rng.Below(3) == 0 ? 300 : 0);
    std::optional<EnergySplit> fast = BestEnergySplit(z, min_segment, alpha);
    if (n < 2 * min_segment) {
      EXPECT_FALSE(fast.has_value());
      continue;
    }
    ASSERT_TRUE(fast.has_value());
    double best = -1e300;
    size_t best_tau = 0, best_kappa = 0;
    for (size_t tau = min_segment; tau + min_segment <= n; ++tau) {
      for (size_t kappa = tau + min_segment; kappa <= n; ++kappa) {
        const double q = QhatByDefinition(z, tau, kappa, alpha);
        if (q > best + 1e-9 * std::fabs(best)) {
          best = q;
          best_tau = tau;
          best_kappa = kappa;
        }
      }
    }
    EXPECT_NEAR(fast->qhat, best, 1e-9 * std::fabs(best)) << "round " << round;
    EXPECT_EQ(fast->tau, best_tau) << "round " << round;
    EXPECT_EQ(fast->kappa, best_kappa) << "round " << round;
  }
}

// apache/otava tests/change_point_divisive_test.py: SEQUENCE with CHANGE_POINTS_INDS = [5, 8],
// found there by the permutation test (100 permutations, max_pvalue 0.01, seed 1) and by the
// t-test tester (max_pvalue 0.01).
const std::vector<double> kOtavaSequence = {0.3,  2.4,   1.5,   -0.9,  -0.5,  99.7,  98.3,
                                            99.1, 149.0, 149.7, 149.5, 149.1, 148.8, 150.0};

// Otava's permutation p-value is b / (R + 1), which is 0 when no shuffle reaches q̂; ours is
// (b + 1) / (R + 1) (Phipson & Smyth 2010), never below the test's resolution. The split at 8
// cuts 9 points into 3 | 6, and 2 of the C(9, 3) = 84 ways to place the three ~99 values put
// them at an end, giving the same q̂: its exact permutation p is at least 2/84 = 0.024. So at
// 0.01 no exact permutation test accepts it (Otava's does with seed 1 because its b was at
// most 1 of 100); at 0.05 ours finds both, with p for 8 near 0.024.
TEST(DetectChangePointsTest, OtavaSequenceByPermutation) {
  ChangePointOptions o;
  o.max_p = 0.05;
  o.min_segment = 2;
  absl::StatusOr<ChangePointResult> r = DetectChangePoints(kOtavaSequence, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Indexes(*r), ElementsAre(5, 8));
  ASSERT_EQ(r->change_points.size(), 2u);
  EXPECT_LE(r->change_points[0].p, 0.01);
  EXPECT_GE(r->change_points[1].p, 0.015);
  EXPECT_LE(r->change_points[1].p, 0.05);
  // The first split is the whole series' best energy split.
  EXPECT_EQ(r->log.front().index, BestEnergySplit(kOtavaSequence, 2)->tau);

  o.max_p = 0.01;
  EXPECT_THAT(Indexes(*DetectChangePoints(kOtavaSequence, o)), ElementsAre(5));
}

TEST(DetectChangePointsTest, OtavaSequenceByStudentT) {
  ChangePointOptions o = StudentT(0.01);
  o.min_segment = 2;
  absl::StatusOr<ChangePointResult> r = DetectChangePoints(kOtavaSequence, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Indexes(*r), ElementsAre(5, 8));
}

// apache/otava tests/analysis_test.py test_single_series / test_single_series_original: a
// drop from about 1.0 to 0.5 at index 10, found at max_pvalue 0.0001 by both algorithms.
const std::vector<double> kOtavaSingleSeries = {1.02, 0.95, 0.99, 1.00, 1.12, 1.00, 1.01,
                                                0.98, 1.01, 0.96, 0.50, 0.51, 0.48, 0.48,
                                                0.55, 0.50, 0.49, 0.51, 0.50, 0.49};

TEST(DetectChangePointsTest, OtavaSingleSeriesBothVariants) {
  ChangePointOptions perm;
  perm.max_p = 0.0001;
  perm.permutations = 9999;
  absl::StatusOr<ChangePointResult> a = DetectChangePoints(kOtavaSingleSeries, perm);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(Indexes(*a), ElementsAre(10));
  absl::StatusOr<ChangePointResult> b = DetectChangePoints(kOtavaSingleSeries, StudentT(0.0001));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(Indexes(*b), ElementsAre(10));
  ASSERT_TRUE(b->change_points[0].estimate.relative.has_value());
  EXPECT_NEAR(*b->change_points[0].estimate.relative, 0.501 / 1.004 - 1, 1e-12);
}

// apache/otava tests/analysis_test.py test_significance_tester: the same five values twice
// (p ≈ 1), and a drop from about 1.0 to 0.8 (0 < p < 0.001).
TEST(EstimateChangeTest, OtavaSignificanceTesterExamples) {
  auto points = [](std::vector<double> v) {
    std::vector<SeriesPoint> out;
    for (double x : v) out.push_back(P(x));
    return out;
  };
  const auto same = points({1.00, 1.02, 1.05, 0.95, 0.98, 1.00, 1.02, 1.05, 0.95, 0.98});
  const ChangeEstimate e1 = EstimateChange(same, 0, 5, 10);
  EXPECT_GT(e1.p, 0.99);
  EXPECT_LE(e1.p, 1.0);
  const auto drop = points({1.00, 1.02, 1.05, 0.95, 0.98, 0.80, 0.82, 0.85, 0.79, 0.77});
  const ChangeEstimate e2 = EstimateChange(drop, 0, 5, 10);
  EXPECT_GT(e2.p, 0.0);
  EXPECT_LT(e2.p, 0.001);
}

// Without intervals the estimate is Student's two-sample t-test: for {1, 2, 3} vs
// {4, 5, 6, 7.5} the pooled variance is (2 * 1 + 6.6875) / 5 = 1.7375, t = 3.625 /
// sqrt(1.7375 * (1/3 + 1/4)) = 3.6007 on 5 df, two-sided p = 0.015532 and the 95 % interval
// 1.0371 .. 6.2129 (the t density integrated numerically, independently of Boost).
TEST(EstimateChangeTest, WithoutIntervalsItIsStudentsTTest) {
  std::vector<SeriesPoint> pts;
  for (double x : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.5}) pts.push_back(P(x));
  const ChangeEstimate e = EstimateChange(pts, 0, 3, 7);
  EXPECT_DOUBLE_EQ(e.difference, 3.625);
  EXPECT_DOUBLE_EQ(e.df, 5);
  EXPECT_NEAR(e.before.between_variance, 1.7375, 1e-12);
  EXPECT_NEAR(e.difference / std::sqrt(e.before.variance_of_mean + e.after.variance_of_mean),
              3.6007, 1e-4);
  EXPECT_NEAR(e.p, 0.015532, 1e-6);
  EXPECT_NEAR(e.difference_low, 1.0371, 1e-4);
  EXPECT_NEAR(e.difference_high, 6.2129, 1e-4);
  ASSERT_TRUE(e.relative.has_value());
  EXPECT_NEAR(*e.relative, 5.625 / 2 - 1, 1e-12);
}

TEST(SummariseSegmentTest, RandomEffectsMeanWeighsAWideIntervalLittle) {
  // s² = 1, 100, 1 (95 % intervals ± 1.96 s): the fixed-effect Q is 1.40 < n − 1, so τ² = 0
  // and the mean is the inverse-variance one, (10 + 20/100 + 11) / 2.01.
  const double z = 1.959963984540054;
  const std::vector<SeriesPoint> pts = {P(10, 10 - z, 10 + z), P(20, 20 - 10 * z, 20 + 10 * z),
                                        P(11, 11 - z, 11 + z)};
  EXPECT_DOUBLE_EQ(BetweenPointVariance(pts, 0, 3), 0);
  const SegmentSummary s = SummariseSegment(pts, 0, 3, 0);
  EXPECT_NEAR(s.mean, 21.2 / 2.01, 1e-9);
  EXPECT_NEAR(s.variance_of_mean, 1 / 2.01, 1e-9);
}

TEST(SummariseSegmentTest, ScatterBeyondTheIntervalsBecomesBetweenVariance) {
  // Equal s: τ² = S² − s² and the variance of the mean is S² / n, as without intervals.
  const double z = 1.959963984540054;
  const std::vector<SeriesPoint> pts = {P(10, 10 - z, 10 + z), P(14, 14 - z, 14 + z)};
  const double tau2 = BetweenPointVariance(pts, 0, 2);
  EXPECT_NEAR(tau2, 8 - 1, 1e-9);
  const SegmentSummary s = SummariseSegment(pts, 0, 2, tau2);
  EXPECT_NEAR(s.mean, 12, 1e-12);
  EXPECT_NEAR(s.variance_of_mean, 8.0 / 2, 1e-9);
}

// The point of the intervals: the last four runs read 5 % low, but each run's own interval is
// ± 20 %. Their values agree with each other by chance, so on values alone it is a change;
// with the intervals it is not, in both variants. With narrow intervals it is again.
TEST(DetectChangePointsTest, NoisyPointsDoNotRaiseAnAlarmTheirIntervalsDoNotSupport) {
  Rng rng(5);
  std::vector<SeriesPoint> narrow, wide, bare;
  for (int i = 0; i < 40; ++i) {
    const double v = (i < 36 ? 100 : 95) + 0.3 * rng.Normal();
    bare.push_back(P(v));
    narrow.push_back(P(v, v - 1, v + 1));
    wide.push_back(i < 36 ? P(v, v - 1, v + 1) : P(v, v - 20, v + 20));
  }
  for (ChangePointOptions o : {ChangePointOptions{}, StudentT(kStudentTDefaultMaxP)}) {
    SCOPED_TRACE(ChangePointTestName(o.test));
    absl::StatusOr<ChangePointResult> r_bare = DetectChangePoints(bare, o);
    absl::StatusOr<ChangePointResult> r_narrow = DetectChangePoints(narrow, o);
    absl::StatusOr<ChangePointResult> r_wide = DetectChangePoints(wide, o);
    ASSERT_TRUE(r_bare.ok() && r_narrow.ok() && r_wide.ok());
    EXPECT_THAT(Indexes(*r_bare), ElementsAre(36));
    EXPECT_THAT(Indexes(*r_narrow), ElementsAre(36));
    EXPECT_THAT(Indexes(*r_wide), IsEmpty());
    ASSERT_FALSE(r_wide->log.empty());
    // The log says why: the candidate at 36 was looked at and its interval holds 0 (for the
    // t variant, the weighted t-test is not significant in the first place).
    EXPECT_EQ(r_wide->log.front().index, 36u);
    EXPECT_NE(r_wide->log.front().kind, ChangePointDecision::Kind::kAccepted);
    EXPECT_LE(r_wide->log.front().estimate.difference_low, 0);
  }
}

std::vector<double> Synthetic(Rng& rng, size_t n, double cov, size_t step_at, double step) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = 1000 * (i >= step_at ? 1 + step : 1) * (1 + cov * rng.Normal());
  }
  return v;
}

TEST(DetectChangePointsTest, TheTwoVariantsAgreeOnClearSteps) {
  Rng rng(21);
  for (int round = 0; round < 30; ++round) {
    const size_t at = 6 + rng.Below(48);
    const std::vector<double> v = Synthetic(rng, 60, 0.01, at, round % 2 ? 0.08 : -0.08);
    absl::StatusOr<ChangePointResult> perm = DetectChangePoints(v);
    absl::StatusOr<ChangePointResult> t = DetectChangePoints(v, StudentT(kStudentTDefaultMaxP));
    ASSERT_TRUE(perm.ok() && t.ok());
    EXPECT_THAT(Indexes(*perm), ElementsAre(at)) << "round " << round;
    EXPECT_THAT(Indexes(*t), ElementsAre(at)) << "round " << round;
  }
}

TEST(DetectChangePointsTest, TwoStepsAreBothFound) {
  Rng rng(3);
  std::vector<double> v = Synthetic(rng, 30, 0.01, 30, 0);
  std::vector<double> up = Synthetic(rng, 25, 0.01, 0, 0.1);
  std::vector<double> down = Synthetic(rng, 25, 0.01, 0, -0.05);
  v.insert(v.end(), up.begin(), up.end());
  v.insert(v.end(), down.begin(), down.end());
  for (ChangePointOptions o : {ChangePointOptions{}, StudentT(kStudentTDefaultMaxP)}) {
    absl::StatusOr<ChangePointResult> r = DetectChangePoints(v, o);
    ASSERT_TRUE(r.ok());
    EXPECT_THAT(Indexes(*r), ElementsAre(30, 55)) << ChangePointTestName(o.test);
    ASSERT_EQ(r->change_points.size(), 2u);
    EXPECT_GT(*r->change_points[0].estimate.relative_low, 0.05);
    EXPECT_LT(*r->change_points[1].estimate.relative_high, -0.03);
  }
}

// Calibration: under the null (stationary noise) change points are rare, in both variants.
TEST(DetectChangePointsTest, StationarySeriesRarelyGiveAChangePoint) {
  Rng rng(99);
  int false_perm = 0, false_t = 0;
  const int kSeries = 100;
  for (int i = 0; i < kSeries; ++i) {
    const std::vector<double> v = Synthetic(rng, 50, 0.02, 50, 0);
    false_perm += static_cast<int>(DetectChangePoints(v)->change_points.size());
    false_t += static_cast<int>(
        DetectChangePoints(v, StudentT(kStudentTDefaultMaxP))->change_points.size());
  }
  EXPECT_LE(false_perm, 3);
  EXPECT_LE(false_t, 3);
}

TEST(DetectChangePointsTest, EveryReportedChangePassesAgainstItsFinalNeighbours) {
  Rng rng(42);
  for (int round = 0; round < 20; ++round) {
    std::vector<double> v;
    double level = 1000;
    for (int seg = 0; seg < 4; ++seg) {
      const size_t len = 4 + rng.Below(12);
      for (size_t i = 0; i < len; ++i) v.push_back(level * (1 + 0.02 * rng.Normal()));
      level *= 1 + 0.04 * (static_cast<double>(rng.Below(3)) - 1);
    }
    for (ChangePointOptions o : {ChangePointOptions{}, StudentT(kStudentTDefaultMaxP)}) {
      absl::StatusOr<ChangePointResult> r = DetectChangePoints(v, o);
      ASSERT_TRUE(r.ok());
      std::vector<SeriesPoint> pts;
      for (double x : v) pts.push_back(P(x));
      for (size_t i = 0; i < r->change_points.size(); ++i) {
        const ChangePoint& cp = r->change_points[i];
        const size_t begin = i == 0 ? 0 : r->change_points[i - 1].index;
        const size_t end =
            i + 1 == r->change_points.size() ? v.size() : r->change_points[i + 1].index;
        EXPECT_GE(cp.index - begin, o.min_segment);
        EXPECT_GE(end - cp.index, o.min_segment);
        const ChangeEstimate e = EstimateChange(pts, begin, cp.index, end);
        EXPECT_TRUE(e.difference_low > 0 || e.difference_high < 0);
        EXPECT_LE(cp.p, o.max_p);
      }
    }
  }
}

TEST(DetectChangePointsTest, TheSameSeedGivesTheSameAnswer) {
  Rng rng(8);
  const std::vector<double> v = Synthetic(rng, 40, 0.02, 25, 0.03);
  const ChangePointResult a = *DetectChangePoints(v);
  const ChangePointResult b = *DetectChangePoints(v);
  ASSERT_EQ(a.log.size(), b.log.size());
  for (size_t i = 0; i < a.log.size(); ++i) {
    EXPECT_EQ(a.log[i].index, b.log[i].index);
    EXPECT_EQ(a.log[i].p, b.log[i].p);
    EXPECT_EQ(a.log[i].permutations_run, b.log[i].permutations_run);
  }
}

TEST(DetectChangePointsTest, AStationarySeriesLogsWhyTheSearchStopped) {
  const std::vector<double> flatish = {10, 11, 10, 9, 10, 11, 10, 9, 10, 11, 10, 9};
  absl::StatusOr<ChangePointResult> r = DetectChangePoints(flatish);
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(Indexes(*r), IsEmpty());
  ASSERT_EQ(r->log.size(), 1u);
  EXPECT_EQ(r->log[0].kind, ChangePointDecision::Kind::kNotSignificant);
  EXPECT_GT(r->log[0].p, ChangePointOptions{}.max_p);
  // Stopped early: once p cannot reach max_p, more permutations cannot change the answer.
  EXPECT_LT(r->log[0].permutations_run, ChangePointOptions{}.permutations);
}

TEST(DetectChangePointsTest, ShortSeriesHaveNoChangePoint) {
  const std::vector<double> v = {1, 1, 1, 9, 9};
  absl::StatusOr<ChangePointResult> r = DetectChangePoints(v);  // 5 < 2 * 3
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(Indexes(*r), IsEmpty());
  EXPECT_THAT(r->log, IsEmpty());
}

// 1000 (1 + cov e_t) with AR(1) e of unit marginal variance, a step and a linear drift.
std::vector<double> Correlated(Rng& rng, size_t n, double phi, size_t step_at, double step,
                               double drift = 0) {
  std::vector<double> v(n);
  double e = rng.Normal();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) e = phi * e + std::sqrt(1 - phi * phi) * rng.Normal();
    const double trend = 1 + drift * static_cast<double>(i) / static_cast<double>(n - 1);
    v[i] = 1000 * (i >= step_at ? 1 + step : 1) * trend * (1 + 0.02 * e);
  }
  return v;
}

// The issue-25 table: the permutation test assumes exchangeable points, and AR(1) noise
// raises tens of false change points per 100 series; the AR(1) model keeps them rare.
TEST(DetectChangePointsTest, CorrelatedNoiseRaisesFewFalseChangePointsUnderTheAr1Model) {
  Rng rng(2501);
  ChangePointOptions independent;
  independent.serial = SerialModel::kIndependent;
  int false_independent = 0, false_ar1 = 0;
  double phi_sum = 0;
  const int kSeries = 40;
  for (int i = 0; i < kSeries; ++i) {
    const std::vector<double> v = Correlated(rng, 100, 0.5, 100, 0);
    false_independent += static_cast<int>(DetectChangePoints(v, independent)->change_points.size());
    const ChangePointResult r = *DetectChangePoints(v);
    false_ar1 += static_cast<int>(r.change_points.size() + r.trends.size());
    phi_sum += r.serial.phi;
    EXPECT_EQ(r.serial.model, SerialModel::kAr1);
  }
  EXPECT_GE(false_independent, 10);
  EXPECT_LE(false_ar1, 2);
  EXPECT_NEAR(phi_sum / kSeries, 0.5, 0.08);
}

TEST(DetectChangePointsTest, AStepInCorrelatedNoiseIsFoundWhereItIs) {
  Rng rng(2502);
  int found = 0;
  const int kSeries = 30;
  for (int i = 0; i < kSeries; ++i) {
    const size_t at = 30 + rng.Below(41);
    const ChangePointResult r = *DetectChangePoints(Correlated(rng, 100, 0.5, at, 0.06));
    for (const ChangePoint& cp : r.change_points) {
      if ((cp.index > at ? cp.index - at : at - cp.index) <= 3) {
        ++found;
        break;
      }
    }
    // Every decision says what φ it assumed.
    for (const ChangePointDecision& d : r.log) EXPECT_GT(d.phi, 0) << "series " << i;
  }
  EXPECT_GE(found, 25);
}

TEST(DetectChangePointsTest, WithIndependentNoiseTheAr1ModelFindsWhatTheTestAsPublishedFinds) {
  Rng rng(2503);
  ChangePointOptions independent;
  independent.serial = SerialModel::kIndependent;
  int found_ar1 = 0, found_independent = 0;
  for (int i = 0; i < 30; ++i) {
    const size_t at = 10 + rng.Below(81);
    const std::vector<double> v = Synthetic(rng, 100, 0.02, at, i % 2 ? 0.05 : -0.05);
    auto near = [&](const ChangePointResult& r) {
      for (const ChangePoint& cp : r.change_points) {
        if ((cp.index > at ? cp.index - at : at - cp.index) <= 3) return 1;
      }
      return 0;
    };
    found_ar1 += near(*DetectChangePoints(v));
    found_independent += near(*DetectChangePoints(v, independent));
  }
  EXPECT_GE(found_independent, 28);
  EXPECT_GE(found_ar1, found_independent - 1);
}

TEST(DetectChangePointsTest, ASlowDriftIsATrendNotAStep) {
  Rng rng(2504);
  int trends = 0, steps = 0, covered = 0;
  for (int i = 0; i < 20; ++i) {
    const double drift = i % 2 ? 0.06 : -0.06;
    const ChangePointResult r = *DetectChangePoints(Correlated(rng, 100, 0, 100, 0, drift));
    steps += static_cast<int>(r.change_points.size());
    if (r.trends.size() == 1) {
      ++trends;
      const Trend& t = r.trends[0];
      EXPECT_EQ(t.begin, 0u);
      EXPECT_EQ(t.end, 100u);
      // 1000 · drift over 99 points: a 95 % interval holds it, and excludes 0.
      const double slope = 1000 * drift / 99;
      covered += t.slope_low < slope && slope < t.slope_high ? 1 : 0;
      EXPECT_TRUE(t.slope_low > 0 || t.slope_high < 0);
      ASSERT_TRUE(t.relative_change.has_value());
      EXPECT_NEAR(*t.relative_change, drift, 0.03);
      EXPECT_TRUE(std::any_of(r.log.begin(), r.log.end(), [](const ChangePointDecision& d) {
        return d.kind == ChangePointDecision::Kind::kDrift;
      }));
    }
  }
  EXPECT_GE(trends, 18);
  EXPECT_GE(covered, trends - 3);
  EXPECT_LE(steps, 1);
}

TEST(DetectChangePointsTest, AStepStaysAStepAndDriftDetectionCanBeTurnedOff) {
  Rng rng(2505);
  int steps_kept = 0;
  for (int i = 0; i < 20; ++i) {
    const ChangePointResult r = *DetectChangePoints(Synthetic(rng, 100, 0.02, 20 + i * 3, 0.06));
    steps_kept += r.change_points.size() == 1 && r.trends.empty() ? 1 : 0;
  }
  EXPECT_GE(steps_kept, 19);

  const std::vector<double> drifting = Correlated(rng, 100, 0, 100, 0, 0.08);
  ChangePointOptions o;
  o.detect_drift = false;
  const ChangePointResult off = *DetectChangePoints(drifting, o);
  EXPECT_FALSE(off.change_points.empty());
  EXPECT_TRUE(off.trends.empty());
  o = {};
  o.drift_threshold = 0.2;  // more than the 8 % it moved
  const ChangePointResult small = *DetectChangePoints(drifting, o);
  EXPECT_TRUE(small.change_points.empty());
  EXPECT_TRUE(small.trends.empty());
}

// One bad night near the end (11.62 among values near 10): with a loose threshold the t
// variant accepts a split before it (the two points after it are level with the rest), but
// without that one point the interval holds 0: the change rests on one point.
TEST(DetectChangePointsTest, AChangeThatRestsOnOnePointIsDropped) {
  std::vector<double> v = {10.11, 10.05, 9.92,  9.90, 10.18, 9.99,  10.09, 9.91,
                           10.09, 10.11, 10.10, 9.95, 9.88,  10.02, 9.93,  10.02,
                           9.96,  10.08, 9.92,  9.93, 11.62, 10.24, 9.95};
  ChangePointOptions o = StudentT(0.05);
  o.serial = SerialModel::kIndependent;
  const ChangePointResult r = *DetectChangePoints(v, o);
  EXPECT_THAT(Indexes(r), IsEmpty());
  ASSERT_FALSE(r.log.empty());
  EXPECT_EQ(r.log.front().kind, ChangePointDecision::Kind::kAccepted);
  EXPECT_EQ(r.log.front().index, 20u);
  EXPECT_EQ(r.log.back().kind, ChangePointDecision::Kind::kRestsOnOnePoint);
  EXPECT_EQ(r.log.back().index, 20u);
  // Three nights at a new level stay a change.
  v[20] = v[21] = v[22] = 10.6;
  EXPECT_THAT(Indexes(*DetectChangePoints(v, o)), ElementsAre(20));
}

TEST(DetectChangePointsTest, BlocksAreShuffledWhole) {
  Rng rng(2506);
  ChangePointOptions block;
  block.serial = SerialModel::kBlock;
  block.block_length = 4;
  const std::vector<double> step = Synthetic(rng, 100, 0.02, 50, 0.08);
  const ChangePointResult r = *DetectChangePoints(step, block);
  EXPECT_THAT(Indexes(r), ElementsAre(50));
  EXPECT_EQ(r.serial.model, SerialModel::kBlock);
  EXPECT_EQ(r.serial.phi, 0);
}

TEST(DetectChangePointsTest, BadInputIsRefusedWithTheReason) {
  std::vector<SeriesPoint> mixed = {P(1, 0.5, 1.5), P(2), P(3, 2, 4)};
  EXPECT_THAT(std::string(DetectChangePoints(mixed).status().message()),
              ::testing::HasSubstr("point 1 has no interval but point 0 has one"));
  std::vector<SeriesPoint> outside = {P(1, 1.5, 2)};
  EXPECT_THAT(std::string(DetectChangePoints(outside).status().message()),
              ::testing::HasSubstr("point 0: interval [1.5, 2] does not hold its value 1"));
  std::vector<double> nan = {1, std::nan("")};
  EXPECT_THAT(std::string(DetectChangePoints(nan).status().message()),
              ::testing::HasSubstr("point 1: value is not finite"));
  ChangePointOptions o;
  o.min_segment = 1;
  EXPECT_THAT(std::string(DetectChangePoints(nan, o).status().message()),
              ::testing::HasSubstr("min_segment must be at least 2"));
  o = {};
  o.max_points = 3;
  const std::vector<double> four = {1, 2, 3, 4};
  EXPECT_EQ(DetectChangePoints(four, o).status().code(), absl::StatusCode::kInvalidArgument);
  o = {};
  o.exponent = 2;
  EXPECT_THAT(std::string(DetectChangePoints(four, o).status().message()),
              ::testing::HasSubstr("exponent must be in (0, 2)"));
  o = {};
  o.serial = SerialModel::kBlock;
  EXPECT_THAT(std::string(DetectChangePoints(four, o).status().message()),
              ::testing::HasSubstr("block_length must be at least 1, got 0"));
  o = {};
  o.drift_threshold = -0.1;
  EXPECT_THAT(std::string(DetectChangePoints(four, o).status().message()),
              ::testing::HasSubstr("drift_threshold must be at least 0, got -0.1"));
}

}  // namespace
}  // namespace tlbfleet::stats
