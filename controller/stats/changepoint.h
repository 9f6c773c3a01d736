#pragma once
// Change-point detection on a series of estimates (pure functions, seeded, reproducible).
//
// E-Divisive Means (Matteson & James, "A Nonparametric Approach for Multiple Change Point
// Analysis of Multivariate Data", JASA 2014): the candidate split of a segment is the (τ, κ)
// that maximises the scaled energy distance q̂ between Z[start, τ) and Z[τ, κ); segments are
// split recursively, best candidate first, while the candidate is significant. Two ways to
// decide significance, as Apache Otava (formerly Hunter) offers them:
//   - kPermutation: the paper's permutation test. The points are shuffled within each current
//     segment, the best q̂ over all segments is found again, and p = (b + 1) / (R + 1) where b
//     of the R shuffles reached the observed q̂.
//   - kStudentT: the faster variant of Fleming et al. (ICPE 2023, "Hunter"): the same
//     candidate, tested by a t-test between its two sides, with no permutations (on the
//     random-effects segment means below; Student's t without intervals). Otava tests
//     Z[start, τ) against Z[τ, end); when q̂'s right side ends early (κ < end), a step back
//     after κ blurs that comparison, so we also test a split at κ the same way and keep the
//     more significant of the two, its p doubled (Bonferroni).
//
// Per-point intervals. A series point is an estimate with the interval its own comparison
// gave it. A segment's mean is the random-effects (DerSimonian–Laird) mean of its points:
// point i has variance s_i² + τ², s_i from its interval and τ² the between-point variance the
// scatter shows beyond the s_i (0 when it shows none), pooled over the two sides. Without
// intervals (s_i = 0) this is the plain mean with variance S²/n. Every accepted change must
// have its difference's interval (after − before, at `confidence`) exclude 0: a point
// whose own interval is wide weighs little and cannot, alone, make a change that a
// calibrated comparison of the points would call "can't tell".
//
// After the recursion each change point is re-checked against its final neighbours (the
// segments between it and the change points next to it); the weakest one that no longer
// passes is dropped and its neighbours re-checked, until all pass (Otava's merge step, with
// our checks). Every decision is logged with its numbers (ChangePointResult::log).
//
// Serial correlation (docs/nightly.md, "Correlated nights"). A lab's nights are not
// exchangeable: consecutive points share the machine's drift, so the permutation test, which
// shuffles them, finds "changes" in AR(1) noise (76 false change points per 100 series at
// φ = 0.5). With SerialModel::kAr1 (the default) every decision first estimates φ from the
// residuals of the segmentation it tests — the change points accepted so far and the
// candidate (serial.h) — and, when φ > 0:
//   - the candidate's location is refined to the maximum-likelihood split under AR(1) noise
//     within [begin, κ) (the whitened least-squares step);
//   - the permutation test becomes a sieve bootstrap (Bühlmann, "Sieve bootstrap for time
//     series", Bernoulli 3(2), 1997): each repetition re-simulates every open segment as
//     AR(1) noise with that φ, its innovations drawn with replacement from the segment's own
//     (so a bad night stays in the null as often as in the data), and the statistic compared
//     is the whitened likelihood ratio of one step, best over the open segments (more power
//     than q̂ under correlation);
//   - every segment mean's variance is multiplied by the AR(1) factor of its length, and the
//     t-test's degrees of freedom are the effective ones, n / factor per side (both tests'
//     interval check, and the t variant's p).
// With φ ≤ 0 estimated the decision is the independent one. SerialModel::kIndependent is the
// detector of Matteson and James as published; SerialModel::kBlock shuffles whole blocks of
// `block_length` points instead (no model, but the block length is the user's guess of the
// dependence's reach). ChangePointResult::serial.phi is φ on the final segmentation.
//
// Outliers. A side has at least `min_segment` points: 3 by default, so one bad night cannot
// be a segment of its own, and two bad nights in a row (which a lab does have: a firmware
// update, a noisy neighbour for a day) can — a longer minimum would make a real change wait
// that many more nights before it is reported. Beyond that, a change is kept only if its
// interval still excludes 0 without the one point, on either side, furthest from its side's
// median: a change that rests on one point is dropped (Kind::kRestsOnOnePoint).
//
// Drift. A slow trend splits into steps at arbitrary points. So each accepted change point
// is checked against one straight line over its two neighbouring segments: when the line fits
// them at least as well as the step (residual sums of squares, the step charged 2 log n
// residual variances for having chosen its location), the change point is dropped as a drift
// (Kind::kDrift), and the final segment it leaves is reported as a Trend with its slope and
// interval (AR(1)-widened) when that interval excludes 0 and the trend moved the level by at
// least `drift_threshold`.
//
// Cost: O(n²) memory per segment and O(n²) time per permutation (O(n) per sieve repetition);
// series are capped at `max_points`.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tlbfleet::stats {

// One point of a series. `low`/`high` are both set or both unset, low <= value <= high.
struct SeriesPoint {
  double value = 0;
  std::optional<double> low, high;
};

enum class ChangePointTest { kPermutation, kStudentT };
enum class SerialModel { kIndependent, kAr1, kBlock };
const char* SerialModelName(SerialModel model);         // "independent" / "ar1" / "block"
const char* ChangePointTestName(ChangePointTest test);  // "permutation" / "student-t"

// max_p for kStudentT where a caller does not choose: its p-values ignore that the split was
// chosen as the best of many, so it needs a stricter threshold than the permutation test
// (docs/performance.md has the false-alarm rates).
inline constexpr double kStudentTDefaultMaxP = 0.0001;

struct ChangePointOptions {
  ChangePointTest test = ChangePointTest::kPermutation;
  // A candidate is significant when its p-value is at most this. The default keeps false
  // alarms below 1 per 100 stationary series of 100 points (docs/performance.md); for
  // kStudentT use kStudentTDefaultMaxP.
  double max_p = 0.005;
  // Permutations of the permutation test. p can be no smaller than 1 / (permutations + 1).
  int permutations = 399;
  uint64_t seed = 0x63686e6770743031;  // "chngpt01": the same series gives the same answer
  // Neither side of a split may have fewer points. At least 2 (a side needs a spread).
  size_t min_segment = 3;
  // The exponent α of the energy distance |x − y|^α, in (0, 2). 1 as in the paper.
  double exponent = 1.0;
  // Confidence of the magnitude's interval; a change is kept only if it excludes 0.
  double confidence = 0.95;
  // Confidence the per-point intervals were computed at (to turn them into s_i).
  double point_confidence = 0.95;
  size_t max_points = 2000;
  // How consecutive points depend on each other (above). kIndependent is the detector of
  // Matteson and James as published.
  SerialModel serial = SerialModel::kAr1;
  // kBlock: the length of the blocks shuffled. At least 1 (1 is the plain permutation).
  size_t block_length = 0;
  // Check every change against a straight line (above); off, a drift is reported as steps.
  bool detect_drift = true;
  // A trend is reported when its level moved by at least this fraction over its span
  // (|slope| · points / level), and its slope's interval excludes 0. At least 0.
  double drift_threshold = 0;
};

// A segment [begin, end) of the series and its random-effects mean.
struct SegmentSummary {
  size_t begin = 0, end = 0;
  double mean = 0;
  double variance_of_mean = 0;  // 1 / Σ w_i, w_i = 1 / (s_i² + τ²)
  double between_variance = 0;  // τ², pooled over the two sides of a change
};

// The numbers behind one change point, on the two segments around it.
struct ChangeEstimate {
  SegmentSummary before, after;
  double difference = 0;  // after.mean − before.mean
  double difference_low = 0, difference_high = 0;
  double df = 0;  // n_before + n_after − 2
  // after.mean / before.mean − 1, when both means are > 0 (delta method on the log ratio).
  std::optional<double> relative, relative_low, relative_high;
  double p = 1;  // two-sided t-test of difference = 0 (Student's t without intervals)
};

struct ChangePoint {
  size_t index = 0;  // the first point after the change
  double qhat = 0;   // the energy statistic that chose it
  double p = 1;      // of the test that accepted it (permutation, or the t-test on final segments)
  ChangeEstimate estimate;
};

// One step of the search, for people who want to re-check a decision.
struct ChangePointDecision {
  enum class Kind {
    kAccepted,         // the candidate became a change point
    kNotSignificant,   // p > max_p: the search stopped here
    kIntervalTouches,  // significant, but the difference's interval holds 0: segment left whole
    kDropped,          // accepted before, but against its final neighbours it no longer passes
    kRestsOnOnePoint,  // without its most outlying point its interval holds 0: dropped
    kDrift,            // a line fits its neighbours as well as the step: dropped, a trend
  };
  Kind kind = Kind::kAccepted;
  size_t index = 0;
  double qhat = 0;
  double p = 1;
  // Permutations run before the p-value could no longer reach max_p (kPermutation); then
  // `p` is a lower bound of the full test's p-value.
  int permutations_run = 0;
  double phi = 0;  // the AR(1) coefficient the decision assumed
  ChangeEstimate estimate;
};
const char* ChangePointDecisionName(ChangePointDecision::Kind kind);

// A segment whose level moves along a line rather than in a step.
struct Trend {
  size_t begin = 0, end = 0;                        // the points [begin, end)
  double slope = 0, slope_low = 0, slope_high = 0;  // per point, interval at `confidence`
  double level = 0;                                 // the line's value at the segment's middle
  // slope · (end − begin) / level: how far the trend moved the level over its span, when
  // the level is > 0.
  std::optional<double> relative_change;
  double p = 1;  // two-sided t-test of slope = 0 (AR(1)-widened, effective df)
};

// The short-range dependence the detector assumed.
struct SerialEstimate {
  SerialModel model = SerialModel::kIndependent;
  double phi = 0;  // from the residuals of the final segmentation (0 unless kAr1)
};

struct ChangePointResult {
  std::vector<ChangePoint> change_points;  // by index
  std::vector<Trend> trends;               // by begin; never overlapping a change point
  std::vector<ChangePointDecision> log;    // in the order they were made (the last search's)
  SerialEstimate serial;
};

// INVALID_ARGUMENT for options out of range, a non-finite value, an interval that does not
// hold its value, or a series where some points have intervals and others do not.
// INVALID_ARGUMENT also above `max_points`. Fewer than 2 * min_segment points: no change.
absl::StatusOr<ChangePointResult> DetectChangePoints(std::span<const SeriesPoint> series,
                                                     const ChangePointOptions& options = {});

// The same on bare values (no intervals).
absl::StatusOr<ChangePointResult> DetectChangePoints(std::span<const double> values,
                                                     const ChangePointOptions& options = {});

// The best split of `values` by the energy statistic: the τ (first index of the right part)
// and κ maximising q̂(values[0, τ), values[τ, κ)) with both parts at least `min_segment`
// long; ties go to the smaller τ, then the smaller κ. nullopt when values.size() <
// 2 * min_segment. Exposed for tests.
struct EnergySplit {
  size_t tau = 0, kappa = 0;
  double qhat = 0;
};
std::optional<EnergySplit> BestEnergySplit(std::span<const double> values, size_t min_segment,
                                           double exponent = 1.0);

// τ² of points [begin, end): the DerSimonian–Laird estimate when the points have intervals
// (s_i from intervals at `point_confidence`), else the sample variance. Exposed for tests.
double BetweenPointVariance(std::span<const SeriesPoint> series, size_t begin, size_t end,
                            double point_confidence = 0.95);

// The random-effects mean of points [begin, end) with weights 1 / (s_i² + τ²). Exposed for
// tests.
SegmentSummary SummariseSegment(std::span<const SeriesPoint> series, size_t begin, size_t end,
                                double between_variance, double point_confidence = 0.95);

// The change from [begin, split) to [split, end): both sides' random-effects means with one
// τ² pooled over the two sides by degrees of freedom (a side's own estimate from 2 or 3
// points is too unreliable, and the search prefers sides whose few points happen to agree),
// the t-test of their difference on n_before + n_after − 2 degrees of freedom, and the
// interval at `confidence`. Without intervals this is Student's two-sample t-test. With
// `phi` ≠ 0 each side's variance of its mean is multiplied by Ar1MeanVarianceFactor of its
// length, and each side counts n / factor points in the degrees of freedom.
ChangeEstimate EstimateChange(std::span<const SeriesPoint> series, size_t begin, size_t split,
                              size_t end, double confidence = 0.95, double point_confidence = 0.95,
                              double phi = 0);

// The least-squares line through points [begin, end) (values only), its slope's interval
// widened for AR(1) noise with `phi`. Exposed for tests.
Trend FitTrend(std::span<const SeriesPoint> series, size_t begin, size_t end,
               double confidence = 0.95, double phi = 0);

}  // namespace tlbfleet::stats
