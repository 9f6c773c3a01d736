#pragma once
// A run as LKP result roots (docs/formats.md#lkp): what lkp-tests' compare and its stats
// tools read. One result root per arm and sweep value, one numbered run directory per job
// iteration:
//   OUT/ARM/PARAM/N/stats.json      {"ebizzy.throughput": 1234.5, ...}: that run's stats
//   OUT/ARM/PARAM/N/BENCH.json      {"ebizzy.throughput": [1234.5], ...}: the program's
//   OUT/ARM/PARAM/N/job.yaml        testcase, parameters, kernel, host, tlbfleet ids
//   OUT/ARM/PARAM/matrix.json       {"ebizzy.throughput": [run 0, run 1, ...],
//                                    "stats_source": ["ARM/PARAM/0/stats.json", ...]}
//   OUT/ARM/PARAM/avg.json, stddev.json   per key, over the runs (population stddev, as LKP)
// PARAM is "NAME=VALUE" of the sweep, or "default" for a run without one.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/report/export_files.h"

namespace tlbfleet::report {

struct LkpExport {
  std::vector<ExportFile> files;
  std::vector<std::string> warnings;
};

// The LKP stats key of a tlbfleet metric: LKP's own where its parser has one
// ("ebizzy.throughput", "netperf.Throughput_Mbps", "perf-bench-sched-pipe.ops_per_sec", ...),
// else "BENCHMARK.METRIC".
std::string LkpStatKey(const std::string& benchmark, const std::string& metric);

// The whole export. NOT_FOUND when no arm has a counted sample; INVALID_ARGUMENT naming `arm`
// for an arm name that cannot be a directory.
absl::StatusOr<LkpExport> ExportLkp(const ExportRun& run);

}  // namespace tlbfleet::report
