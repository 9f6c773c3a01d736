#pragma once
// mmtests compare-kernels style comparison of a run's arms.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

// Builds one Report.Group per (metric, sweep value) from the aggregate samples (series "")
// of `samples`; per-thread series are left out. `arm_order` lists the arms, baseline first.
// Groups are ordered by metric (the order they first appear in `samples`), then by sweep
// value (numerically when every value is a number). Rows, in order: Min, then Hmean for
// higher-is-better metrics or Amean for lower-is-better, Stddev, CoeffVar, Max.
// pct_diff follows mmtests: higher-is-better new/base*100-100, lower-is-better
// 100-new/base*100, so positive is always better; the baseline's is 0.
// For Stddev and CoeffVar pct_diff is the plain relative change (lower is better).
// Where pct_diff cannot be computed (either value undefined, or a zero baseline against a
// non-zero value) it is 0; RenderText prints it as NaN. A missing or BETTER_UNSPECIFIED
// direction is read as higher-is-better. Samples of arms not in `arm_order` are ignored; an
// arm without samples in a group has n = 0 and undefined values.
// INVALID_ARGUMENT if `arm_order` is empty or names an arm twice.
absl::StatusOr<v1::Report> BuildReport(const std::vector<v1::Sample>& samples,
                                       const std::vector<std::string>& arm_order);

// Renders the report as compare-kernels text: a header with the arm names, then per group
// a title line "<metric> (<unit>, higher is better)" and rows like
//   Hmean    threads=1     6395.44 (   0.00%)     6789.09 (   6.16%)
// Values print as %12.2f followed by " (%7.2f%%)"; an undefined value prints "NaN" padded.
std::string RenderText(const v1::Report& report);

}  // namespace tlbfleet::report
