#pragma once
// The samples of a run as CSV, the one writer of it: `tlbfleet results --format csv` and the
// HTTP API's GET /api/v1/runs/{run_id}/results.csv (the dashboard's download) print these
// bytes (with common/csv.h's CsvRow). Also the number helpers they use.

#include <string>
#include <string_view>
#include <vector>

#include "common/csv.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::report {

// The shortest decimal form that parses back to exactly `value` ("1.5", "1e+20", "nan").
std::string FormatDouble(double value);
// "higher", "lower" or "" (unspecified).
std::string BetterName(tlbfleet::v1::Better better);

// The header line of the samples CSV.
std::string ResultsCsvHeader();
// One CSV line per sample, in the column order of ResultsCsvHeader().
std::string ResultsCsvRow(const tlbfleet::v1::Sample& sample);
// Header plus every sample.
std::string FormatResultsCsv(const tlbfleet::v1::GetResultsResponse& results);

}  // namespace tlbfleet::report
