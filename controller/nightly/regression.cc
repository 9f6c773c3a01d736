#include "controller/nightly/regression.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tlbfleet::nightly {

std::string SeriesKey::ToString() const {
  auto part = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  return absl::StrJoin(
      {part(microarch), part(boot_entry), part(config), part(benchmark), part(param), part(metric)},
      "/");
}

const char* CalibratedVerdictName(CalibratedVerdict::Kind kind) {
  switch (kind) {
    case CalibratedVerdict::Kind::kBetter:
      return "better";
    case CalibratedVerdict::Kind::kWorse:
      return "worse";
    case CalibratedVerdict::Kind::kSame:
      return "same";
    case CalibratedVerdict::Kind::kUnknown:
      return "unknown";
  }
  return "?";
}

const char* FindingKindName(Finding::Kind kind) {
  switch (kind) {
    case Finding::Kind::kRegression:
      return "regression";
    case Finding::Kind::kImprovement:
      return "improvement";
    case Finding::Kind::kUnconfirmed:
      return "unconfirmed";
  }
  return "?";
}

absl::StatusOr<std::vector<Finding>> FindChanges(const Series& series,
                                                 const RegressionOptions& options,
                                                 const CalibratedComparison& compare,
                                                 const std::set<std::string>& known_first_runs) {
  const size_t n = series.points.size();
  const size_t first = n > options.window ? n - options.window : 0;
  std::vector<stats::SeriesPoint> points;
  points.reserve(n - first);
  for (size_t i = first; i < n; ++i) {
    const HistoryPoint& p = series.points[i];
    if (p.confidence != series.points[first].confidence) {
      return absl::InvalidArgumentError(absl::StrCat(
          "series ", series.key.ToString(), ": point ", i, " (run ", p.provenance.run_id,
          ") has a ", p.confidence, " interval, the others ", series.points[first].confidence));
    }
    if (!(p.low <= p.estimate && p.estimate <= p.high)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "series ", series.key.ToString(), ": point ", i, " (run ", p.provenance.run_id,
          "): interval [", p.low, ", ", p.high, "] does not hold its estimate ", p.estimate));
    }
    stats::SeriesPoint sp;
    sp.value = p.estimate;
    sp.low = p.low;
    sp.high = p.high;
    points.push_back(sp);
  }
  if (points.empty()) return std::vector<Finding>{};
  stats::ChangePointOptions detector = options.detector;
  detector.point_confidence = series.points[first].confidence;
  detector.max_points = std::max(detector.max_points, points.size());
  absl::StatusOr<stats::ChangePointResult> result = stats::DetectChangePoints(points, detector);
  if (!result.ok()) {
    return absl::Status(result.status().code(), absl::StrCat("series ", series.key.ToString(), ": ",
                                                             result.status().message()));
  }
  std::vector<Finding> findings;
  for (stats::ChangePoint cp : result->change_points) {
    const size_t index = first + cp.index;
    const std::string& first_bad = series.points[index].provenance.run_id;
    if (known_first_runs.count(first_bad) > 0) continue;
    // The points next to the change, within its own segments.
    const size_t before_begin =
        std::max(first + cp.estimate.before.begin,
                 index > options.compare_points ? index - options.compare_points : 0);
    const size_t after_end =
        std::min(first + cp.estimate.after.end, index + options.compare_points);
    const std::span<const HistoryPoint> all(series.points);
    absl::StatusOr<CalibratedVerdict> verdict =
        compare(series.key, all.subspan(before_begin, index - before_begin),
                all.subspan(index, after_end - index), result->serial.phi);
    if (!verdict.ok()) return verdict.status();
    Finding f;
    f.index = index;
    f.first_bad_run = first_bad;
    f.last_good_run = series.points[index - 1].provenance.run_id;
    cp.index = index;
    cp.estimate.before.begin += first;
    cp.estimate.before.end += first;
    cp.estimate.after.begin += first;
    cp.estimate.after.end += first;
    f.change = cp;
    f.verdict = *std::move(verdict);
    switch (f.verdict.kind) {
      case CalibratedVerdict::Kind::kWorse:
        f.kind = Finding::Kind::kRegression;
        break;
      case CalibratedVerdict::Kind::kBetter:
        f.kind = Finding::Kind::kImprovement;
        break;
      default:
        f.kind = Finding::Kind::kUnconfirmed;
    }
    findings.push_back(std::move(f));
  }
  if (options.drift_opens_regression) {
    for (const stats::Trend& t : result->trends) {
      const size_t begin = first + t.begin;
      const size_t end = first + t.end;
      const std::string& first_run = series.points[begin].provenance.run_id;
      if (known_first_runs.count(first_run) > 0) continue;
      // The drift's ends: where it started against where it has got to.
      const size_t k = std::min(options.compare_points, (end - begin) / 2);
      const std::span<const HistoryPoint> all(series.points);
      absl::StatusOr<CalibratedVerdict> verdict =
          compare(series.key, all.subspan(begin, k), all.subspan(end - k, k), result->serial.phi);
      if (!verdict.ok()) return verdict.status();
      Finding f;
      f.index = begin;
      f.first_bad_run = first_run;
      f.last_good_run = begin > 0 ? series.points[begin - 1].provenance.run_id : "";
      f.drift = t;
      f.drift->begin = begin;
      f.drift->end = end;
      f.verdict = *std::move(verdict);
      f.kind = f.verdict.kind == CalibratedVerdict::Kind::kWorse    ? Finding::Kind::kRegression
               : f.verdict.kind == CalibratedVerdict::Kind::kBetter ? Finding::Kind::kImprovement
                                                                    : Finding::Kind::kUnconfirmed;
      findings.push_back(std::move(f));
    }
    std::stable_sort(findings.begin(), findings.end(),
                     [](const Finding& a, const Finding& b) { return a.index < b.index; });
  }
  return findings;
}

}  // namespace tlbfleet::nightly
