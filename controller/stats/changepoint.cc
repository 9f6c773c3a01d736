#include "controller/stats/changepoint.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/math/distributions/normal.hpp"
#include "boost/math/distributions/students_t.hpp"
#include "controller/stats/bootstrap.h"
#include "controller/stats/serial.h"

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
  if (o.serial == SerialModel::kBlock && o.block_length < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("block_length must be at least 1, got ", o.block_length));
  }
  if (!(o.drift_threshold >= 0 && std::isfinite(o.drift_threshold))) {
    return absl::InvalidArgumentError(
        absl::StrCat("drift_threshold must be at least 0, got ", o.drift_threshold));
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

const char* SerialModelName(SerialModel model) {
  switch (model) {
    case SerialModel::kIndependent:
      return "independent";
    case SerialModel::kAr1:
      return "ar1";
    case SerialModel::kBlock:
      return "block";
  }
  return "?";
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
    case ChangePointDecision::Kind::kRestsOnOnePoint:
      return "rests on one point";
    case ChangePointDecision::Kind::kDrift:
      return "a drift, not a step";
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
                              size_t end, double confidence, double point_confidence, double phi) {
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
  if (phi != 0) {
    // Correlated points: each side's mean varies by the AR(1) factor more, and a side counts
    // as n / factor independent points.
    const double factor_before = Ar1MeanVarianceFactor(split - begin, phi);
    const double factor_after = Ar1MeanVarianceFactor(end - split, phi);
    e.before.variance_of_mean *= factor_before;
    e.after.variance_of_mean *= factor_after;
    const double effective_df = static_cast<double>(split - begin) / factor_before +
                                static_cast<double>(end - split) / factor_after - 2;
    if (df > 0) e.df = std::max(0.5, effective_df);
  }
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

Trend FitTrend(std::span<const SeriesPoint> series, size_t begin, size_t end, double confidence,
               double phi) {
  Trend trend;
  trend.begin = begin;
  trend.end = end;
  const size_t n = end - begin;
  if (n < 3) return trend;
  std::vector<double> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = series[begin + i].value;
  const LineFit line = FitLine(values);
  const double mean = line.mean, sxx = line.sxx, rss = line.rss;
  trend.slope = line.slope;
  trend.level = mean;
  const double factor = Ar1SlopeVarianceFactor(n, phi);
  // Effective points: the slope's variance grows by `factor`, as if there were n / factor.
  const double df = std::max(1.0, static_cast<double>(n) / factor - 2);
  const double se = std::sqrt(rss / static_cast<double>(n - 2) / sxx * factor);
  const double t = TwoSidedQuantile(df, confidence);
  trend.slope_low = trend.slope - t * se;
  trend.slope_high = trend.slope + t * se;
  if (se > 0) {
    trend.p = 2 * boost::math::cdf(boost::math::complement(boost::math::students_t(df),
                                                           std::fabs(trend.slope) / se));
  } else {
    trend.p = trend.slope == 0 ? 1 : 0;
  }
  if (mean > 0) trend.relative_change = trend.slope * static_cast<double>(n) / mean;
  return trend;
}

namespace {

// What the test compares an observed q̂ with: the best q̂ over the open segments of series
// made like the data under "no change", one way per SerialModel.
class NullSeries {
 public:
  NullSeries(const ChangePointOptions& options, double phi, Rng* rng)
      : options_(options), phi_(phi), rng_(rng) {}

  // Prepares one open segment's values for repeated draws.
  void AddSegment(std::span<const double> values) {
    SegmentModel m;
    m.values.assign(values.begin(), values.end());
    if (UsesAr1()) {
      double sum = 0;
      for (double v : values) sum += v;
      m.mean = sum / static_cast<double>(values.size());
      for (double v : values) m.residuals.push_back(v - m.mean);
      double innovation_sum = 0;
      for (size_t t = 1; t < values.size(); ++t) {
        m.innovations.push_back(m.residuals[t] - phi_ * m.residuals[t - 1]);
        innovation_sum += m.innovations.back();
      }
      const double innovation_mean = innovation_sum / static_cast<double>(m.innovations.size());
      for (double& u : m.innovations) u -= innovation_mean;
    }
    segments_.push_back(std::move(m));
  }

  size_t segments() const { return segments_.size(); }

  // One draw of segment `i` into `out`.
  void Draw(size_t i, std::vector<double>* out) {
    SegmentModel& m = segments_[i];
    const size_t n = m.values.size();
    out->resize(n);
    if (UsesAr1()) {
      // Sieve bootstrap: start from a residual (the marginal), then AR(1) with resampled
      // innovations.
      double r = m.residuals[rng_->Below(n)];
      (*out)[0] = m.mean + r;
      for (size_t t = 1; t < n; ++t) {
        r = phi_ * r + m.innovations[rng_->Below(m.innovations.size())];
        (*out)[t] = m.mean + r;
      }
      return;
    }
    const size_t block = options_.serial == SerialModel::kBlock ? options_.block_length : 1;
    if (block <= 1) {
      *out = m.values;
      for (size_t k = n - 1; k > 0; --k) std::swap((*out)[k], (*out)[rng_->Below(k + 1)]);
      return;
    }
    // Whole blocks in a shuffled order (the last one may be shorter).
    const size_t blocks = (n + block - 1) / block;
    order_.resize(blocks);
    for (size_t b = 0; b < blocks; ++b) order_[b] = b;
    for (size_t k = blocks - 1; k > 0; --k) std::swap(order_[k], order_[rng_->Below(k + 1)]);
    size_t at = 0;
    for (size_t b : order_) {
      for (size_t t = b * block; t < std::min(n, (b + 1) * block); ++t) (*out)[at++] = m.values[t];
    }
  }

 private:
  bool UsesAr1() const { return options_.serial == SerialModel::kAr1 && phi_ > 0; }

  struct SegmentModel {
    std::vector<double> values;
    double mean = 0;
    std::vector<double> residuals, innovations;
  };
  const ChangePointOptions& options_;
  double phi_;
  Rng* rng_;
  std::vector<SegmentModel> segments_;
  std::vector<size_t> order_;
};

// Residual sums of squares of [begin, end) as two means split at `split`, and as one line.
std::pair<double, double> StepAndLineRss(std::span<const double> v, size_t begin, size_t split,
                                         size_t end) {
  auto mean_rss = [&](size_t b, size_t e) {
    double sum = 0;
    for (size_t i = b; i < e; ++i) sum += v[i];
    const double mean = sum / static_cast<double>(e - b);
    double rss = 0;
    for (size_t i = b; i < e; ++i) rss += (v[i] - mean) * (v[i] - mean);
    return rss;
  };
  const double step = mean_rss(begin, split) + mean_rss(split, end);
  const double line = FitLine(v.subspan(begin, end - begin)).rss;
  return {step, line};
}

double MedianOf(std::vector<double> v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(mid), v.end());
  return v[mid];
}

// The change from [begin, split) to [split, end) without the point, on either side, furthest
// from its side's median.
ChangeEstimate EstimateWithoutOutlier(std::span<const SeriesPoint> series, size_t begin,
                                      size_t split, size_t end, const ChangePointOptions& options,
                                      double phi) {
  auto side_median = [&](size_t b, size_t e) {
    std::vector<double> v;
    for (size_t i = b; i < e; ++i) v.push_back(series[i].value);
    return MedianOf(std::move(v));
  };
  const double median_before = side_median(begin, split);
  const double median_after = side_median(split, end);
  size_t furthest = begin;
  double distance = -1;
  for (size_t i = begin; i < end; ++i) {
    const double d = std::fabs(series[i].value - (i < split ? median_before : median_after));
    if (d > distance) {
      distance = d;
      furthest = i;
    }
  }
  std::vector<SeriesPoint> rest;
  rest.reserve(end - begin - 1);
  for (size_t i = begin; i < end; ++i) {
    if (i != furthest) rest.push_back(series[i]);
  }
  const size_t rest_split = split - begin - (furthest < split ? 1 : 0);
  return EstimateChange(rest, 0, rest_split, rest.size(), options.confidence,
                        options.point_confidence, phi);
}

// Where in [begin, kappa) one step fits best, each side at least `min_segment` long: the
// maximum-likelihood location of a shift in the mean of AR(1) noise with `phi` (least squares
// on the whitened series w_t = x_t − φ x_{t−1}, t > begin, where a step at s adds 1 at t = s
// and 1 − φ after it; with φ = 0, the plain least-squares change point). The energy statistic
// finds that [begin, κ) holds a change, but its τ is a loose estimate of where under
// correlated noise; whitening uses the jump at s itself, which the level comparison blurs.
// `energy_tau` when no split fits better.
// The maximum-likelihood location of one shift in the mean of AR(1) noise with `phi`, and its
// likelihood ratio: least squares on the whitened series w_t = x_t − φ x_{t−1}, where a step
// at s adds 1 at t = s and 1 − φ after it (with φ = 0, the plain least-squares change point).
// The energy statistic finds that a segment holds a change, but its τ is a loose estimate of
// where under correlated noise (10 % of 5 % steps at φ = 0.5 placed more than 3 points off):
// whitening uses the jump at s itself, which a comparison of levels blurs. Holds its buffers,
// as EnergyScanner does.
class WhitenedStepScanner {
 public:
  WhitenedStepScanner(size_t min_segment, double phi) : min_segment_(min_segment), phi_(phi) {}

  struct Split {
    size_t split = 0;
    // fit / (residual variance without a step): the likelihood-ratio statistic, scale-free.
    // Negative when no split fits.
    double statistic = -1;
  };

  // The best split of v[begin, end), each side at least min_segment long.
  Split Best(std::span<const double> v, size_t begin, size_t end) {
    Split best;
    if (end - begin < 2 * min_segment_) return best;
    // Regress w on c (the level, 1 − φ) and z (the step): the best split has the least RSS,
    // i.e. the largest fit (w·z − (w·c)(c·z)/(c·c))² / (z·z − (c·z)²/(c·c)).
    const size_t first = begin + 1;
    const double c = 1 - phi_;
    double wc = 0, cc = 0, ww = 0;
    w_.resize(end - first);
    for (size_t t = first; t < end; ++t) {
      const double w = v[t] - phi_ * v[t - 1];
      w_[t - first] = w;
      wc += w * c;
      ww += w * w;
      cc += c * c;
    }
    const double null_rss = ww - wc * wc / cc;
    if (!(null_rss > 0)) return best;
    // Sums of w from each t on, so each split costs O(1).
    suffix_.assign(w_.size() + 1, 0);
    for (size_t k = w_.size(); k > 0; --k) suffix_[k - 1] = suffix_[k] + w_[k - 1];
    double best_fit = -1;
    for (size_t split = begin + min_segment_; split + min_segment_ <= end; ++split) {
      const size_t k = split - first;  // the index in w_ of t = split
      const double after = static_cast<double>(w_.size() - k - 1);
      const double wz = w_[k] + c * suffix_[k + 1];
      const double cz = c + c * c * after;
      const double zz = 1 + c * c * after;
      const double denominator = zz - cz * cz / cc;
      if (!(denominator > 1e-12)) continue;
      const double numerator = wz - wc * cz / cc;
      const double fit = numerator * numerator / denominator;
      if (fit > best_fit) {
        best_fit = fit;
        best.split = split;
      }
    }
    if (best_fit < 0) return best;
    best.statistic = best_fit / (null_rss / static_cast<double>(w_.size() - 1));
    return best;
  }

 private:
  size_t min_segment_;
  double phi_;
  std::vector<double> w_, suffix_;
};

struct SearchOutcome {
  std::vector<ChangePoint> accepted;  // by index
  std::vector<ChangePointDecision> log;
  std::vector<size_t> drift_at;  // change points dropped as drifts
};

// φ for a decision on the segmentation `begins` (unsorted first indexes of segments): 0
// unless SerialModel::kAr1.
double SerialPhi(std::span<const double> values, const ChangePointOptions& options,
                 std::vector<size_t> begins) {
  if (options.serial != SerialModel::kAr1) return 0;
  std::sort(begins.begin(), begins.end());
  // A negative φ makes shuffling conservative, not wrong: only positive dependence is
  // corrected for.
  return std::max(0.0, Ar1FromResiduals(values, begins).value_or(0));
}

// The recursion, then the re-checks.
SearchOutcome Search(std::span<const SeriesPoint> series, std::span<const double> values,
                     const ChangePointOptions& options) {
  const size_t l = options.min_segment;
  EnergyScanner scanner(l, options.exponent);
  Rng rng(options.seed);
  std::vector<double> drawn;

  double phi = 0;  // of the decision being made
  auto estimate = [&](size_t begin, size_t split, size_t end) {
    return EstimateChange(series, begin, split, end, options.confidence, options.point_confidence,
                          phi);
  };

  SearchOutcome outcome;
  std::vector<ChangePointDecision>& log = outcome.log;
  std::vector<Segment> segments = {Segment{0, series.size(), false, std::nullopt}};
  std::vector<ChangePoint>& accepted = outcome.accepted;
  auto accepted_begins = [&] {
    std::vector<size_t> begins;
    for (const ChangePoint& cp : accepted) begins.push_back(cp.index);
    return begins;
  };
  while (true) {
    // The best candidate over the segments still open to a split.
    Segment* chosen = nullptr;
    for (Segment& seg : segments) {
      if (seg.left_whole || seg.end - seg.begin < 2 * l) continue;
      if (!seg.best) seg.best = scanner.Best(values.subspan(seg.begin, seg.end - seg.begin));
      if (seg.best && (!chosen || seg.best->qhat > chosen->best->qhat)) chosen = &seg;
    }
    if (!chosen) break;
    const size_t kappa = chosen->begin + chosen->best->kappa;
    size_t tau = chosen->begin + chosen->best->tau;
    // φ from the residuals of the segmentation with this candidate, τ and κ: without it, a
    // real step would read as correlation (a step of 2.5 σ makes φ = 0.5 look like 0.65) and
    // hide itself, and so would a step back at κ (a regression and its fix); with it, φ is
    // biased down by the choice of the split, by about 0.05 when there is no change
    // (docs/nightly.md has the measurements).
    std::vector<size_t> begins = accepted_begins();
    if (kappa < chosen->end) begins.push_back(kappa);
    begins.push_back(tau);
    phi = SerialPhi(values, options, begins);
    if (phi > 0) {
      const WhitenedStepScanner::Split ml =
          WhitenedStepScanner(l, phi).Best(values, chosen->begin, kappa);
      if (ml.statistic >= 0) tau = ml.split;
      begins.back() = tau;
      phi = SerialPhi(values, options, std::move(begins));
    }
    ChangePointDecision d;
    d.index = tau;
    d.qhat = chosen->best->qhat;
    d.phi = phi;
    // The two sides q̂ compared: [begin, τ) and [τ, κ). Up to `end` instead, a third level
    // after κ would blur the right side (a step up then down reads as no step).
    d.estimate = estimate(chosen->begin, tau, kappa);

    if (options.test == ChangePointTest::kPermutation) {
      // Draw every open segment anew; the statistic is the best q̂ over all of them. Stop as
      // soon as p can no longer reach max_p: the decision is the full test's.
      NullSeries null(options, phi, &rng);
      for (const Segment& seg : segments) {
        if (seg.left_whole || seg.end - seg.begin < 2 * l) continue;
        null.AddSegment(values.subspan(seg.begin, seg.end - seg.begin));
      }
      // Under AR(1) the statistic is the whitened likelihood ratio of one step in the segment
      // (the energy statistic has less power there: of 300 series with a 5 % step at φ = 0.5,
      // 82 % found with it, 78 % with q̂; docs/nightly.md); with independent noise it is q̂,
      // as published.
      const bool whitened = options.serial == SerialModel::kAr1 && phi > 0;
      WhitenedStepScanner whitened_scanner(l, phi);
      const double observed =
          whitened ? whitened_scanner.Best(values, chosen->begin, chosen->end).statistic : d.qhat;
      const double threshold = observed * (1 - 1e-12);
      int extreme = 0;
      int run = 0;
      for (; run < options.permutations; ++run) {
        double best_q = -std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < null.segments(); ++i) {
          null.Draw(i, &drawn);
          if (whitened) {
            best_q = std::max(best_q, whitened_scanner.Best(drawn, 0, drawn.size()).statistic);
          } else if (std::optional<EnergySplit> s = scanner.Best(drawn)) {
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
      log.push_back(d);
      break;
    }
    if (IntervalHoldsZero(d.estimate)) {
      d.kind = ChangePointDecision::Kind::kIntervalTouches;
      log.push_back(d);
      chosen->left_whole = true;
      continue;
    }
    d.kind = ChangePointDecision::Kind::kAccepted;
    log.push_back(d);
    accepted.push_back(ChangePoint{d.index, d.qhat, d.p, d.estimate});
    const Segment right{d.index, chosen->end, false, std::nullopt};
    chosen->end = d.index;
    chosen->best.reset();
    segments.push_back(right);
  }

  // Re-check every change point against its final neighbours; drop the weakest failure and
  // re-check until all pass. Then drop, one at a time, change points a line explains.
  std::sort(accepted.begin(), accepted.end(),
            [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  auto drop = [&](size_t i, ChangePointDecision::Kind kind) {
    const ChangePoint& cp = accepted[i];
    ChangePointDecision d;
    d.kind = kind;
    d.phi = phi;
    d.index = cp.index;
    d.qhat = cp.qhat;
    d.p = cp.p;
    d.estimate = cp.estimate;
    log.push_back(d);
    accepted.erase(accepted.begin() + static_cast<ptrdiff_t>(i));
  };
  while (!accepted.empty()) {
    phi = SerialPhi(values, options, accepted_begins());
    std::optional<size_t> weakest;
    ChangePointDecision::Kind weakest_kind = ChangePointDecision::Kind::kDropped;
    std::optional<size_t> drift;
    double drift_margin = 0;
    for (size_t i = 0; i < accepted.size(); ++i) {
      const size_t begin = i == 0 ? 0 : accepted[i - 1].index;
      const size_t end = i + 1 == accepted.size() ? series.size() : accepted[i + 1].index;
      ChangePoint& cp = accepted[i];
      cp.estimate = estimate(begin, cp.index, end);
      if (options.test == ChangePointTest::kStudentT) cp.p = cp.estimate.p;
      bool fails = IntervalHoldsZero(cp.estimate) || cp.p > options.max_p;
      ChangePointDecision::Kind kind = ChangePointDecision::Kind::kDropped;
      if (!fails &&
          IntervalHoldsZero(EstimateWithoutOutlier(series, begin, cp.index, end, options, phi))) {
        fails = true;
        kind = ChangePointDecision::Kind::kRestsOnOnePoint;
      }
      if (fails && (!weakest || cp.estimate.p > accepted[*weakest].estimate.p)) {
        weakest = i;
        weakest_kind = kind;
      }
      if (options.detect_drift && !fails) {
        const auto [step_rss, line_rss] = StepAndLineRss(values, begin, cp.index, end);
        // The step chose its location among n, the line had no such choice: the step must fit
        // better by 2 log n residual variances (twice what BIC, Schwarz 1978, charges for a
        // parameter; without it 32 steps were reported per 100 drifting series with
        // independent noise, with it 1.5). Not
        // scaled up for φ: that turns real steps into drifts (docs/nightly.md).
        const double n = static_cast<double>(end - begin);
        const double penalty = 2 * std::log(n) * line_rss / (n - 2);
        if (line_rss <= step_rss + penalty &&
            (!drift || step_rss + penalty - line_rss > drift_margin)) {
          drift = i;
          drift_margin = step_rss + penalty - line_rss;
        }
      }
    }
    if (weakest) {
      drop(*weakest, weakest_kind);
    } else if (drift) {
      outcome.drift_at.push_back(accepted[*drift].index);
      drop(*drift, ChangePointDecision::Kind::kDrift);
    } else {
      break;
    }
  }
  return outcome;
}

}  // namespace

absl::StatusOr<ChangePointResult> DetectChangePoints(std::span<const SeriesPoint> series,
                                                     const ChangePointOptions& options) {
  if (Status s = ValidateOptions(options); !s.ok()) return s;
  if (Status s = ValidateSeries(series, options.max_points); !s.ok()) return s;

  std::vector<double> values(series.size());
  for (size_t i = 0; i < series.size(); ++i) values[i] = series[i].value;

  ChangePointResult result;
  SearchOutcome outcome = Search(series, values, options);
  std::vector<size_t> begins;
  for (const ChangePoint& cp : outcome.accepted) begins.push_back(cp.index);
  result.serial.model = options.serial;
  result.serial.phi = SerialPhi(values, options, begins);
  const double phi = result.serial.phi;

  // Trends: the final segments a drift was found in.
  if (options.detect_drift && !outcome.drift_at.empty()) {
    std::vector<size_t> bounds = {0};
    for (const ChangePoint& cp : outcome.accepted) bounds.push_back(cp.index);
    bounds.push_back(series.size());
    for (size_t s = 0; s + 1 < bounds.size(); ++s) {
      const bool has_drift =
          std::any_of(outcome.drift_at.begin(), outcome.drift_at.end(),
                      [&](size_t at) { return at > bounds[s] && at < bounds[s + 1]; });
      if (!has_drift) continue;
      Trend trend = FitTrend(series, bounds[s], bounds[s + 1], options.confidence, phi);
      const bool excludes_zero = trend.slope_low > 0 || trend.slope_high < 0;
      const bool large_enough =
          options.drift_threshold == 0 ||
          (trend.relative_change && std::fabs(*trend.relative_change) >= options.drift_threshold);
      if (excludes_zero && large_enough) result.trends.push_back(trend);
    }
  }
  result.change_points = std::move(outcome.accepted);
  result.log = std::move(outcome.log);
  return result;
}

}  // namespace tlbfleet::stats
