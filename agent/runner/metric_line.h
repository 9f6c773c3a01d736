#pragma once
// Parses one line of `run-workload --json` output (see agent/workloads/bench_cli.h):
//   {"metric":"records_per_sec","value":1234.5,"unit":"records/s","better":"higher",
//    "series":"thread0","iteration":1,"param":{"threads":"2"}}
// into the measurement fields of a v1::Sample. Provenance is not taken from the line: the
// agent fills it from the assignment and the host (the workload's "param" and "iteration"
// echo what the agent passed in).

#include <string_view>

#include "absl/status/statusor.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::agent {

// Fills metric, value, unit, better and series (absent = "" = the aggregate).
// INVALID_ARGUMENT if the line is not a JSON object, or metric/value are missing or of the
// wrong type, or better is neither "higher" nor "lower".
absl::StatusOr<v1::Sample> ParseMetricLine(std::string_view line);

}  // namespace tlbfleet::agent
