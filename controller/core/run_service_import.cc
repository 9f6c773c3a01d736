// RunServiceImpl::ImportResults: another tool's result directory parsed by the report unit's
// importers (pure) and stored by Store::ImportRun in one transaction. Kept apart from
// run_service_impl.cc: it is the only path that stores a run no agent measured.

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/artifacts/sha256.h"
#include "common/status_macros.h"
#include "controller/core/run_service_impl.h"
#include "controller/report/import_results.h"

namespace tlbfleet::core {

absl::StatusOr<v1::ImportResultsResponse> RunServiceImpl::ImportResults(
    const v1::ImportResultsRequest& request) {
  report::ImportFiles files;
  for (const v1::ImportResultsRequest::File& f : request.files()) {
    if (f.path().empty() || f.path().front() == '/' ||
        absl::StrContains(absl::StrCat("/", f.path(), "/"), "/../")) {
      return absl::InvalidArgumentError(
          absl::StrCat("files.path: \"", f.path(), "\" is not a path inside the directory"));
    }
    files[f.path()] = f.content();
  }
  TLB_ASSIGN_OR_RETURN(report::ImportedRun imported,
                       report::ImportResults(request.format(), files));
  store::ImportedRunRecord record;
  record.spec = std::move(imported.spec);
  record.spec_yaml = absl::StrCat("# imported: tlbfleet import-results --format ", request.format(),
                                  " ", request.source(), "\n");
  if (!imported.declared.empty()) absl::StrAppend(&record.spec_yaml, "# ", imported.declared, "\n");
  record.samples = std::move(imported.samples);
  record.created_ms = imported.started_unix * 1000;
  record.finished_ms = imported.finished_unix * 1000;
  record.failed = imported.failed;
  // The format is part of the digest: the same bytes read as another format are another run.
  record.digest =
      artifacts::Sha256Hex(absl::StrCat(request.format(), "\n", report::ImportDigestInput(files)));
  record.format = request.format();
  record.source = request.source();
  TLB_ASSIGN_OR_RETURN(store::ImportedRunResult stored, store_.ImportRun(record, Now()));
  v1::ImportResultsResponse response;
  response.set_run_id(stored.run_id);
  response.set_already_imported(stored.already_imported);
  response.set_samples(stored.samples);
  for (std::string& w : imported.warnings) response.add_warnings(std::move(w));
  response.set_benchmark(record.spec.benchmark());
  for (const v1::ArmSpec& arm : record.spec.arms()) response.add_arms(arm.name());
  return response;
}

}  // namespace tlbfleet::core
