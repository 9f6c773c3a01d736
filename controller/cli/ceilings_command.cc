#include "controller/cli/ceilings_command.h"

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "controller/cli/exit_codes.h"
#include "controller/cli/format.h"
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
  // The controller's report carries the recommendations; the CLI renders them.
  tlbfleet::v1::CompareRequest request;
  request.set_run_id(run_id_);
  request.set_ceiling_metric(metric_);
  tlbfleet::v1::CompareResponse response;
  grpc::Status status = client.Compare(request, &response);
  if (!status.ok()) {
    err << "tlbfleet: " << RpcErrorMessage(status, client.address(), run_id_) << "\n";
    return ExitCodeForStatus(status.error_code());
  }
  const tlbfleet::v1::Report& report = response.report();
  if (!report.ceiling_recommendations_unavailable().empty()) {
    err << "tlbfleet: run " << run_id_ << ": " << report.ceiling_recommendations_unavailable()
        << "\n";
    return kExitFailed;
  }
  if (report.ceiling_recommendations().empty()) {
    err << "tlbfleet: run " << run_id_ << " has no samples"
        << (metric_.empty() ? "" : " of " + metric_) << " yet\n";
    return kExitFailed;
  }
  if (format_ == "json") {
    std::vector<std::string> objects;
    for (const auto& rec : report.ceiling_recommendations()) objects.push_back(ToJson(rec));
    out << "[" << absl::StrJoin(objects, ",") << "]\n";
    return kExitOk;
  }
  std::vector<report::CeilingRecommendation> recs;
  for (const auto& rec : report.ceiling_recommendations()) {
    recs.push_back(report::CeilingRecommendationFromProto(rec));
  }
  out << report::RenderCeilingReport(recs);
  return kExitOk;
}

}  // namespace tlbfleet::cli
