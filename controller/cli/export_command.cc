#include "controller/cli/export_command.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "controller/cli/exit_codes.h"
#include "controller/cli/nightly_client.h"
#include "controller/report/export_bmf.h"
#include "controller/report/export_files.h"
#include "controller/report/export_lkp.h"
#include "controller/report/export_mmtests.h"
#include "controller/report/export_otava.h"
#include "fmt/format.h"

namespace tlbfleet::cli {
namespace {

namespace v1 = tlbfleet::v1;

int ExportError(std::ostream& err, int code, const std::string& message) {
  err << "tlbfleet: " << message << "\n";
  return code;
}

// A failed RPC: NOT_FOUND of the run is the user's to fix (exit 2, naming RUN); the rest as
// for every command.
int ExportRpcFailure(std::ostream& err, const grpc::Status& status, const std::string& address,
                     const std::string& run_id) {
  if (status.error_code() == grpc::StatusCode::NOT_FOUND && !run_id.empty()) {
    return ExportError(err, kExitUsage, fmt::format("RUN: run {} not found", run_id));
  }
  return ExportError(err, ExitCodeForStatus(status.error_code()),
                     RpcErrorMessage(status, address, run_id));
}

// --out must be new or empty: files of an earlier export (another boot's iter-N) would mix
// with this one's and the other tools would read both.
bool CheckOutDir(const std::string& dir, std::ostream& err) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return true;
  if (!std::filesystem::is_directory(dir, ec)) {
    ExportError(err, kExitUsage, fmt::format("--out: {} exists and is not a directory", dir));
    return false;
  }
  if (!std::filesystem::is_empty(dir, ec)) {
    ExportError(err, kExitUsage,
                fmt::format("--out: {} is not empty; export into a new or empty directory", dir));
    return false;
  }
  return true;
}

int WriteFiles(const std::string& dir, const std::vector<report::ExportFile>& files,
               std::ostream& err) {
  absl::Status written = report::WriteExportFiles(dir, files);
  if (!written.ok()) {
    return ExportError(
        err, kExitUsage,
        fmt::format("--out: cannot write {}: {}", dir, std::string(written.message())));
  }
  return kExitOk;
}

}  // namespace

ExportCommand::ExportCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "export",
      "write a finished run (mmtests, lkp, bmf) or history series (otava) as those tools read "
      "them");
  command_->add_option("RUN", run_id_, "run id (formats mmtests, lkp, bmf)");
  command_->add_option("--series", series_,
                       "series id from `tlbfleet series` (format otava; repeatable)");
  command_->add_option("--format", format_, "mmtests|lkp|bmf|otava")
      ->required()
      ->check(CLI::IsMember({"mmtests", "lkp", "bmf", "otava"}));
  command_->add_option("--out", out_dir_, "directory to write (new or empty)")->required();
}

bool ExportCommand::parsed() const { return command_->parsed(); }

int ExportCommand::Run(const FleetClientOptions& options, std::ostream& out,
                       std::ostream& err) const {
  if (format_ == "otava") {
    if (!run_id_.empty()) {
      return ExportError(err, kExitUsage,
                         "RUN: format otava exports history series: give --series ID, not a run");
    }
    if (series_.empty()) {
      return ExportError(err, kExitUsage,
                         "--series: format otava needs at least one series id "
                         "(tlbfleet series lists them)");
    }
    if (!CheckOutDir(out_dir_, err)) return kExitUsage;
    return ExportSeries(options, out, err);
  }
  if (!series_.empty()) {
    return ExportError(err, kExitUsage,
                       fmt::format("--series: only format otava exports series; format {} "
                                   "exports a run (RUN)",
                                   format_));
  }
  if (run_id_.empty()) {
    return ExportError(err, kExitUsage, fmt::format("RUN: format {} needs a run id", format_));
  }
  if (!CheckOutDir(out_dir_, err)) return kExitUsage;
  return ExportRunFormat(options, out, err);
}

int ExportCommand::ExportRunFormat(const FleetClientOptions& options, std::ostream& out,
                                   std::ostream& err) const {
  absl::StatusOr<std::unique_ptr<FleetClient>> client = FleetClient::Create(options);
  if (!client.ok()) return ExportError(err, kExitUsage, std::string(client.status().message()));
  FleetClient& fleet = **client;
  report::ExportRun run;
  grpc::Status status = fleet.GetRun(run_id_, &run.run);
  if (!status.ok()) return ExportRpcFailure(err, status, fleet.address(), run_id_);
  if (absl::Status finished = report::CheckRunFinished(run.run); !finished.ok()) {
    return ExportError(err, kExitUsage, std::string(finished.message()));
  }

  std::vector<report::ExportFile> files;
  std::vector<std::string> warnings;
  std::string summary;
  if (format_ == "bmf") {
    // The controller's comparison, as `tlbfleet compare RUN` shows it.
    v1::CompareRequest request;
    request.set_run_id(run_id_);
    v1::CompareResponse response;
    status = fleet.Compare(request, &response);
    if (!status.ok()) return ExportRpcFailure(err, status, fleet.address(), run_id_);
    files.push_back({"bmf.json", report::ExportBmf(response.report(), run.run.spec().benchmark())});
    summary = fmt::format("bencher run --adapter json --file {}/bmf.json ...", out_dir_);
  } else {
    v1::GetResultsResponse results;
    status = fleet.GetResults(run_id_, &results);
    if (!status.ok()) return ExportRpcFailure(err, status, fleet.address(), run_id_);
    run.samples.assign(results.samples().begin(), results.samples().end());
    if (format_ == "mmtests") {
      absl::StatusOr<report::MmtestsExport> mm = report::ExportMmtests(run);
      if (!mm.ok()) return ExportError(err, kExitUsage, std::string(mm.status().message()));
      files = std::move(mm->files);
      warnings = std::move(mm->warnings);
      std::vector<std::string> benchmarks = mm->benchmarks;
      std::sort(benchmarks.begin(), benchmarks.end());
      benchmarks.erase(std::unique(benchmarks.begin(), benchmarks.end()), benchmarks.end());
      std::vector<std::string> hints;
      for (const std::string& b : benchmarks) {
        std::vector<std::string> names;
        for (size_t i = 0; i < mm->names.size(); ++i) {
          if (mm->benchmarks[i] == b) names.push_back(mm->names[i]);
        }
        hints.push_back(
            fmt::format("bin/compare-mmtests.pl --directory {} --benchmark {} --names {}", out_dir_,
                        b, absl::StrJoin(names, ",")));
      }
      summary = absl::StrJoin(hints, "\n");
    } else {
      absl::StatusOr<report::LkpExport> lkp = report::ExportLkp(run);
      if (!lkp.ok()) return ExportError(err, kExitUsage, std::string(lkp.status().message()));
      files = std::move(lkp->files);
      warnings = std::move(lkp->warnings);
    }
  }
  for (const std::string& w : warnings) err << "tlbfleet: warning: " << w << "\n";
  if (int code = WriteFiles(out_dir_, files, err); code != kExitOk) return code;
  out << fmt::format("run {}: wrote {} files under {} ({})\n", run_id_, files.size(), out_dir_,
                     format_);
  if (!summary.empty()) out << summary << "\n";
  return kExitOk;
}

int ExportCommand::ExportSeries(const FleetClientOptions& options, std::ostream& out,
                                std::ostream& err) const {
  absl::StatusOr<std::unique_ptr<NightlyClient>> client = NightlyClient::Create(options);
  if (!client.ok()) return ExportError(err, kExitUsage, std::string(client.status().message()));
  v1::ListSeriesRequest request;
  request.set_with_points(true);
  v1::ListSeriesResponse list;
  grpc::Status status = (*client)->Call(&v1::NightlyService::Stub::ListSeries, request, &list);
  if (!status.ok()) return ExportRpcFailure(err, status, (*client)->address(), "");
  std::vector<v1::Series> chosen;
  for (const std::string& id : series_) {
    auto it = std::find_if(list.series().begin(), list.series().end(),
                           [&](const v1::Series& s) { return s.id() == id; });
    if (it == list.series().end()) {
      return ExportError(err, kExitUsage,
                         fmt::format("--series: no series {} (tlbfleet series lists them)", id));
    }
    chosen.push_back(*it);
  }
  absl::StatusOr<std::vector<report::ExportFile>> files = report::ExportOtava(chosen);
  if (!files.ok()) return ExportError(err, kExitUsage, std::string(files.status().message()));
  if (int code = WriteFiles(out_dir_, *files, err); code != kExitOk) return code;
  out << fmt::format("series {}: wrote {} files under {} (otava)\n", absl::StrJoin(series_, ","),
                     files->size(), out_dir_);
  out << fmt::format("cd {} && otava analyze tlbfleet --config-file otava.yaml\n", out_dir_);
  return kExitOk;
}

}  // namespace tlbfleet::cli
