#include "controller/cli/nightly_commands.h"

#include <iostream>
#include <iterator>

#include "CLI/CLI.hpp"
#include "common/files.h"
#include "controller/bisect/bisection.h"
#include "controller/cli/exit_codes.h"
#include "controller/cli/format.h"
#include "controller/cli/nightly_client.h"
#include "controller/cli/nightly_format.h"
#include "fmt/format.h"

namespace tlbfleet::cli {
namespace {

namespace v1 = tlbfleet::v1;
using Stub = v1::NightlyService::Stub;

void AddFormat(CLI::App* command, std::string* value) {
  command->add_option("--format", *value, "output format: text|json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

int Failure(const grpc::Status& status, const std::string& address, std::ostream& err) {
  err << "tlbfleet: " << RpcErrorMessage(status, address, "") << "\n";
  return ExitCodeForStatus(status.error_code());
}

// Reads FILE ("-" = standard input) for `what`; exit 2 naming it on failure.
bool ReadInput(const std::string& file, const std::string& what, std::string* text,
               std::ostream& err) {
  if (file == "-") {  // std::cin also works when standard input is a socket
    text->assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return true;
  }
  absl::StatusOr<std::string> read = ReadFile(file);
  if (!read.ok()) {
    err << "tlbfleet: cannot read " << what << ": " << read.status().message() << "\n";
    return false;
  }
  *text = *std::move(read);
  return true;
}

}  // namespace

NightlyCommands::NightlyCommands(CLI::App& app) {
  schedule_ = app.add_subcommand("schedule",
                                 "nightly schedules: add FILE | list | pause ID | "
                                 "resume ID | rm ID");
  schedule_->require_subcommand(1);
  schedule_add_ = schedule_->add_subcommand("add", "add a schedule (YAML); prints its id last");
  schedule_add_->add_option("FILE", file_, "schedule file, or - for stdin")->required();
  schedule_list_ = schedule_->add_subcommand("list", "list the schedules");
  AddFormat(schedule_list_, &format_);
  schedule_pause_ = schedule_->add_subcommand("pause", "stop starting runs");
  schedule_pause_->add_option("ID", id_, "schedule id")->required();
  schedule_resume_ = schedule_->add_subcommand(
      "resume", "start runs again (nights missed while paused are not run)");
  schedule_resume_->add_option("ID", id_, "schedule id")->required();
  schedule_rm_ = schedule_->add_subcommand("rm", "remove a schedule (its history stays)");
  schedule_rm_->add_option("ID", id_, "schedule id")->required();

  regressions_ = app.add_subcommand(
      "regressions", "regressions found in the history; ack|fixed|reopen ID changes one's status");
  regressions_->require_subcommand(0, 1);
  regressions_->add_option("--status", status_, "which: open|acknowledged|fixed|all")
      ->check(CLI::IsMember({"open", "acknowledged", "fixed", "all"}))
      ->capture_default_str();
  regressions_->add_option("--limit", limit_, "at most this many (0: 100)");
  AddFormat(regressions_, &format_);
  regressions_ack_ = regressions_->add_subcommand("ack", "mark a regression acknowledged");
  regressions_ack_->add_option("ID", id_, "regression id")->required();
  regressions_fixed_ = regressions_->add_subcommand("fixed", "mark a regression fixed");
  regressions_fixed_->add_option("ID", id_, "regression id")->required();
  regressions_reopen_ = regressions_->add_subcommand("reopen", "mark a regression open again");
  regressions_reopen_->add_option("ID", id_, "regression id")->required();

  series_ = app.add_subcommand("series",
                               "the history: one series per host class, benchmark, "
                               "configuration, sweep value and metric");
  series_->add_option("--benchmark", benchmark_, "only this benchmark");
  series_->add_option("--metric", metric_, "only this metric");
  AddFormat(series_, &format_);

  bisect_ = app.add_subcommand("bisect",
                               "bisections over boot entries or commits: start FILE | show ID | "
                               "list | cancel ID");
  bisect_->require_subcommand(1);
  bisect_start_ = bisect_->add_subcommand("start", "start a bisection (YAML); prints its id last");
  bisect_start_->add_option("FILE", file_, "bisection file, or - for stdin")->required();
  bisect_show_ = bisect_->add_subcommand("show", "a bisection's report: steps and verdicts");
  bisect_show_->add_option("ID", id_, "bisection id")->required();
  AddFormat(bisect_show_, &format_);
  bisect_list_ = bisect_->add_subcommand("list", "list the bisections");
  bisect_list_->add_option("--limit", limit_, "at most this many (0: 100)");
  AddFormat(bisect_list_, &format_);
  bisect_cancel_ = bisect_->add_subcommand("cancel", "stop a bisection and cancel its run");
  bisect_cancel_->add_option("ID", id_, "bisection id")->required();
}

bool NightlyCommands::parsed() const {
  return schedule_->parsed() || regressions_->parsed() || series_->parsed() || bisect_->parsed();
}

int NightlyCommands::Run(const FleetClientOptions& options, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::unique_ptr<NightlyClient>> client = NightlyClient::Create(options);
  if (!client.ok()) {
    err << "tlbfleet: " << client.status().message() << "\n";
    return kExitUsage;
  }
  if (schedule_->parsed()) return Schedule(**client, out, err);
  if (regressions_->parsed()) return Regressions(**client, out, err);
  if (series_->parsed()) return Series(**client, out, err);
  return Bisect(**client, out, err);
}

int NightlyCommands::Schedule(NightlyClient& client, std::ostream& out, std::ostream& err) {
  if (schedule_add_->parsed()) {
    v1::AddScheduleRequest request;
    std::string text;
    if (!ReadInput(file_, "schedule", &text, err)) return kExitUsage;
    request.set_spec_yaml(text);
    request.set_source_name(file_ == "-" ? "<stdin>" : file_);
    v1::Schedule added;
    grpc::Status s = client.Call(&Stub::AddSchedule, request, &added);
    if (!s.ok()) return Failure(s, client.address(), err);
    out << fmt::format("added schedule {} ({}): \"{}\" UTC\n{}\n", added.id(), added.spec().name(),
                       added.spec().cron(), added.id());
    return kExitOk;
  }
  if (schedule_list_->parsed()) {
    v1::ListSchedulesResponse list;
    grpc::Status s = client.Call(&Stub::ListSchedules, v1::ListSchedulesRequest(), &list);
    if (!s.ok()) return Failure(s, client.address(), err);
    out << (format_ == "json" ? ToJson(list) : FormatSchedulesTable(list));
    return kExitOk;
  }
  v1::ScheduleRequest request;
  request.set_id(id_);
  v1::Schedule schedule;
  grpc::Status s;
  std::string done;
  if (schedule_pause_->parsed()) {
    s = client.Call(&Stub::PauseSchedule, request, &schedule);
    done = "paused";
  } else if (schedule_resume_->parsed()) {
    s = client.Call(&Stub::ResumeSchedule, request, &schedule);
    done = "resumed";
  } else {
    s = client.Call(&Stub::RemoveSchedule, request, &schedule);
    done = "removed";
  }
  if (!s.ok()) return Failure(s, client.address(), err);
  out << fmt::format("schedule {} ({}) {}\n", schedule.id(), schedule.spec().name(), done);
  return kExitOk;
}

int NightlyCommands::Regressions(NightlyClient& client, std::ostream& out, std::ostream& err) {
  const bool update =
      regressions_ack_->parsed() || regressions_fixed_->parsed() || regressions_reopen_->parsed();
  if (update) {
    v1::UpdateRegressionRequest request;
    request.set_id(id_);
    request.set_status(regressions_ack_->parsed()     ? v1::REGRESSION_ACKNOWLEDGED
                       : regressions_fixed_->parsed() ? v1::REGRESSION_FIXED
                                                      : v1::REGRESSION_OPEN);
    v1::Regression r;
    grpc::Status s = client.Call(&Stub::UpdateRegression, request, &r);
    if (!s.ok()) return Failure(s, client.address(), err);
    out << fmt::format("regression {} is {}\n", r.id(), RegressionStatusName(r.status()));
    return kExitOk;
  }
  v1::ListRegressionsRequest request;
  if (status_ == "open") request.add_statuses(v1::REGRESSION_OPEN);
  if (status_ == "acknowledged") request.add_statuses(v1::REGRESSION_ACKNOWLEDGED);
  if (status_ == "fixed") request.add_statuses(v1::REGRESSION_FIXED);
  request.set_limit(limit_);
  v1::ListRegressionsResponse list;
  grpc::Status s = client.Call(&Stub::ListRegressions, request, &list);
  if (!s.ok()) return Failure(s, client.address(), err);
  out << (format_ == "json" ? ToJson(list) : FormatRegressionsTable(list));
  return kExitOk;
}

int NightlyCommands::Series(NightlyClient& client, std::ostream& out, std::ostream& err) {
  v1::ListSeriesRequest request;
  request.set_benchmark(benchmark_);
  request.set_metric(metric_);
  request.set_with_points(true);
  v1::ListSeriesResponse list;
  grpc::Status s = client.Call(&Stub::ListSeries, request, &list);
  if (!s.ok()) return Failure(s, client.address(), err);
  out << (format_ == "json" ? ToJson(list) : FormatSeriesTable(list));
  return kExitOk;
}

int NightlyCommands::Bisect(NightlyClient& client, std::ostream& out, std::ostream& err) {
  if (bisect_start_->parsed()) {
    v1::StartBisectRequest request;
    std::string text;
    if (!ReadInput(file_, "bisection", &text, err)) return kExitUsage;
    request.set_spec_yaml(text);
    request.set_source_name(file_ == "-" ? "<stdin>" : file_);
    v1::BisectState state;
    grpc::Status s = client.Call(&Stub::StartBisect, request, &state);
    if (!s.ok()) return Failure(s, client.address(), err);
    const v1::BisectSpec& spec = state.spec();
    const std::string over = spec.has_commits()
                                 ? fmt::format("{} commits of source {} ({} good: {}, {} bad: {})",
                                               spec.commits().range_size(), spec.commits().source(),
                                               spec.commits().good_rev(), spec.good(),
                                               spec.commits().bad_rev(), spec.bad())
                                 : fmt::format("{} entries ({} good, {} bad)", spec.entries_size(),
                                               spec.good(), spec.bad());
    out << fmt::format("started bisect {} over {}{}\n{}\n", state.id(), over,
                       state.pending_run_id().empty()
                           ? ""
                           : fmt::format("; measuring in run {}", state.pending_run_id()),
                       state.id());
    return kExitOk;
  }
  if (bisect_list_->parsed()) {
    v1::ListBisectsRequest request;
    request.set_limit(limit_);
    v1::ListBisectsResponse list;
    grpc::Status s = client.Call(&Stub::ListBisects, request, &list);
    if (!s.ok()) return Failure(s, client.address(), err);
    out << (format_ == "json" ? ToJson(list) : FormatBisectsTable(list));
    return kExitOk;
  }
  v1::GetBisectRequest request;
  request.set_id(id_);
  if (bisect_show_->parsed()) {
    v1::GetBisectResponse response;
    grpc::Status s = client.Call(&Stub::GetBisect, request, &response);
    if (!s.ok()) return Failure(s, client.address(), err);
    out << (format_ == "json" ? ToJson(response.state()) : WithTrailingNewline(response.report()));
    return kExitOk;
  }
  v1::BisectState state;
  grpc::Status s = client.Call(&Stub::CancelBisect, request, &state);
  if (!s.ok()) return Failure(s, client.address(), err);
  out << fmt::format("bisect {} {}\n", state.id(), bisect::BisectStatusName(state.status()));
  return kExitOk;
}

}  // namespace tlbfleet::cli
