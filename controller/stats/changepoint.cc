#include "controller/stats/changepoint.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/math/distributions/normal.hpp"
#include "boost/math/distributions/students_t.hpp"
#include "controller/stats/bootstrap.h"

namespace tlbfleet::stats {

namespace {

using Status = absl::Status;

// Scans every split of one segment. Holds its buffers so the permutation test's thousands of
// scans allocate nothing.
class EnergyScanner {
 public:
  EnergyScanner(size_t min_segment, double exponent)
      : min_segment_(min_segment), exponent_(exponent) {}

  std::optional<EnergySplit> Best(std::span<const double> v) {
    const size_t n = v.size();
    const size_t l = min_segment_;
    if (n < 2 * l) return std::nullopt;
    FillPrefix(v);
    std::optional<EnergySplit> best;
    for (size_t tau = l; tau + l <= n; ++tau) {
      const double nx = static_cast<double>(tau);
      const double within_x = Rect(0, tau, 0, tau) / 2;
      for (size_t kappa = tau + l; kappa <= n; ++kappa) {
        const double my = static_cast<double>(kappa - tau);
        const double between = Rect(0, tau, tau, kappa);
        const double within_y = Rect(tau, kappa, tau, kappa) / 2;
        const double total = nx + my;
        const double q = 2 / total * between - 2 * my / (total * (nx - 1)) * within_x -
                         2 * nx / (total * (my - 1)) * within_y;
        if (!best || q > best->qhat) best = EnergySplit{tau, kappa, q};
      }
    }
    return best;
  }

 private:
  double Distance(double a, double b) const {
    const double d = std::fabs(a - b);
    return exponent_ == 1.0 ? d : std::pow(d, exponent_);
  }

  // prefix_[a * (n + 1) + b] = Σ_{i < a, j < b} |v_i − v_j|^α.
  void FillPrefix(std::span<const double> v) {
    const size_t n = v.size();
    stride_ = n + 1;
    prefix_.assign(stride_ * stride_, 0.0);
    for (size_t a = 0; a < n; ++a) {
      double row = 0;
      for (size_t b = 0; b < n; ++b) {
        row += Distance(v[a], v[b]);
        prefix_[(a + 1) * stride_ + b + 1] = prefix_[a * stride_ + b + 1] + row;
      }
    }
  }

  // Σ over rows [r0, r1) and columns [c0, c1).
  double Rect(size_t r0, size_t r1, size_t c0, size_t c1) const {
    return prefix_[r1 * stride_ + c1] - prefix_[r0 * stride_ + c1] - prefix_[r1 * stride_ + c0] +
           prefix_[r0 * stride_ + c0];
  }

  size_t min_segment_;
  double exponent_;
  size_t stride_ = 0;
  std::vector<double> prefix_;
};

struct Segment {
  size_t begin = 0, end = 0;
  bool left_whole = false;          // its best split failed the interval check
  std::optional<EnergySplit> best;  // relative to begin; computed once
};

double TwoSidedQuantile(double df, double confidence) {
  const double upper = 1 - (1 - confidence) / 2;
  if (!std::isfinite(df) || df > 1e7) return boost::math::quantile(boost::math::normal(), upper);
  return boost::math::quantile(boost::math::students_t(df), upper);
}

bool IntervalHoldsZero(const ChangeEstimate& e) {
  return e.difference_low <= 0 && e.difference_high >= 0;
}

Status ValidateOptions(const ChangePointOptions& o) {
  if (!(o.max_p > 0 && o.max_p < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("max_p must be in (0, 1), got ", o.max_p));
  }
  if (o.test == ChangePointTest::kPermutation && o.permutations < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("permutations must be at least 1, got ", o.permutations));
  }
  if (o.min_segment < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_segment must be at least 2, got ", o.min_segment));
  }
  if (!(o.exponent > 0 && o.exponent < 2)) {
    return absl::InvalidArgumentError(absl::StrCat("exponent must be in (0, 2), got ", o.exponent));
  }
  if (!(o.confidence > 0 && o.confidence < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("confidence must be in (0, 1), got ", o.confidence));
  }
  if (!(o.point_confidence > 0 && o.point_confidence < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("point_confidence must be in (0, 1), got ", o.point_confidence));
  }
  return absl::OkStatus();
}

Status ValidateSeries(std::span<const SeriesPoint> series, size_t max_points) {
  if (series.size() > max_points) {
    return absl::InvalidArgumentError(absl::StrCat("the series has ", series.size(),
                                                   " points; at most ", max_points,
                                                   " are analysed at once (use the latest)"));
  }
  for (size_t i = 0; i < series.size(); ++i) {
    const SeriesPoint& p = series[i];
    if (!std::isfinite(p.value)) {
      return absl::InvalidArgumentError(absl::StrCat("point ", i, ": value is not finite"));
    }
    if (p.low.has_value() != p.high.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("point ", i, ": an interval needs both low and high"));
    }
    if (p.low.has_value() != series[0].low.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("point ", i,
                       (p.low ? " has an interval but point 0 has none"
                              : " has no interval but point 0 has one"),
                       ": give every point of a series an interval, or none"));
    }
    if (p.low && !(std::isfinite(*p.low) && std::isfinite(*p.high) && *p.low <= p.value &&
                   p.value <= *p.high)) {
      return absl::InvalidArgumentError(absl::StrCat("point ", i, ": interval [", *p.low, ", ",
                                                     *p.high, "] does not hold its value ",
                                                     p.value));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const char* ChangePointTestName(ChangePointTest test) {
  return test == ChangePointTest::kPermutation ? "permutation" : "student-t";
}

const char* ChangePointDecisionName(ChangePointDecision::Kind kind) {
  switch (kind) {
    case ChangePointDecision::Kind::kAccepted:
      return "accepted";
    case ChangePointDecision::Kind::kNotSignificant:
      return "not significant";
    case ChangePointDecision::Kind::kIntervalTouches:
      return "interval holds 0";
    case ChangePointDecision::Kind::kDropped:
      return "dropped against final neighbours";
  }
  return "?";
}

std::optional<EnergySplit> BestEnergySplit(std::span<const double> values, size_t min_segment,
                                           double exponent) {
  EnergyScanner scanner(std::max<size_t>(min_segment, 2), exponent);
  return scanner.Best(values);
}

namespace {

// s_i² of points [begin, end) from their intervals; empty when the series has none.
std::vector<double> PointVariances(std::span<const SeriesPoint> pts, double point_confidence) {
  std::vector<double> s2;
  if (pts.empty() || !pts[0].low.has_value()) return s2;
  const double z = boost::math::quantile(boost::math::normal(), 1 - (1 - point_confidence) / 2);
  s2.reserve(pts.size());
  for (const SeriesPoint& p : pts) {
    const double se = (*p.high - *p.low) / (2 * z);
    s2.push_back(se * se);
  }
  return s2;
}

double SampleVariance(std::span<const SeriesPoint> pts) {
  const size_t n = pts.size();
  if (n < 2) return 0;
  double sum = 0;
  for (const SeriesPoint& p : pts) sum += p.value;
  const double mean = sum / static_cast<double>(n);
  double ss = 0;
  for (const SeriesPoint& p : pts) ss += (p.value - mean) * (p.value - mean);
  return ss / static_cast<double>(n - 1);
}

}  // namespace

double BetweenPointVariance(std::span<const SeriesPoint> series, size_t begin, size_t end,
                            double point_confidence) {
  const std::span<const SeriesPoint> pts = series.subspan(begin, end - begin);
  const size_t n = pts.size();
  const std::vector<double> s2 = PointVariances(pts, point_confidence);
  if (s2.empty()) return SampleVariance(pts);
  if (n < 2) return 0;
  if (std::find(s2.begin(), s2.end(), 0.0) != s2.end()) {
    // A zero-width interval cannot be a fixed-effect weight: moment estimate S² − mean(s²).
    double mean_s2 = 0;
    for (double v : s2) mean_s2 += v / static_cast<double>(n);
    return std::max(0.0, SampleVariance(pts) - mean_s2);
  }
  // DerSimonian–Laird: fixed-effect weights, Cochran's Q, τ² = max(0, (Q − (n − 1)) / C).
  double w_sum = 0, w2_sum = 0, wy_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const double w = 1 / s2[i];
    w_sum += w;
    w2_sum += w * w;
    wy_sum += w * pts[i].value;
  }
  const double fixed_mean = wy_sum / w_sum;
  double q = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = pts[i].value - fixed_mean;
    q += d * d / s2[i];
  }
  const double c = w_sum - w2_sum / w_sum;
  return c > 0 ? std::max(0.0, (q - static_cast<double>(n - 1)) / c) : 0;
}

SegmentSummary SummariseSegment(std::span<const SeriesPoint> series, size_t begin, size_t end,
                                double between_variance, double point_confidence) {
  SegmentSummary s;
  s.begin = begin;
  s.end = end;
  s.between_variance = between_variance;
  const std::span<const SeriesPoint> pts = series.subspan(begin, end - begin);
  const size_t n = pts.size();
  if (n == 0) return s;
  const std::vector<double> s2 = PointVariances(pts, point_confidence);
  double w_sum = 0, wy_sum = 0;
  bool infinite_weight = false;
  for (size_t i = 0; i < n; ++i) {
    const double v = (s2.empty() ? 0 : s2[i]) + between_variance;
    if (!(v > 0)) {
      infinite_weight = true;
      break;
    }
    w_sum += 1 / v;
    wy_sum += pts[i].value / v;
  }
  if (!infinite_weight) {
    s.mean = wy_sum / w_sum;
    s.variance_of_mean = 1 / w_sum;
    return s;
  }
  // No spread to weigh by (constant values without intervals, or zero-width intervals and no
  // scatter): the plain mean, with the points' own variance if they have one.
  double sum = 0, mean_s2 = 0;
  for (size_t i = 0; i < n; ++i) {
    sum += pts[i].value;
    if (!s2.empty()) mean_s2 += s2[i] / static_cast<double>(n);
  }
  s.mean = sum / static_cast<double>(n);
  s.variance_of_mean = mean_s2 / static_cast<double>(n);
  return s;
}

ChangeEstimate EstimateChange(std::span<const SeriesPoint> series, size_t begin, size_t split,
                              size_t end, double confidence, double point_confidence) {
  // One between-point variance for both sides, pooled by degrees of freedom: a short side
  // whose few points happen to agree must not claim a tiny variance (the energy statistic
  // seeks out exactly such tight clusters).
  const double df_before = static_cast<double>(split - begin) - 1;
  const double df_after = static_cast<double>(end - split) - 1;
  const double df = std::max(0.0, df_before) + std::max(0.0, df_after);
  double tau2 = 0;
  if (df > 0) {
    tau2 =
        (std::max(0.0, df_before) * BetweenPointVariance(series, begin, split, point_confidence) +
         std::max(0.0, df_after) * BetweenPointVariance(series, split, end, point_confidence)) /
        df;
  }
  ChangeEstimate e;
  e.before = SummariseSegment(series, begin, split, tau2, point_confidence);
  e.after = SummariseSegment(series, split, end, tau2, point_confidence);
  e.difference = e.after.mean - e.before.mean;
  e.df = df > 0 ? df : std::numeric_limits<double>::infinity();
  const double va = e.before.variance_of_mean;
  const double vb = e.after.variance_of_mean;
  const double t = TwoSidedQuantile(e.df, confidence);
  if (!(va + vb > 0)) {
    // Both sides are constant: the difference is exact.
    e.difference_low = e.difference_high = e.difference;
    e.p = e.difference == 0 ? 1 : 0;
  } else {
    const double se = std::sqrt(va + vb);
    e.difference_low = e.difference - t * se;
    e.difference_high = e.difference + t * se;
    const double stat = std::fabs(e.difference) / se;
    e.p = std::isfinite(e.df) && e.df <= 1e7
              ? 2 * boost::math::cdf(boost::math::complement(boost::math::students_t(e.df), stat))
              : 2 * boost::math::cdf(boost::math::complement(boost::math::normal(), stat));
    e.p = std::clamp(e.p, 0.0, 1.0);
  }
  if (e.before.mean > 0 && e.after.mean > 0) {
    const double log_ratio = std::log(e.after.mean / e.before.mean);
    const double se_log =
        std::sqrt(va / (e.before.mean * e.before.mean) + vb / (e.after.mean * e.after.mean));
    e.relative = std::exp(log_ratio) - 1;
    e.relative_low = std::exp(log_ratio - t * se_log) - 1;
    e.relative_high = std::exp(log_ratio + t * se_log) - 1;
  }
  return e;
}

absl::StatusOr<ChangePointResult> DetectChangePoints(std::span<const double> values,
                                                     const ChangePointOptions& options) {
  std::vector<SeriesPoint> points(values.size());
  for (size_t i = 0; i < values.size(); ++i) points[i].value = values[i];
  return DetectChangePoints(points, options);
}

absl::StatusOr<ChangePointResult> DetectChangePoints(std::span<const SeriesPoint> series,
                                                     const ChangePointOptions& options) {
  if (Status s = ValidateOptions(options); !s.ok()) return s;
  if (Status s = ValidateSeries(series, options.max_points); !s.ok()) return s;

  std::vector<double> values(series.size());
  for (size_t i = 0; i < series.size(); ++i) values[i] = series[i].value;
  const size_t l = options.min_segment;
  EnergyScanner scanner(l, options.exponent);
  Rng rng(options.seed);
  std::vector<double> shuffled;

  auto estimate = [&](size_t begin, size_t split, size_t end) {
    return EstimateChange(series, begin, split, end, options.confidence, options.point_confidence);
  };

  ChangePointResult result;
  std::vector<Segment> segments = {Segment{0, series.size(), false, std::nullopt}};
  std::vector<ChangePoint> accepted;
  while (true) {
    // The best candidate over the segments still open to a split.
    Segment* chosen = nullptr;
    for (Segment& seg : segments) {
      if (seg.left_whole || seg.end - seg.begin < 2 * l) continue;
      if (!seg.best) {
        seg.best =
            scanner.Best(std::span<const double>(values).subspan(seg.begin, seg.end - seg.begin));
      }
      if (seg.best && (!chosen || seg.best->qhat > chosen->best->qhat)) chosen = &seg;
    }
    if (!chosen) break;
    const size_t tau = chosen->begin + chosen->best->tau;
    const size_t kappa = chosen->begin + chosen->best->kappa;
    ChangePointDecision d;
    d.index = tau;
    d.qhat = chosen->best->qhat;
    // The two sides q̂ compared: [begin, τ) and [τ, κ). Up to `end` instead, a third level
    // after κ would blur the right side (a step up then down reads as no step).
    d.estimate = estimate(chosen->begin, tau, kappa);

    if (options.test == ChangePointTest::kPermutation) {
      // Shuffle within every open segment; the statistic is the best q̂ over all of them.
      // Stop as soon as p can no longer reach max_p: the decision is the full test's.
      const double threshold = d.qhat * (1 - 1e-12);
      int extreme = 0;
      int run = 0;
      for (; run < options.permutations; ++run) {
        double best_q = -std::numeric_limits<double>::infinity();
        for (const Segment& seg : segments) {
          if (seg.left_whole || seg.end - seg.begin < 2 * l) continue;
          shuffled.assign(values.begin() + static_cast<ptrdiff_t>(seg.begin),
                          values.begin() + static_cast<ptrdiff_t>(seg.end));
          for (size_t i = shuffled.size() - 1; i > 0; --i) {
            std::swap(shuffled[i], shuffled[rng.Below(i + 1)]);
          }
          if (std::optional<EnergySplit> s = scanner.Best(shuffled)) {
            best_q = std::max(best_q, s->qhat);
          }
        }
        if (best_q >= threshold) ++extreme;
        if (static_cast<double>(extreme + 1) / (options.permutations + 1) > options.max_p) {
          ++run;
          break;
        }
      }
      d.permutations_run = run;
      d.p = static_cast<double>(extreme + 1) / (options.permutations + 1);
    } else {
      // τ and, when the right side stops short of the segment's end, κ are both possible
      // change points: test each against the rest of the segment, Z[begin, x) vs Z[x, end),
      // and take the more significant, its p multiplied by the number tested (Bonferroni).
      d.estimate = estimate(chosen->begin, tau, chosen->end);
      int tested = 1;
      if (kappa + l <= chosen->end) {
        ++tested;
        const ChangeEstimate at_kappa = estimate(chosen->begin, kappa, chosen->end);
        if (at_kappa.p < d.estimate.p) {
          d.index = kappa;
          d.estimate = at_kappa;
        }
      }
      d.p = std::min(1.0, d.estimate.p * tested);
    }

    if (d.p > options.max_p) {
      d.kind = ChangePointDecision::Kind::kNotSignificant;
      result.log.push_back(d);
      break;
    }
    if (IntervalHoldsZero(d.estimate)) {
      d.kind = ChangePointDecision::Kind::kIntervalTouches;
      result.log.push_back(d);
      chosen->left_whole = true;
      continue;
    }
    d.kind = ChangePointDecision::Kind::kAccepted;
    result.log.push_back(d);
    accepted.push_back(ChangePoint{d.index, d.qhat, d.p, d.estimate});
    const Segment right{d.index, chosen->end, false, std::nullopt};
    chosen->end = d.index;
    chosen->best.reset();
    segments.push_back(right);
  }

  // Re-check every change point against its final neighbours; drop the weakest failure and
  // re-check until all pass.
  std::sort(accepted.begin(), accepted.end(),
            [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  while (!accepted.empty()) {
    std::optional<size_t> weakest;
    for (size_t i = 0; i < accepted.size(); ++i) {
      const size_t begin = i == 0 ? 0 : accepted[i - 1].index;
      const size_t end = i + 1 == accepted.size() ? series.size() : accepted[i + 1].index;
      ChangePoint& cp = accepted[i];
      cp.estimate = estimate(begin, cp.index, end);
      if (options.test == ChangePointTest::kStudentT) cp.p = cp.estimate.p;
      const bool fails = IntervalHoldsZero(cp.estimate) || cp.p > options.max_p;
      if (fails && (!weakest || cp.estimate.p > accepted[*weakest].estimate.p)) {
        weakest = i;
      }
    }
    if (!weakest) break;
    const ChangePoint& cp = accepted[*weakest];
    ChangePointDecision d;
    d.kind = ChangePointDecision::Kind::kDropped;
    d.index = cp.index;
    d.qhat = cp.qhat;
    d.p = cp.p;
    d.estimate = cp.estimate;
    result.log.push_back(d);
    accepted.erase(accepted.begin() + static_cast<ptrdiff_t>(*weakest));
  }
  result.change_points = std::move(accepted);
  return result;
}

}  // namespace tlbfleet::stats
