#pragma once
// Renders a Comparison (comparison.h) for people (compare-kernels text plus verdicts) and
// for programs (JSON, CSV: one record per metric, sweep value and arm).

#include <string>

#include "controller/report/comparison.h"

namespace tlbfleet::report {

// compare-kernels style: per metric a title and a header of arm names, then per sweep value
// the rows Min, Hmean (higher-is-better) or Amean (lower-is-better), Stddev, CoeffVar, Max,
// BAmean-99, BAmean-95, each cell "%12.2f (%7.2f%%)". The headline row's cell reads
// "%12.2f *%7.2f%%*" when Welch's p < alpha. After each metric's table, a verdict line per
// (sweep value, arm) with the ratio interval and tests, and its notes.
std::string RenderComparisonText(const Comparison& comparison, const std::string& title = "");

// A JSON array, one object per (param, metric, arm), fields as docs/statistics.md lists
// them; undefined values and the baseline's comparison fields are null.
std::string RenderComparisonJson(const Comparison& comparison);

// The same records as CSV with a header line; null is an empty field.
std::string RenderComparisonCsv(const Comparison& comparison);

}  // namespace tlbfleet::report
