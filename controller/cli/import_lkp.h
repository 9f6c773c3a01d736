#pragma once
// `tlbfleet import-lkp JOB.yaml`: turns an LKP job file (lkp-tests' jobs/*.yaml) into tlbfleet
// run specs, one per atomic job of the file, as one multi-document YAML text.
//
// The job is expanded as LKP's `lkp split-job` expands it: the first YAML document is the
// base, every further document is the base with that document merged over it, and every list
// value (e.g. `will-it-scale: {mode: [process, thread], test: [...]}`) multiplies the jobs.
// LKP's value syntax is understood: `100%` of the CPUs (a sweep bound in `ncpus`), `300s`,
// `100x`, `10K`. `if role client:` sections are read (the client is where the benchmark
// runs; tlbfleet's netperf starts its own server), `if role server:` ones are not.
//
// The suites that map (docs/cli.md#import-lkp-job): will-it-scale (tlb_flush1-3), ebizzy,
// hackbench, netperf, pft, perf-bench-sched-pipe. A key no mapping uses, a value that does not
// map (a will-it-scale test tlbfleet does not have), and what LKP computes on the host
// (hackbench's default loops) are warnings: nothing is dropped silently.

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tlbfleet::cli {

struct LkpImport {
  std::string yaml;                   // run specs separated by "---"; each passes ParseRunSpec
  std::vector<std::string> warnings;  // "<source>: <field>: <why it was not used>", each once
};

// INVALID_ARGUMENT "<source>: <field>: ..." when the text is not an LKP job (not YAML, no
// `suite`), its suite has no tlbfleet workload, or none of its atomic jobs can be imported.
absl::StatusOr<LkpImport> ImportLkpJob(std::string_view text, std::string_view source);

// The command: reads `file` ("-" = stdin), prints the YAML to `out` and each warning as
// "tlbfleet: <warning>" to `err`. Returns 0, or 2 (exit_codes.h) for an unreadable file or a
// job with nothing to import.
int ImportLkpCommand(const std::string& file, std::ostream& out, std::ostream& err);

}  // namespace tlbfleet::cli
