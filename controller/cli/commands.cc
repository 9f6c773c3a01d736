#include "controller/cli/commands.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <optional>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "catalogue/catalogue.h"
#include "common/files.h"
#include "controller/cli/exit_codes.h"
#include "controller/cli/format.h"
#include "controller/cli/progress.h"
#include "controller/cli/yaml_documents.h"
#include "controller/report/compare.h"
#include "controller/report/comparison.h"
#include "controller/report/flush_profile.h"
#include "controller/report/mmtests_table.h"
#include "controller/report/render.h"
#include "fmt/format.h"

namespace tlbfleet::cli {

namespace v1 = tlbfleet::v1;

namespace {

// "-" is standard input, read from fd 0: opening /dev/stdin fails (ENXIO) when standard
// input is a socket, as it is under a program that spawns the CLI with pipes (Node's).
absl::StatusOr<std::string> ReadInput(const std::string& file) {
  if (file != "-") return ReadFile(file);
  std::string text;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(STDIN_FILENO, buf, sizeof buf)) > 0) {
    text.append(buf, static_cast<size_t>(n));
  }
  if (n < 0) return absl::InvalidArgumentError(std::string("<stdin>: ") + std::strerror(errno));
  return text;
}

double Seconds(std::chrono::milliseconds d) { return std::chrono::duration<double>(d).count(); }

// "failed: <error>" or "failed (2 of 12 jobs failed)" when the controller gave no reason.
std::string DescribeEnd(const v1::Run& run) {
  std::string text = RunStateName(run.state());
  if (!run.error().empty()) return fmt::format("{}: {}", text, run.error());
  const auto& jobs = run.jobs();
  if (jobs.failed() > 0 || jobs.cancelled() > 0) {
    return fmt::format("{} ({} failed, {} cancelled of {} jobs)", text, jobs.failed(),
                       jobs.cancelled(), jobs.total());
  }
  return text;
}

// The report in `format`: every format renders the one message (report/render.h).
std::string RenderReport(const v1::Report& report, OutputFormat format) {
  switch (format) {
    case OutputFormat::kJson:
      return report::RenderReportJson(report);
    case OutputFormat::kCsv:
      return report::RenderReportCsv(report);
    case OutputFormat::kText:
      break;
  }
  return report::RenderReportText(report);
}

// "1%" or 0.01 as a fraction; nullopt for anything else.
std::optional<double> ParseFraction(std::string text) {
  double scale = 1;
  if (!text.empty() && text.back() == '%') {
    text.pop_back();
    scale = 0.01;
  }
  double value = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(text), &value) || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value * scale;
}

// The flags as CompareOptions, checked: INVALID_ARGUMENT naming the flag ("--margin: ...").
absl::StatusOr<report::CompareOptions> OptionsFromFlags(const CompareFlags& flags) {
  report::CompareOptions options;
  options.baseline = flags.baseline;
  for (const auto& [name, text, field] : {std::tuple{"--margin", &flags.margin, &options.margin},
                                          std::tuple{"--level", &flags.level, &options.level}}) {
    if (text->empty()) continue;
    std::optional<double> value = ParseFraction(*text);
    if (!value) {
      return absl::InvalidArgumentError(
          fmt::format("{}: expected a fraction such as 0.01 or 1%, got \"{}\"", name, *text));
    }
    *field = *value;
  }
  if (!flags.pairing.empty()) {
    absl::StatusOr<stats::Pairing> pairing = stats::ParsePairing(flags.pairing);
    if (!pairing.ok())
      return absl::InvalidArgumentError("--" + std::string(pairing.status().message()));
    options.pairing = *pairing;
  }
  options.adjust = !flags.unadjusted;
  if (absl::Status s = report::ValidateCompareOptions(options); !s.ok()) {
    return absl::InvalidArgumentError("--" + std::string(s.message()));
  }
  return options;
}

// Compare's own errors name the option as the API does ("pairing: ..."); on the command
// line it is a flag.
std::string AsFlag(const absl::Status& status) {
  const std::string message(status.message());
  for (const char* option : {"pairing:", "margin:", "level:"}) {
    if (message.rfind(option, 0) == 0) return "--" + message;
  }
  return message;
}

}  // namespace

Commands::Commands(FleetClient& client, std::ostream& out, std::ostream& err, Clock& clock,
                   bool err_is_tty)
    : client_(client), out_(out), err_(err), clock_(clock), err_is_tty_(err_is_tty) {}

int Commands::Error(int code, const std::string& message) {
  err_ << "tlbfleet: " << message << '\n' << std::flush;
  return code;
}

int Commands::RpcFailure(const grpc::Status& status, const std::string& run_id) {
  return Error(ExitCodeForStatus(status.error_code()),
               RpcErrorMessage(status, client_.address(), run_id));
}

int Commands::Submit(const std::string& file) {
  const bool from_stdin = file == "-";
  absl::StatusOr<std::string> spec = ReadInput(file);
  if (!spec.ok()) {
    std::string reason(spec.status().message());  // "<path>: <strerror>"
    return Error(kExitUsage, "cannot read run spec: " + reason);
  }
  const std::string source = from_stdin ? "<stdin>" : file;
  // A multi-document file (a preset) is one run per document; a plain file is sent as is.
  std::vector<YamlDocument> documents = SplitYamlDocuments(*spec);
  if (documents.size() <= 1) documents = {YamlDocument{*std::move(spec), 1}};
  std::vector<std::string> run_ids;
  for (const YamlDocument& document : documents) {
    v1::SubmitRunRequest request;
    request.set_spec_yaml(document.text);
    request.set_source_name(source);
    v1::SubmitRunResponse response;
    grpc::Status status = client_.SubmitRun(request, &response);
    if (!status.ok()) {
      if (documents.size() > 1) {
        err_ << fmt::format("tlbfleet: {}: the run spec at line {} was not submitted{}\n", source,
                            document.first_line,
                            run_ids.empty() ? ""
                                            : fmt::format(" (already submitted: runs {})",
                                                          fmt::join(run_ids, " ")));
      }
      return RpcFailure(status, "");
    }
    out_ << fmt::format("submitted run {} ({})\n", response.run_id(),
                        response.jobs() == 0 ? std::string("jobs are expanded on each host")
                                             : fmt::format("{} job{}", response.jobs(),
                                                           response.jobs() == 1 ? "" : "s"));
    run_ids.push_back(response.run_id());
  }
  // Scripts take the last line: the run id, or the ids of a multi-document file.
  out_ << fmt::format("{}\n", fmt::join(run_ids, " "));
  return kExitOk;
}

int Commands::Runs(uint32_t limit, OutputFormat format) {
  v1::ListRunsResponse response;
  grpc::Status status = client_.ListRuns(limit, &response);
  if (!status.ok()) return RpcFailure(status, "");
  out_ << (format == OutputFormat::kJson ? ToJson(response) : FormatRunsTable(response));
  return kExitOk;
}

int Commands::ShowRun(const std::string& run_id, OutputFormat format) {
  v1::Run run;
  grpc::Status status = client_.GetRun(run_id, &run);
  if (!status.ok()) return RpcFailure(status, run_id);
  out_ << (format == OutputFormat::kJson ? ToJson(run) : FormatRunDetails(run));
  return kExitOk;
}

int Commands::Wait(const std::string& run_id, const WaitOptions& options) {
  const bool has_deadline = options.timeout.count() > 0;
  const absl::Time deadline = clock_.Now() + absl::FromChrono(options.timeout);
  ProgressReporter progress(err_, err_is_tty_);
  bool answered_once = false;
  bool in_outage = false;  // GetRun failed transiently since outage_since
  absl::Time outage_since;
  v1::Run run;

  while (true) {
    grpc::Status status = client_.GetRun(run_id, &run);
    if (!status.ok()) {
      const bool transient = ExitCodeForStatus(status.error_code()) == kExitUnreachable;
      if (!answered_once || !transient) {
        progress.Finish();
        return RpcFailure(status, run_id);
      }
      if (!in_outage) {
        in_outage = true;
        outage_since = clock_.Now();
        if (!options.quiet) {
          progress.Note(fmt::format("run {}: controller unreachable, retrying", run_id));
        }
      }
      if (clock_.Now() - outage_since >= absl::FromChrono(options.outage_grace)) {
        progress.Finish();
        return RpcFailure(status, run_id);
      }
    } else {
      answered_once = true;
      in_outage = false;
      if (!options.quiet) progress.Update(run);
      if (IsTerminal(run.state())) {
        progress.Finish();
        if (run.state() == v1::RUN_STATE_SUCCEEDED) {
          if (!options.quiet) {
            err_ << fmt::format("run {} succeeded: {}/{} jobs done\n", run_id, JobsDone(run.jobs()),
                                run.jobs().total());
          }
          return kExitOk;
        }
        return Error(ExitCodeForRunState(run.state()),
                     fmt::format("run {} {}", run_id, DescribeEnd(run)));
      }
    }

    // Never spin: a sub-millisecond --interval rounds to 0.
    absl::Duration sleep =
        std::max(absl::FromChrono(options.poll_interval), absl::Milliseconds(10));
    if (has_deadline) {
      const absl::Time now = clock_.Now();
      if (now >= deadline) {
        progress.Finish();
        std::string where = answered_once
                                ? fmt::format(" ({}, {}/{} jobs done)", RunStateName(run.state()),
                                              JobsDone(run.jobs()), run.jobs().total())
                                : "";
        return Error(kExitTimeout, fmt::format("timed out after {:g} s waiting for run {}{}",
                                               Seconds(options.timeout), run_id, where));
      }
      sleep = std::min(sleep, deadline - now);
    }
    clock_.SleepFor(sleep);
  }
}

int Commands::Cancel(const std::string& run_id) {
  v1::Run run;
  grpc::Status status = client_.CancelRun(run_id, &run);
  if (!status.ok()) return RpcFailure(status, run_id);
  if (run.state() == v1::RUN_STATE_CANCELLED) {
    out_ << fmt::format("run {} cancelled\n", run_id);
  } else {
    out_ << fmt::format("run {}: cancel requested (state: {})\n", run_id,
                        RunStateName(run.state()));
  }
  return kExitOk;
}

int Commands::Hosts(OutputFormat format) {
  v1::ListHostsResponse response;
  grpc::Status status = client_.ListHosts(&response);
  if (!status.ok()) return RpcFailure(status, "");
  out_ << (format == OutputFormat::kJson ? ToJson(response) : FormatHostsTable(response));
  return kExitOk;
}

int Commands::Results(const std::string& run_id, OutputFormat format) {
  v1::GetResultsResponse response;
  grpc::Status status = client_.GetResults(run_id, &response);
  if (!status.ok()) return RpcFailure(status, run_id);
  out_ << (format == OutputFormat::kJson ? ToJson(response) : FormatResultsCsv(response));
  return kExitOk;
}

int Commands::BuildLog(int64_t task_id, OutputFormat format) {
  v1::GetBuildLogResponse response;
  grpc::Status status = client_.GetBuildLog(task_id, &response);
  if (!status.ok()) return RpcFailure(status, absl::StrCat("build ", task_id));
  if (format == OutputFormat::kJson) {
    out_ << ToJson(response);
    return kExitOk;
  }
  for (const std::string& line : response.lines()) out_ << line << '\n';
  const v1::KernelBuild& b = response.build();
  err_ << fmt::format("build {} (arm {}: {} {} config {}): {}{}\n", b.task_id(), b.arm(),
                      b.kernel().source(), b.kernel().rev(), b.kernel().config(), b.state(),
                      b.reason().empty() ? "" : fmt::format(": {}", b.reason()));
  return kExitOk;
}

int Commands::Compare(const std::string& run_id, const CompareFlags& flags, OutputFormat format) {
  absl::StatusOr<report::CompareOptions> options = OptionsFromFlags(flags);
  if (!options.ok()) return Error(kExitUsage, std::string(options.status().message()));
  if (flags.table == "mmtests" && (!flags.with_run.empty() || format != OutputFormat::kText)) {
    return Error(kExitUsage, "--table mmtests: one run, as text (not with --with or --format)");
  }
  v1::CompareRequest request;
  request.set_run_id(run_id);
  request.set_baseline(flags.baseline);
  if (!flags.margin.empty()) request.set_margin(options->margin);
  if (!flags.level.empty()) request.set_level(options->level);
  if (!flags.pairing.empty()) request.set_pairing(stats::PairingName(options->pairing));
  request.set_unadjusted(flags.unadjusted);
  request.set_with_run_id(flags.with_run);
  request.set_arm(flags.arm);
  request.set_with_arm(flags.with_arm);
  v1::CompareResponse response;
  grpc::Status status = client_.Compare(request, &response);
  // An unknown baseline arm or an impossible pairing is INVALID_ARGUMENT (exit 2), so
  // NOT_FOUND is about the run.
  if (!status.ok()) return RpcFailure(status, run_id);
  if (flags.table == "mmtests") return CompareMmtestsTable(run_id, response.report());
  // The controller computed the report once; every format renders it.
  out_ << (format == OutputFormat::kText ? WithTrailingNewline(response.text())
                                         : RenderReport(response.report(), format));
  return kExitOk;
}

int Commands::CompareMmtestsTable(const std::string& run_id, const v1::Report& report) {
  // Today's mmtests rows need every sample (HStddev, BHmean.95), which the report does not
  // carry: the CLI reads them and computes the rows, in the report's groups and arm order.
  v1::Run run;
  grpc::Status status = client_.GetRun(run_id, &run);
  if (!status.ok()) return RpcFailure(status, run_id);
  const catalogue::WorkloadSchema* workload = catalogue::FindWorkload(run.spec().benchmark());
  if (workload == nullptr) {
    return Error(kExitUsage, fmt::format("--table mmtests: run {} runs \"{}\", which the "
                                         "catalogue does not know",
                                         run_id, run.spec().benchmark()));
  }
  const catalogue::MmtestsSummaryStyle style = workload->MmtestsSummary();
  v1::GetResultsResponse results;
  status = client_.GetResults(run_id, &results);
  if (!status.ok()) return RpcFailure(status, run_id);
  std::vector<v1::Sample> samples(results.samples().begin(), results.samples().end());
  out_ << report::RenderMmtestsTable(report, samples,
                                     style.summarise == "Normalisedops"
                                         ? report::MmtestsSummarise::kNormalisedops
                                         : report::MmtestsSummarise::kMultiops,
                                     style.decimals);
  return kExitOk;
}

int Commands::Profile(const std::string& run_id, const std::vector<std::string>& arms,
                      const std::string& param_value, OutputFormat format, bool flush_sizes) {
  // The controller's report carries the profiles; the CLI picks arms and renders them.
  v1::CompareRequest request;
  request.set_run_id(run_id);
  request.set_flush_param(param_value);
  v1::CompareResponse response;
  grpc::Status status = client_.Compare(request, &response);
  if (!status.ok()) return RpcFailure(status, run_id);
  const v1::Report& report = response.report();
  std::vector<std::string> order = arms;
  if (order.empty()) order.assign(report.arms().begin(), report.arms().end());
  for (const std::string& arm : arms) {
    if (std::find(report.arms().begin(), report.arms().end(), arm) == report.arms().end()) {
      return Error(kExitUsage, fmt::format("--arm: run {} has no arm \"{}\"", run_id, arm));
    }
  }
  std::vector<const v1::FlushProfile*> chosen;
  for (const std::string& arm : order) {
    for (const v1::FlushProfile& p : report.flush_profiles()) {
      if (p.arm() == arm) chosen.push_back(&p);
    }
  }
  if (format == OutputFormat::kJson && !flush_sizes) {
    std::vector<std::string> objects;
    for (const v1::FlushProfile* p : chosen) objects.push_back(ToJson(*p));
    out_ << "[" << absl::StrJoin(objects, ",") << "]\n";
    return kExitOk;
  }
  std::vector<report::ArmFlushProfile> profiles;
  for (const v1::FlushProfile* p : chosen) profiles.push_back(report::FlushProfileFromProto(*p));
  if (flush_sizes) return PrintFlushSizes(run_id, profiles);
  out_ << report::RenderFlushProfileText(profiles);
  return kExitOk;
}

int Commands::PrintFlushSizes(const std::string& run_id,
                              const std::vector<report::ArmFlushProfile>& profiles) {
  if (profiles.size() != 1) {
    return Error(kExitUsage, fmt::format("--flush-sizes: run {} has {} arms with a flush profile; "
                                         "name one with --arm",
                                         run_id, profiles.size()));
  }
  std::vector<std::string> warnings;
  absl::StatusOr<std::string> sizes = report::FlushSizesFromProfile(profiles[0], &warnings);
  if (!sizes.ok()) return Error(kExitUsage, std::string(sizes.status().message()));
  for (const std::string& w : warnings) err_ << "tlbfleet: " << w << '\n';
  out_ << "flush_sizes: \"" << *sizes << "\"\n";
  return kExitOk;
}

int Commands::CompareFromCsv(const std::string& file, const CompareFlags& flags,
                             bool lower_is_better, OutputFormat format) {
  if (!flags.table.empty()) {
    return Error(kExitUsage, "--table mmtests: needs a run (the CSV does not name the benchmark)");
  }
  absl::StatusOr<report::CompareOptions> options = OptionsFromFlags(flags);
  if (!options.ok()) return Error(kExitUsage, std::string(options.status().message()));
  absl::StatusOr<std::string> text = ReadInput(file);
  if (!text.ok()) {
    return Error(kExitUsage, "cannot read CSV: " + std::string(text.status().message()));
  }
  absl::StatusOr<std::vector<report::Observation>> observations =
      report::ParseObservationsCsv(*text, lower_is_better ? stats::Direction::kLowerIsBetter
                                                          : stats::Direction::kHigherIsBetter);
  if (!observations.ok()) {
    return Error(kExitUsage,
                 fmt::format("{}: {}", file, std::string(observations.status().message())));
  }
  // Offline, the same pipeline the controller runs: observations, comparison, report.
  absl::StatusOr<report::Comparison> comparison = report::Compare(*observations, *options);
  if (!comparison.ok()) {
    return Error(kExitUsage, fmt::format("{}: {}", file, AsFlag(comparison.status())));
  }
  v1::Report built = report::ReportFromComparison(*comparison);
  built.set_title(file);
  out_ << RenderReport(built, format);
  return kExitOk;
}

}  // namespace tlbfleet::cli
