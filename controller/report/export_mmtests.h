#pragma once
// A run as an mmtests results directory (docs/formats.md#mmtests): what mmtests'
// compare-mmtests.pl and compare-kernels.sh read, so that
//   bin/compare-mmtests.pl --directory OUT --benchmark BENCH --names ARM1,ARM2
// of an mmtests checkout prints the Min, Hmean/Amean and Max `tlbfleet compare` prints.
//
// Layout, one directory per arm and one iter-N per boot (in the order of the boot's first job):
//   OUT/ARM/iter-N/BENCH/logs/<the logs BENCH's parse-results reads>
//   OUT/ARM/iter-N/kernel.version, tests-timestamp, tlbfleet-host
// The logs are written in the layout each benchmark's own tool prints (ebizzy, perf bench,
// netperf, GNU time, pft, tlbflush), with the values tlbfleet stored.

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/report/export_files.h"

namespace tlbfleet::report {

struct MmtestsExport {
  std::vector<ExportFile> files;
  std::vector<std::string> names;       // the arm directories, for --names
  std::vector<std::string> benchmarks;  // mmtests benchmark of each name, same order
  // Samples that could not be written (a job without its primary metric), and anything an
  // mmtests parser would read differently from tlbfleet (e.g. factors with unequal iterations).
  std::vector<std::string> warnings;
};

// The mmtests benchmark a tlbfleet benchmark runs as with these (complete) parameters:
// "ebizzy", "hackbench-process-pipes", "netperf-ipv4-tcp-rr", "perfpipe" (pipetest),
// "usemem", and the ones mmtests no longer parses, "pft" and "tlbflush". INVALID_ARGUMENT
// naming `format` for a benchmark mmtests has no parser for.
absl::StatusOr<std::string> MmtestsBenchmarkName(const std::string& benchmark,
                                                 const std::map<std::string, std::string>& params);

// The whole export. INVALID_ARGUMENT naming the field: a benchmark mmtests cannot read, an arm
// name that cannot be a directory or an entry of --names (empty, '/', ',', leading '.'), a
// sweep value with a '-' or a blank (mmtests splits file names on '-'); NOT_FOUND when no arm
// has a counted sample.
absl::StatusOr<MmtestsExport> ExportMmtests(const ExportRun& run);

}  // namespace tlbfleet::report
