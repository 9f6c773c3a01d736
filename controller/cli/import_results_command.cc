#include "controller/cli/import_results_command.h"

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "controller/cli/exit_codes.h"
#include "controller/report/import_results.h"
#include "fmt/format.h"

namespace tlbfleet::cli {
namespace {

namespace v1 = tlbfleet::v1;

int ImportError(std::ostream& err, int code, const std::string& message) {
  err << "tlbfleet: " << message << "\n";
  return code;
}

}  // namespace

ImportResultsCommand::ImportResultsCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "import-results", "store an mmtests results directory or LKP result root as a finished run");
  command_->add_option("--format", format_, "mmtests|lkp")
      ->required()
      ->check(CLI::IsMember({"mmtests", "lkp"}));
  command_->add_option("DIR", dir_, "the results directory (mmtests: holds ARM/iter-N/)")
      ->required();
}

bool ImportResultsCommand::parsed() const { return command_->parsed(); }

int ImportResultsCommand::Run(const FleetClientOptions& options, std::ostream& out,
                              std::ostream& err) const {
  absl::StatusOr<report::ImportFiles> files = report::ReadImportDirectory(dir_);
  if (!files.ok()) return ImportError(err, kExitUsage, std::string(files.status().message()));
  // Parsed here first: a directory that does not parse is the user's to fix, controller or not.
  absl::StatusOr<report::ImportedRun> parsed = report::ImportResults(format_, *files);
  if (!parsed.ok()) {
    return ImportError(err, kExitUsage,
                       fmt::format("{}: {}", dir_, std::string(parsed.status().message())));
  }
  v1::ImportResultsRequest request;
  request.set_format(format_);
  request.set_source(dir_);
  for (const auto& [path, content] : *files) {
    v1::ImportResultsRequest::File* f = request.add_files();
    f->set_path(path);
    f->set_content(content);
  }
  absl::StatusOr<std::unique_ptr<FleetClient>> client = FleetClient::Create(options);
  if (!client.ok()) return ImportError(err, kExitUsage, std::string(client.status().message()));
  v1::ImportResultsResponse response;
  grpc::Status status = (*client)->ImportResults(request, &response);
  if (!status.ok()) {
    const int code = status.error_code() == grpc::StatusCode::INVALID_ARGUMENT
                         ? kExitUsage
                         : ExitCodeForStatus(status.error_code());
    return ImportError(err, code, RpcErrorMessage(status, (*client)->address(), ""));
  }
  for (const std::string& w : response.warnings()) err << "tlbfleet: warning: " << w << "\n";
  if (response.already_imported()) {
    out << fmt::format("{}: already imported as run {}; nothing stored\n", dir_, response.run_id());
    return kExitOk;
  }
  out << fmt::format("run {}: imported {} samples of {} ({}) from {} ({})\n", response.run_id(),
                     response.samples(), response.benchmark(), absl::StrJoin(response.arms(), ", "),
                     dir_, format_);
  out << fmt::format("tlbfleet compare {}\n", response.run_id());
  return kExitOk;
}

}  // namespace tlbfleet::cli
