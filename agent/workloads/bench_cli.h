#pragma once
// The command line of `tlbfleet-bench`, also used by the agent's hidden
// `tlbfleet-agent run-workload ...` mode that the runner executes in a child process.
//
//   tlbfleet-bench <workload> [classic flags...] [--set name=value]... [--json] [--iterations N]
//   tlbfleet-bench --list
//
// Without --json it prints what the classic tool prints. With --json it prints one JSON
// object per line, per measurement per iteration:
//   {"metric":"records_per_sec","value":1234.5,"unit":"records/s","better":"higher",
//    "series":"thread0","iteration":1,"param":{"threads":"2",...}}
// ("series" is omitted for the aggregate value.) Exit status: 0 on success, 2 on bad
// arguments or parameters (message on stderr naming the parameter), 1 when the workload fails.

#include <string>

#include "agent/workloads/workload.h"

namespace tlbfleet::workloads {

// argv[0] is the program (or subcommand) name and argv[1] the workload; the workload must
// be registered (call LinkAllWorkloads() first). Writes results to stdout, flushed after
// every iteration, and errors to stderr. Never throws.
int BenchMain(int argc, char** argv);

// One --json line, without the trailing newline: keys in the order shown above, `iteration`
// 1-based, "param" holding every resolved parameter (sorted by name), values as the
// shortest decimal that reads back as the same double (non-finite values as null).
std::string MeasurementJsonLine(const Measurement& measurement, int iteration,
                                const Params& params);

}  // namespace tlbfleet::workloads
