#include "controller/cli/import_results_command.h"

#include <map>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/cli/exit_codes.h"
#include "controller/cli/nightly_client.h"
#include "fmt/format.h"

namespace tlbfleet::cli {
namespace {

namespace v1 = tlbfleet::v1;

int ImportError(std::ostream& err, int code, const std::string& message) {
  err << "tlbfleet: " << message << "\n";
  return code;
}

std::string Mebibytes(size_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
}

// mmtests' arms: the top-level directories of DIR.
std::map<std::string, size_t> ArmBytes(const report::ImportFiles& files) {
  std::map<std::string, size_t> arms;
  for (const auto& [path, content] : files) {
    const size_t slash = path.find('/');
    if (slash == std::string::npos) continue;
    arms[path.substr(0, slash)] += path.size() + content.size();
  }
  return arms;
}

// The series `id` as the controller's history has it.
absl::StatusOr<v1::Series> FindSeries(const FleetClientOptions& options, const std::string& id,
                                      int* exit_code) {
  *exit_code = kExitUsage;
  absl::StatusOr<std::unique_ptr<NightlyClient>> client = NightlyClient::Create(options);
  if (!client.ok()) return client.status();
  v1::ListSeriesResponse list;
  grpc::Status s =
      (*client)->Call(&v1::NightlyService::Stub::ListSeries, v1::ListSeriesRequest(), &list);
  if (!s.ok()) {
    *exit_code = ExitCodeForStatus(s.error_code());
    return absl::UnavailableError(RpcErrorMessage(s, (*client)->address(), ""));
  }
  for (const v1::Series& series : list.series()) {
    if (series.id() == id) return series;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--series: the controller has no series ", id, " (tlbfleet series lists them)"));
}

}  // namespace

absl::Status CheckImportRequestSize(const std::string& dir, const report::ImportFiles& files,
                                    size_t request_bytes) {
  if (request_bytes <= kImportRequestLimitBytes) return absl::OkStatus();
  std::string message =
      absl::StrCat("DIR: ", dir, ": the import is ", request_bytes, " bytes (",
                   Mebibytes(request_bytes), ") as one request; the controller receives at most ",
                   kImportRequestLimitBytes, " bytes (", Mebibytes(kImportRequestLimitBytes),
                   ", gRPC's message limit) per ImportResults; nothing "
                   "was sent or stored");
  const std::map<std::string, size_t> arms = ArmBytes(files);
  if (arms.size() > 1) {
    std::vector<std::string> shares;
    for (const auto& [arm, bytes] : arms)
      shares.push_back(absl::StrCat(arm, ": ", Mebibytes(bytes)));
    absl::StrAppend(&message, "; import one arm at a time with --arm (",
                    absl::StrJoin(shares, ", "), ")");
  }
  return absl::InvalidArgumentError(message);
}

ImportResultsCommand::ImportResultsCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "import-results", "store an mmtests results directory or LKP result root as a finished run");
  command_->add_option("--format", format_, "mmtests|lkp")
      ->required()
      ->check(CLI::IsMember({"mmtests", "lkp"}));
  command_->add_option("--arm", arm_,
                       "mmtests: import only this arm (DIR/ARM), as a run of its own");
  command_->add_option("--series", series_,
                       "join series ID (tlbfleet series): the run's points go to the series of "
                       "its host class and configuration, declared as such");
  command_->add_option("DIR", dir_, "the results directory (mmtests: holds ARM/iter-N/)")
      ->required();
}

bool ImportResultsCommand::parsed() const { return command_->parsed(); }

int ImportResultsCommand::Run(const FleetClientOptions& options, std::ostream& out,
                              std::ostream& err) const {
  absl::StatusOr<report::ImportFiles> files = report::ReadImportDirectory(dir_);
  if (!files.ok()) return ImportError(err, kExitUsage, std::string(files.status().message()));
  if (!arm_.empty()) {
    if (format_ != "mmtests")
      return ImportError(err, kExitUsage, "--arm: only with --format mmtests");
    const std::map<std::string, size_t> arms = ArmBytes(*files);
    if (!arms.contains(arm_)) {
      std::vector<std::string> names;
      for (const auto& [name, bytes] : arms) names.push_back(name);
      return ImportError(err, kExitUsage,
                         fmt::format("--arm: {} has no arm \"{}\" (it has {})", dir_, arm_,
                                     names.empty() ? "none" : absl::StrJoin(names, ", ")));
    }
    for (auto it = files->begin(); it != files->end();) {
      it = absl::StartsWith(it->first, arm_ + "/") ? std::next(it) : files->erase(it);
    }
  }
  if (!series_.empty()) {
    if (files->contains(report::kImportJoinPath)) {
      return ImportError(
          err, kExitUsage,
          fmt::format("--series: {}/{} already asks for a join", dir_, report::kImportJoinPath));
    }
    int code = kExitUsage;
    absl::StatusOr<v1::Series> series = FindSeries(options, series_, &code);
    if (!series.ok()) return ImportError(err, code, std::string(series.status().message()));
    report::ImportJoin join;
    join.series_id = series->id();
    join.benchmark = series->key().benchmark();
    join.microarch = series->key().microarch();
    join.boot_entry = series->key().boot_entry();
    join.config = series->key().config();
    (*files)[report::kImportJoinPath] = report::FormatImportJoin(join);
  }
  // Parsed here first: a directory that does not parse is the user's to fix, controller or not.
  absl::StatusOr<report::ImportedRun> parsed = report::ImportResults(format_, *files);
  if (!parsed.ok()) {
    return ImportError(err, kExitUsage,
                       fmt::format("{}: {}", dir_, std::string(parsed.status().message())));
  }
  v1::ImportResultsRequest request;
  request.set_format(format_);
  request.set_source(arm_.empty() ? dir_ : absl::StrCat(dir_, " --arm ", arm_));
  for (const auto& [path, content] : *files) {
    v1::ImportResultsRequest::File* f = request.add_files();
    f->set_path(path);
    f->set_content(content);
  }
  if (absl::Status size = CheckImportRequestSize(dir_, *files, request.ByteSizeLong());
      !size.ok()) {
    return ImportError(err, kExitUsage, std::string(size.message()));
  }
  absl::StatusOr<std::unique_ptr<FleetClient>> client = FleetClient::Create(options);
  if (!client.ok()) return ImportError(err, kExitUsage, std::string(client.status().message()));
  v1::ImportResultsResponse response;
  grpc::Status status = (*client)->ImportResults(request, &response);
  if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
    // A controller whose limit is below ours refused the message before reading it.
    return ImportError(
        err, kExitUsage,
        fmt::format("DIR: {}: the import is {} bytes as one request, more than the "
                    "controller at {} receives ({}); nothing stored",
                    dir_, request.ByteSizeLong(), (*client)->address(), status.error_message()));
  }
  if (!status.ok()) {
    const int code = status.error_code() == grpc::StatusCode::INVALID_ARGUMENT
                         ? kExitUsage
                         : ExitCodeForStatus(status.error_code());
    return ImportError(err, code, RpcErrorMessage(status, (*client)->address(), ""));
  }
  for (const std::string& w : response.warnings()) err << "tlbfleet: warning: " << w << "\n";
  if (response.already_imported()) {
    out << fmt::format("{}: already imported as run {}; nothing stored\n", dir_, response.run_id());
    if (!series_.empty()) {
      // The join is part of the first import: the run's points are where they went then.
      out << fmt::format("--series {}: not applied; run {} keeps the series it joined then\n",
                         series_, response.run_id());
    }
    return kExitOk;
  }
  out << fmt::format("run {}: imported {} samples of {} ({}) from {} ({})\n", response.run_id(),
                     response.samples(), response.benchmark(), absl::StrJoin(response.arms(), ", "),
                     dir_, format_);
  if (!parsed->declared.empty()) out << parsed->declared << "\n";
  out << fmt::format("tlbfleet compare {}\n", response.run_id());
  return kExitOk;
}

}  // namespace tlbfleet::cli
