#pragma once
// The report of a ceiling sweep (`sweep: {ceiling: [1, 2, 4, ..., 512]}`): per CPU
// microarchitecture, arm and metric, the metric against the ceiling, and the recommendation
// the 2012-2014 patches made by hand for IvyBridge: the smallest ceiling whose result is not
// worse than the best by the comparison's verdict rule (report::Compare of every value
// against the best one: its bootstrap ratio interval, never a threshold of our own), with the
// flush profile at that value. Pure; built from a run's samples.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/report/comparison.h"
#include "controller/report/flush_profile.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

struct CeilingValue {
  int64_t ceiling = 0;
  double mean = 0;  // mean of boot means
  size_t samples = 0;
  size_t boots = 0;
  // Against the best value ("best" for the best one itself): better, worse, same, unknown.
  std::string verdict;
  std::optional<double> ratio, ratio_low, ratio_high;  // mean / best mean
};

struct CeilingRecommendation {
  std::string microarch;
  std::string arm;
  std::string metric;
  std::string unit;
  stats::Direction direction = stats::Direction::kHigherIsBetter;
  std::vector<CeilingValue> values;  // ascending ceiling
  int64_t best = 0;
  int64_t recommended = 0;
  // "same" (equivalent to the best), "better", "unknown" (not worse, but the comparison cannot
  // tell it apart yet: measure more to be sure) or "best".
  std::string recommended_verdict;
  std::optional<ArmFlushProfile> profile;  // at the recommended ceiling, when recorded
};

// One recommendation per (microarch, arm, metric) of the run's aggregate samples of a ceiling
// sweep (param_name "ceiling"); `metric` "" = every metric. FAILED_PRECONDITION when the
// samples are not a ceiling sweep's.
absl::StatusOr<std::vector<CeilingRecommendation>> RecommendCeilings(
    const std::vector<v1::Sample>& samples, const std::string& metric = "");

// For people: per recommendation a text plot of the metric against the ceiling (a bar per
// value, its mean and verdict against the best), the recommendation, and the flush profile.
std::string RenderCeilingReport(const std::vector<CeilingRecommendation>& recommendations);
// The recommendation as the proto Report carries it (Report.ceiling_recommendations), and back
// for RenderCeilingReport.
v1::CeilingRecommendation CeilingRecommendationToProto(const CeilingRecommendation& rec);
CeilingRecommendation CeilingRecommendationFromProto(const v1::CeilingRecommendation& rec);

}  // namespace tlbfleet::report
