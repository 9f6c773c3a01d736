#pragma once
// A run's export (docs/formats.md) as one download, for the HTTP API's
// GET /api/v1/runs/{run_id}/export/{format}, the dashboard's download links: bmf as its JSON
// file, mmtests and lkp as an uncompressed POSIX tar (ustar) of their files under one
// directory, "run-ID-FORMAT/", which `tar -xf` unpacks into what `tlbfleet export` writes.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/report/export_files.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

struct ExportDownload {
  std::string content_type;  // "application/json", "application/x-tar"
  std::string filename;      // "run-7-mmtests.tar", "run-7-bmf.json"
  std::string body;
};

// The files as a ustar archive, every path under `top` ("run-7-mmtests"), modification time
// `mtime_unix`, mode 0644. INVALID_ARGUMENT for a path ustar cannot hold (over 255 bytes, or no
// '/' to split it at 100).
absl::StatusOr<std::string> TarArchive(const std::vector<ExportFile>& files, const std::string& top,
                                       int64_t mtime_unix);

// The export of a finished run in `format`. `report` is the run's comparison (bmf only; may be
// null for the others). FAILED_PRECONDITION naming RUN for a run not finished;
// INVALID_ARGUMENT naming `format` for an unknown format or otava (series, not a run: the
// command line's `export --series`); otherwise as the writers.
absl::StatusOr<ExportDownload> RunExportDownload(const std::string& format, const ExportRun& run,
                                                 const tlbfleet::v1::Report* report);

}  // namespace tlbfleet::report
