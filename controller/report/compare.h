#pragma once
// A comparison (comparison.h) as the proto Report the Compare RPC and the HTTP API return,
// and that Report as compare-kernels text.

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/report/comparison.h"
#include "tlbfleet/v1/common.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::report {

// The proto form of a comparison: one Report.Group per (metric, sweep value) with mmtests'
// rows — Min, then Hmean for higher-is-better metrics or Amean for lower-is-better, Stddev,
// CoeffVar, Max — and the verdict of every arm but the baseline. pct_diff follows mmtests:
// higher-is-better new/base*100-100, lower-is-better 100-new/base*100, so positive is always
// better; the baseline's is 0. For Stddev and CoeffVar pct_diff is the plain relative change
// (lower is better). Where pct_diff cannot be computed (either value undefined, or a zero
// baseline against a non-zero value) it is 0; RenderText prints it as NaN.
v1::Report ReportFromComparison(const Comparison& comparison);

// Compare(ObservationsFromSamples(samples)) with `arm_order` (baseline first), as a Report.
// Samples of arms not in `arm_order` and per-thread series are left out; an arm without
// samples in a group has n = 0 and undefined values. A missing or BETTER_UNSPECIFIED
// direction reads as higher-is-better. INVALID_ARGUMENT if `arm_order` is empty or names an
// arm twice, or as Compare.
absl::StatusOr<v1::Report> BuildReport(const std::vector<v1::Sample>& samples,
                                       const std::vector<std::string>& arm_order,
                                       const CompareOptions& options = {});

// The CompareRequest's options (margin, level, pairing, unadjusted, baseline); unset fields
// keep CompareOptions' defaults. INVALID_ARGUMENT naming the field for an invalid value.
absl::StatusOr<CompareOptions> CompareOptionsFromRequest(const v1::CompareRequest& request);

// What a run's report holds beside the comparison.
struct RunReportOptions {
  // The run's spec: each arm's flush ceiling (AttachArmCeilings). Null: not known.
  const v1::RunSpec* spec = nullptr;
  // Flush profiles at this sweep value only; nullopt: over every sweep value.
  std::optional<std::string> flush_param;
  std::string ceiling_metric;  // a ceiling sweep's recommendations for this metric ("" = all)
  // Non-empty for arms of different runs (cross_run.h): added to every verdict's notes, and
  // the report's scope is "across runs".
  std::string across_runs_note;
  // An adaptive run with stop: verdict (Run.adaptive_rows): each judged row's verdict is its
  // sequential one, and its notes say what the fixed-sample test of every sample says — after
  // adaptive looks only the sequential verdict keeps its error rate
  // (docs/statistics.md#sequential-verdicts). Null or empty: the fixed-sample verdicts.
  const google::protobuf::RepeatedPtrField<v1::AdaptiveRow>* adaptive_rows = nullptr;
};

// What the Compare RPC answers for a run's samples: the Report (with `title`) — the
// comparison, each arm's hosts and ceiling, the flush profiles, a ceiling sweep's
// recommendations — and its text (RenderReportText). `options.arm_order` is the run's arms,
// baseline first. Errors as Compare.
absl::StatusOr<v1::CompareResponse> CompareRunSamples(const std::vector<v1::Sample>& samples,
                                                      const CompareOptions& options,
                                                      const std::string& title,
                                                      const RunReportOptions& extras = {});

}  // namespace tlbfleet::report
