#pragma once
// What every export format (docs/formats.md) shares: the files an export is made of, written
// under one directory, and the facts of a run each format reads from it. The writers
// (export_mmtests.h, export_lkp.h, export_bmf.h, export_otava.h) are pure: they return the
// files, and only WriteExportFiles touches the disk, so tests compare bytes.

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tlbfleet/v1/common.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::report {

// One file of an export: `path` relative to the output directory ("base/iter-0/ebizzy/logs/
// ebizzy-4-1.log"), and its bytes.
struct ExportFile {
  std::string path;
  std::string content;
};

// A run and its samples, as GetRun and GetResults answer them.
struct ExportRun {
  tlbfleet::v1::Run run;
  std::vector<tlbfleet::v1::Sample> samples;
};

// Writes every file under `dir`, making directories as needed (the files are written
// atomically one by one; an export that fails half-way leaves the files written so far).
// INVALID_ARGUMENT for a path that is absolute or climbs out of `dir` ("..").
absl::Status WriteExportFiles(const std::string& dir, const std::vector<ExportFile>& files);

// OK for a finished run (succeeded, failed or cancelled); FAILED_PRECONDITION naming the run
// and its state otherwise: a running run's export would miss what it has yet to measure.
absl::Status CheckRunFinished(const tlbfleet::v1::Run& run);

// The parameters an arm runs with: the workload's defaults (the catalogue's), the spec's, then
// the arm's own.
std::map<std::string, std::string> ArmParams(const tlbfleet::v1::RunSpec& spec,
                                             const std::string& arm);

// The arms of the run in spec order, then any arm the samples name that the spec does not
// (an imported run), in the order of first appearance.
std::vector<std::string> ExportArmOrder(const ExportRun& run);

// The samples every comparison counts: those of `arm` that are not excluded (a restarted
// slot's, a cut boot's), in (job, iteration, series) order.
std::vector<const tlbfleet::v1::Sample*> CountedSamples(const ExportRun& run,
                                                        const std::string& arm);

// A boot: one host's boot id. Exports that keep boots apart (mmtests' iter-N directories)
// number them in the order of their first job.
std::string BootKey(const tlbfleet::v1::Sample& sample);

}  // namespace tlbfleet::report
