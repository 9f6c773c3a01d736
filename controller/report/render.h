#pragma once
// Renders the comparison's one message, the proto Report (compare.h builds it once, where the
// samples are), for people (compare-kernels text plus verdicts) and for programs (JSON: the
// message in protobuf's JSON mapping; CSV: one record per metric, sweep value and arm). The
// controller, the CLI and `compare --from-csv` all render this message; nothing here computes
// a statistic.

#include <string>

#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

// compare-kernels style: the title, the "flush ceiling per arm" and "hosts per arm" lines, then
// per metric a title and a header of arm names, then per sweep value the group's rows (Min,
// Hmean or Amean, Stddev, CoeffVar, Max, BAmean-99, BAmean-95: Report.Group.stats), each cell
// "%12.2f (%7.2f%%)", the headline row's "%12.2f *%7.2f%%*" where the arm's test is
// significant. After each metric's table (when the report has records), a verdict line per
// (sweep value, arm) with the ratio interval and tests, its notes and the pooled cross-checks.
std::string RenderReportText(const v1::Report& report);

// The Report in protobuf's JSON mapping (field names as in the .proto, defaults printed).
std::string RenderReportJson(const v1::Report& report);

// The records of every group (Report.Group.records) as CSV: a header of the record's column
// fields, then a line per record; an unset field is an empty cell. RFC 4180 quoting.
std::string RenderReportCsv(const v1::Report& report);

}  // namespace tlbfleet::report
