#pragma once
// The one seam between the nightly decisions (is a change a regression, is a bisection step's
// entry like good or like bad) and the statistics: two arms' observations of one metric and
// sweep value, compared by the controller's comparison (controller/report: Compare, its
// bootstrap ratio interval and verdict rule), never by a threshold of our own. When the
// comparison's API changes, this file is the only one to follow it.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/bisect/bisection.h"
#include "controller/report/comparison.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::bisect {

// An arm as the comparison summarised it.
struct ArmFigures {
  double mean = 0;  // mean of boot means
  double cv_pct = 0;
  uint32_t boots = 0;
  uint32_t samples = 0;
};

struct ArmComparison {
  Difference difference = Difference::kUnknown;  // `other` against `base`, metric's own sense
  std::optional<double> ratio, low, high;        // mean(other) / mean(base), with its interval
  std::string summary;                           // the comparison's verdict and its reasons
  ArmFigures base, other;
};

// Compares arm `other` with arm `base` among `observations`, for `metric` and the sweep value
// labelled `param` ("threads=4", or "" without a sweep; report::SweepLabel). NOT_FOUND when
// either arm has no observation of them.
// `level` is the confidence of the verdict's intervals (report::CompareOptions::level).
absl::StatusOr<ArmComparison> CompareArms(const std::vector<report::Observation>& observations,
                                          const std::string& base, const std::string& other,
                                          const std::string& metric, const std::string& param,
                                          double level = 0.95);

// A run's samples (the controller's GetResults).
using SampleLoader =
    std::function<absl::StatusOr<std::vector<v1::Sample>>(const std::string& run_id)>;

// The aggregate samples of `run_ids` as observations, each boot told apart by run and boot id.
absl::StatusOr<std::vector<report::Observation>> LoadObservations(
    const SampleLoader& load, const std::vector<std::string>& run_ids);

// The production StepComparator: each step's runs measure arms named "good", "tested" and
// "bad" (the endpoint check: "good" and "bad"; a commit bisection's parent check: "good", the
// parent, and "tested", the culprit); the tested entry is compared with good and with bad
// (CompareArms), and ClassifyStep turns the two verdicts into the step's (the parent check:
// ClassifyAgainstParent).
StepComparator MakeStepComparator(SampleLoader load);

// The arm names of a bisection's measurement runs.
inline constexpr char kGoodArm[] = "good";
inline constexpr char kTestedArm[] = "tested";
inline constexpr char kBadArm[] = "bad";

}  // namespace tlbfleet::bisect
