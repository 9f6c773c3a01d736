#pragma once
// An mmtests results directory (docs/formats.md#import) as a finished tlbfleet run: what
// `run-mmtests.sh` leaves, and what `tlbfleet export --format mmtests` writes.
//
//   DIR/ARM/iter-N/BENCH/logs/...      the logs BENCH's parse-results reads (one arm per
//                                      directory, every iter-N from 0 without a gap)
//   DIR/ARM/iter-N/kernel.version      "Linux HOST RELEASE ..." (or the release alone)
//   DIR/ARM/iter-N/tests-timestamp     start / test begin / test end, Unix times
//   DIR/ARM/iter-N/tlbfleet-host       "key :: value" (tlbfleet's own exports only)
//
// BENCH is one of the benchmarks export_mmtests.h writes: ebizzy, hackbench-{process,thread}-
// {pipes,sockets}, netperf-ipv{4,6}-{tcp,udp,tcp-rr,udp-rr}, perfpipe, usemem, pft, tlbflush.
// The factor in the log names (ebizzy-4-1.log: 4 threads) becomes the benchmark's factor
// parameter (threads, groups, message_size, processes); "_" none.

#include "absl/status/statusor.h"
#include "controller/report/import_results.h"

namespace tlbfleet::report {

// INVALID_ARGUMENT, naming what is wrong: `DIR` when no ARM/iter-N/BENCH/logs/ is there (not
// an mmtests result root), a missing iter-N ("ARM/iter-1: missing"), arms of different
// benchmarks, a benchmark tlbfleet has no workload for; a log that does not parse as FILE:LINE.
absl::StatusOr<ImportedRun> ImportMmtestsResults(const ImportFiles& files);

}  // namespace tlbfleet::report
