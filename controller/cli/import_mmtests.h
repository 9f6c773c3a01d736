#pragma once
// `tlbfleet import-mmtests CONFIG`: turns an mmtests config file (config-global-dhp__*) into
// tlbfleet run specs, one per benchmark in $MMTESTS, as one multi-document YAML text.
//
// The file is read, never executed: only `[export] VAR=value` lines count. Values may be
// quoted and may use $VAR / ${VAR} and $((arithmetic)); NUMCPUS (mmtests 0.15) or
// NUM_LOGICAL_CPUS (today's mmtests) becomes the run spec's `ncpus`, evaluated on the host
// that runs the job, and a size in multiples of MEMTOTAL_BYTES becomes `<f>x_ram` where the
// workload takes one (usemem). Anything else (commands, conditionals, variables no benchmark
// uses, host facts tlbfleet cannot know such as NUM_NODES, settings the workload has no
// equivalent for) is reported as a warning and left out: nothing is dropped silently.

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tlbfleet::cli {

struct MmtestsImport {
  std::string yaml;                   // run specs separated by "---"; each passes ParseRunSpec
  std::vector<std::string> warnings;  // "<source>:<line>: <VAR>: <why it was not used>"
};

// INVALID_ARGUMENT "<source>: ..." when the file sets no MMTESTS or none of its benchmarks
// can be imported. Benchmarks tlbfleet does not have are warnings.
absl::StatusOr<MmtestsImport> ImportMmtestsConfig(std::string_view text, std::string_view source);

// The command: reads `file` ("-" = stdin), prints the YAML to `out` and each warning as
// "tlbfleet: <warning>" to `err`. Returns 0, or 2 (exit_codes.h) for an unreadable file or
// a config with nothing to import.
int ImportMmtestsCommand(const std::string& file, std::ostream& out, std::ostream& err);

}  // namespace tlbfleet::cli
