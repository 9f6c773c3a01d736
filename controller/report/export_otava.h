#pragma once
// History series (`tlbfleet series`) as the CSV Apache Otava (formerly Hunter) reads, with
// the test definition that points Otava at it (docs/formats.md#otava):
//   OUT/tlbfleet.csv   time,run,kernel,boot_entry,arm,METRIC...: one row per run (and arm),
//                      oldest first; one column per series, the point's estimate (the mean of
//                      boot means); a series without a point in that run leaves its cell empty
//   OUT/otava.yaml     tests: {tlbfleet: {type: csv, file: tlbfleet.csv, time_column: time,
//                      attributes: [...], metrics: {METRIC: {direction: 1 or -1, scale: 1}}}}
// Columns are named by the series' metric, or "METRIC@SERIES_ID" when two chosen series share
// a metric. Times are UTC, "2026-01-31 02:00:00 +0000".

#include <vector>

#include "absl/status/statusor.h"
#include "controller/report/export_files.h"
#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::report {

// NOT_FOUND naming `series` when `series` is empty or none has a point.
absl::StatusOr<std::vector<ExportFile>> ExportOtava(
    const std::vector<tlbfleet::v1::Series>& series);

}  // namespace tlbfleet::report
