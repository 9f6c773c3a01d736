#pragma once
// A comparison as Bencher Metric Format (docs/formats.md#bmf), the JSON `bencher run --adapter
// json` reads: {BENCHMARK: {MEASURE: {"value": V, "lower_value": L, "upper_value": U}}}.
//
// One benchmark per arm and sweep value, "ebizzy/threads=4/c512" ("ebizzy/c512" without a
// sweep). Per metric of the comparison:
//   METRIC        value: the arm's headline mean (Hmean for higher-is-better metrics, Amean
//                 for lower-is-better: the row `tlbfleet compare` prints), lower_value and
//                 upper_value: its Min and Max;
//   METRIC_ratio  (every arm but the baseline) value: the ratio of geometric means against
//                 the baseline, lower_value/upper_value: its confidence interval.
// An undefined figure is left out (a measure without a value is left out whole).

#include <string>

#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

// `benchmark` is the run's benchmark, the first part of every name.
std::string ExportBmf(const tlbfleet::v1::Report& report, const std::string& benchmark);

}  // namespace tlbfleet::report
