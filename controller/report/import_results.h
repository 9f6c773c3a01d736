#pragma once
// What every results import (docs/formats.md#import) shares: the files of a result directory
// as the importers read them, and what an import makes of them. The importers
// (import_mmtests_results.h, import_lkp_results.h) are pure: files in, a finished run out; only
// ReadImportDirectory touches the disk, so tests feed them bytes.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tlbfleet/v1/common.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::report {

// A result directory: path relative to its root ("base/iter-0/ebizzy/logs/ebizzy-4-1.log")
// -> bytes. Ordered, so that its digest does not depend on the order the disk lists it in.
using ImportFiles = std::map<std::string, std::string>;

// A finished run made of another tool's results, ready for Store::ImportRun.
struct ImportedRun {
  // name (the format and the arms), benchmark, the arms by name, the swept parameter when the
  // logs are keyed by one. Parameters the other tool did not record are left out, not guessed.
  v1::RunSpec spec;
  // Every measurement, job_id numbering the import's jobs from 1 (one per arm, boot, factor
  // and iteration); the store replaces it with the stored job's id. Provenance the files do
  // not say (agent id, boot id, ...) is empty: unknown.
  std::vector<v1::Sample> samples;
  int64_t started_unix = 0;   // 0: the files do not say
  int64_t finished_unix = 0;  // 0: the files do not say
  bool failed = false;        // the other tool recorded a failed test
  std::vector<std::string> warnings;
  // What the user declared rather than the files recorded (ApplyImportJoin), one sentence;
  // "" when nothing was. Kept with the run's spec text.
  std::string declared;
};

// Every regular file under `dir`, by path relative to it. INVALID_ARGUMENT naming `DIR` when
// it is not a directory or cannot be read; files above 64 MiB in total are refused (a result
// directory is logs, not data sets).
absl::StatusOr<ImportFiles> ReadImportDirectory(const std::string& dir);

// A canonical serialisation of the files (paths and bytes, length-prefixed, in path order):
// what the content digest of an import is taken over, so that the same directory imported
// twice is recognised wherever it was copied to.
std::string ImportDigestInput(const ImportFiles& files);

// The importer of `format` ("mmtests" or "lkp"). INVALID_ARGUMENT naming `format` for
// another; the importers' own errors otherwise (INVALID_ARGUMENT naming the file and line).
// A join request among the files (kImportJoinPath) is applied to what the importer made
// (ApplyImportJoin) and is not itself read as a result file.
absl::StatusOr<ImportedRun> ImportResults(const std::string& format, const ImportFiles& files);

// --- joining a series (docs/formats.md#joining-a-series) ---------------------------------
// An import joins the history of a series (`import-results --series ID`): its points go to
// the series of that series' host class and configuration, as a run of ours measured there
// would. The other tool did not record these (mmtests knows no microarchitecture, no
// tlbfleet parameters), so they are the user's declaration, kept with the run as one.
//
// The request carries it as one extra file at kImportJoinPath ("key :: value" lines: series,
// benchmark, microarch, boot_entry, config), written by the CLI, never part of the content
// digest: the same results are the same run whatever they were asked to join (the join
// applies when they are first imported).
inline constexpr char kImportJoinPath[] = ".tlbfleet-join";

struct ImportJoin {
  std::string series_id;   // for the record: the series named
  std::string benchmark;   // must be the imported benchmark
  std::string microarch;   // the series' host class ...
  std::string boot_entry;  // ... ("" = the host's default boot)
  std::string config;      // "ceiling=33 seconds=1": the series' configuration
};

std::string FormatImportJoin(const ImportJoin& join);
// INVALID_ARGUMENT naming kImportJoinPath and the line that does not parse.
absl::StatusOr<ImportJoin> ParseImportJoin(const std::string& text);

// Gives the run's only arm the join's configuration (parameters and ceiling) and boot entry,
// and its samples the join's microarchitecture where the files recorded none.
// INVALID_ARGUMENT naming `series` for a join that cannot hold: another benchmark, more than
// one arm (two arms of one run would be two points of one run in one series: import them one
// at a time), a microarchitecture or boot entry the files record otherwise, a configuration
// that sets the swept parameter, or one of a kernel built from source.
absl::Status ApplyImportJoin(const ImportJoin& join, ImportedRun* run);

// The unit and direction of `metric` of `benchmark` from the workload catalogue (unit "" and
// BETTER_UNSPECIFIED for a metric the catalogue does not know).
void SetMetricFacts(const std::string& benchmark, v1::Sample* sample);

}  // namespace tlbfleet::report
