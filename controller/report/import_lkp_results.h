#pragma once
// LKP result roots (docs/formats.md#import) as a finished tlbfleet run: what lkp-tests leaves
// under /result, and what `tlbfleet export --format lkp` writes.
//
//   DIR/.../ROOT/N/stats.json     {"ebizzy.throughput": 1105.96, ...}: run N of the job
//   DIR/.../ROOT/N/job.yaml       testbox, kernel, commit, tlbfleet's ids (optional)
//   DIR/.../ROOT/matrix.json      {"ebizzy.throughput": [run 0, run 1, ...]}: used when the
//                                 root has no run directories
//
// A result root is a directory with numbered run directories holding stats.json, or with a
// matrix.json. Its arm is the root's path under DIR; tlbfleet's own "ARM/PARAM" (PARAM
// "default" or "NAME=VALUE") is read as the arm and the sweep value. Stats keys map back to
// tlbfleet metrics through LkpStatKey (export_lkp.h); keys no tlbfleet metric has (LKP's
// derived figures, its monitors) are left out, with a warning that counts them.

#include "absl/status/statusor.h"
#include "controller/report/import_results.h"

namespace tlbfleet::report {

// INVALID_ARGUMENT, naming what is wrong: `DIR` when no result root is there, a JSON or YAML
// file that does not parse (FILE:LINE), a value that is not a number, a run directory missing
// from 0..N ("ROOT/1: missing"), roots of different benchmarks, a program tlbfleet has no
// workload for.
absl::StatusOr<ImportedRun> ImportLkpResults(const ImportFiles& files);

}  // namespace tlbfleet::report
