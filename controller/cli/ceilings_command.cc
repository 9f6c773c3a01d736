#include "controller/cli/ceilings_command.h"

#include "CLI/CLI.hpp"
#include "controller/cli/exit_codes.h"
#include "controller/report/ceiling_sweep.h"

namespace tlbfleet::cli {

CeilingsCommand::CeilingsCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "ceilings",
      "a ceiling sweep's report: the metric against the ceiling, and the smallest "
      "ceiling not worse than the best per microarchitecture");
  command_->add_option("RUN", run_id_, "run id")->required();
  command_->add_option("--metric", metric_, "only this metric (default: every metric)");
  command_->add_option("--format", format_, "output format: text|json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

bool CeilingsCommand::parsed() const { return command_->parsed(); }

int CeilingsCommand::Run(FleetClient& client, std::ostream& out, std::ostream& err) const {
  tlbfleet::v1::GetResultsResponse results;
  grpc::Status status = client.GetResults(run_id_, &results);
  if (!status.ok()) {
    err << "tlbfleet: " << RpcErrorMessage(status, client.address(), run_id_) << "\n";
    return ExitCodeForStatus(status.error_code());
  }
  const std::vector<tlbfleet::v1::Sample> samples(results.samples().begin(),
                                                  results.samples().end());
  absl::StatusOr<std::vector<report::CeilingRecommendation>> recs =
      report::RecommendCeilings(samples, metric_);
  if (!recs.ok()) {
    err << "tlbfleet: run " << run_id_ << ": " << recs.status().message() << "\n";
    return kExitFailed;
  }
  if (recs->empty()) {
    err << "tlbfleet: run " << run_id_ << " has no samples"
        << (metric_.empty() ? "" : " of " + metric_) << " yet\n";
    return kExitFailed;
  }
  out << (format_ == "json" ? report::RenderCeilingReportJson(*recs)
                            : report::RenderCeilingReport(*recs));
  return kExitOk;
}

}  // namespace tlbfleet::cli
