#pragma once
// Whether a series moved for real (pure, given the comparison). The change-point detector
// (controller/stats/changepoint.h) proposes where a series changed, using each point's
// interval; the calibrated comparison of the runs on either side then decides what it is.
// Only a change that comparison calls worse is a regression: a change point the comparison
// cannot confirm raises no alarm (it is reported as unconfirmed, with the comparison's words).
//
// The comparison is injected (std::function), so this unit does not depend on how the
// statistics compute it; in the controller it compares the raw samples of the runs behind the
// points (controller/report), never the points' estimates alone.

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/nightly/series.h"
#include "controller/stats/changepoint.h"

namespace tlbfleet::nightly {

struct CalibratedVerdict {
  // Of `after` against `before`, in the metric's own sense of better.
  enum class Kind { kBetter, kWorse, kSame, kUnknown };
  Kind kind = Kind::kUnknown;
  double ratio = 1, ratio_low = 1, ratio_high = 1;  // after / before, with its interval
  std::string summary;                              // the comparison's own words
};
const char* CalibratedVerdictName(CalibratedVerdict::Kind kind);  // "better", "worse", ...

// Compares the runs of the points `after` with those of `before` (adjacent in the series,
// or a drift's ends). `phi` is the AR(1) coefficient of the series' points the detector
// estimated: consecutive runs are then not independent units, and the comparison must widen
// its intervals for it (docs/nightly.md, "The confirmation under correlated nights").
using CalibratedComparison = std::function<absl::StatusOr<CalibratedVerdict>(
    const SeriesKey& key, std::span<const HistoryPoint> before, std::span<const HistoryPoint> after,
    double phi)>;

struct RegressionOptions {
  stats::ChangePointOptions detector;
  // Only the latest `window` points are searched (the detector's cost is quadratic).
  size_t window = 200;
  // At most this many points on each side of a change go to the comparison: the ones next to
  // it, within the change's own segments.
  size_t compare_points = 10;
  // A drift the detector reports (stats::Trend) is judged too: the calibrated comparison of
  // its last `compare_points` nights against its first ones. Off by default: a drift has no
  // commit to bisect to, and a lab drifts for reasons of its own (docs/nightly.md).
  bool drift_opens_regression = false;
};

struct Finding {
  enum class Kind { kRegression, kImprovement, kUnconfirmed };
  Kind kind = Kind::kUnconfirmed;
  size_t index = 0;           // in Series::points: the first point after the change
  std::string first_bad_run;  // points[index].provenance.run_id
  std::string last_good_run;  // points[index - 1].provenance.run_id
  stats::ChangePoint change;  // the detector's numbers (indexes relative to the series)
  CalibratedVerdict verdict;
  // Set for a drift (RegressionOptions::drift_opens_regression): `index` is its first point,
  // `first_bad_run` that point's run and `last_good_run` the run before it ("" at the
  // series' start); `change` is unset.
  std::optional<stats::Trend> drift;
};
const char* FindingKindName(Finding::Kind kind);  // "regression", "improvement", "unconfirmed"

// The series' change points (and, when asked, drifts) whose first run after the change is not
// in `known_first_runs` (the ones already recorded), oldest first, each judged by `compare`.
// INVALID_ARGUMENT for a point whose interval does not hold its estimate or whose confidence
// differs from the others'; the comparison's errors are returned as they are.
absl::StatusOr<std::vector<Finding>> FindChanges(const Series& series,
                                                 const RegressionOptions& options,
                                                 const CalibratedComparison& compare,
                                                 const std::set<std::string>& known_first_runs);

}  // namespace tlbfleet::nightly
