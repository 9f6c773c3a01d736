#include "controller/cli/app.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>

#include "CLI/CLI.hpp"
#include "common/token_file.h"
#include "common/version.h"
#include "controller/cli/adaptive_command.h"
#include "controller/cli/ceilings_command.h"
#include "controller/cli/changepoints_command.h"
#include "controller/cli/commands.h"
#include "controller/cli/exit_codes.h"
#include "controller/cli/export_command.h"
#include "controller/cli/fleet_client.h"
#include "controller/cli/import_lkp.h"
#include "controller/cli/import_mmtests.h"
#include "controller/cli/import_results_command.h"
#include "controller/cli/nightly_commands.h"

namespace tlbfleet::cli {

namespace {

constexpr char kFooter[] = R"(Exit codes:
  0  success (wait: the run succeeded)
  1  the run failed or was cancelled, unknown run id, other controller errors
  2  usage error, unreadable file, or run spec rejected by the controller
  3  wait --timeout expired
  4  cannot reach the controller

See docs/cli.md for examples.
)";

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(std::llround(seconds * 1000.0));
}

OutputFormat ParseFormat(const std::string& name) {
  if (name == "json") return OutputFormat::kJson;
  if (name == "csv") return OutputFormat::kCsv;
  return OutputFormat::kText;
}

// Adds --format with the given choices; `*value` starts as the default.
void AddFormatOption(CLI::App* command, std::string* value, std::vector<std::string> choices) {
  std::string help = "output format: ";
  for (size_t i = 0; i < choices.size(); ++i) help += (i > 0 ? "|" : "") + choices[i];
  command->add_option("--format", *value, help)
      ->check(CLI::IsMember(choices))
      ->capture_default_str();
}

}  // namespace

CliEnvironment ProcessEnvironment() {
  CliEnvironment env;
  if (const char* controller = std::getenv("TLBFLEET_CONTROLLER")) env.controller = controller;
  if (const char* token = std::getenv("TLBFLEET_TOKEN")) env.token = token;
  if (const char* ca = std::getenv("TLBFLEET_TLS_CA")) env.tls_ca = ca;
  env.stderr_is_tty = ::isatty(STDERR_FILENO) == 1;
  return env;
}

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
           const CliEnvironment& env, Clock& clock) {
  CLI::App app{"tlbfleet: submit and follow benchmark runs on a tlbfleet controller", "tlbfleet"};
  app.footer(kFooter);
  app.set_version_flag("--version", kVersion);
  app.require_subcommand(1);
  app.fallthrough();  // global options may also follow the command

  std::string controller = env.controller.empty() ? kDefaultController : env.controller;
  double connect_timeout_s = 5.0;
  double rpc_timeout_s = 30.0;
  // TakeLast: a global option may be given both before and after the command.
  app.add_option("--controller", controller,
                 "controller gRPC address (default: $TLBFLEET_CONTROLLER or 127.0.0.1:7070)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::string tls_ca, tls_server_name;
  app.add_option("--tls-ca", tls_ca,
                 "CA (PEM) of the controller's certificate: use TLS (default: $TLBFLEET_TLS_CA)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--tls-server-name", tls_server_name,
                 "the name on the controller's certificate, when not the --controller host")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::string token_file;
  app.add_option("--token-file", token_file,
                 "file holding an API token (default: $TLBFLEET_TOKEN; none: development mode)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--timeout-connect", connect_timeout_s, "seconds to wait for a connection")
      ->check(CLI::PositiveNumber)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();
  app.add_option("--timeout-rpc", rpc_timeout_s, "deadline of each call, in seconds")
      ->check(CLI::PositiveNumber)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();

  std::string run_id, file;
  std::string format = "text";
  std::string results_format = "csv";
  uint32_t limit = 20;
  double wait_timeout_s = 0;
  double wait_interval_s = 0.5;
  bool quiet = false;

  CLI::App* submit = app.add_subcommand("submit", "submit a run spec (YAML); prints the run id");
  submit->add_option("FILE", file, "run spec file, or - for stdin")->required();

  CLI::App* runs = app.add_subcommand("runs", "list recent runs");
  runs->add_option("--limit", limit, "at most this many runs (0 = controller's default)")
      ->capture_default_str();
  AddFormatOption(runs, &format, {"text", "json"});

  CLI::App* run = app.add_subcommand("run", "show one run");
  run->add_option("RUN", run_id, "run id")->required();
  AddFormatOption(run, &format, {"text", "json"});

  CLI::App* wait = app.add_subcommand("wait", "wait until a run finishes; exit 0 if it succeeded");
  wait->add_option("RUN", run_id, "run id")->required();
  wait->add_option("--timeout", wait_timeout_s, "give up after this many seconds (0 = never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  wait->add_option("--interval", wait_interval_s, "seconds between polls")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  wait->add_flag("-q,--quiet", quiet, "no progress output");

  CLI::App* cancel = app.add_subcommand("cancel", "cancel a run");
  cancel->add_option("RUN", run_id, "run id")->required();

  CLI::App* hosts = app.add_subcommand("hosts", "list the hosts agents have reported");
  AddFormatOption(hosts, &format, {"text", "json"});

  CLI::App* results = app.add_subcommand("results", "every sample of a run");
  results->add_option("RUN", run_id, "run id")->required();
  AddFormatOption(results, &results_format, {"csv", "json"});

  int64_t build_task = 0;
  CLI::App* build_log =
      app.add_subcommand("build-log", "the whole log of a kernel build of a run (tlbfleet get)");
  build_log->add_option("BUILD", build_task, "build id (a run's `kernel ARM:` lines)")
      ->required()
      ->check(CLI::PositiveNumber);
  AddFormatOption(build_log, &format, {"text", "json"});

  std::string from_csv;
  bool lower_is_better = false;
  CLI::App* compare = app.add_subcommand("compare", "compare a run's arms (mmtests style)");
  CLI::Option* compare_run = compare->add_option("RUN", run_id, "run id");
  CLI::Option* compare_csv = compare->add_option(
      "--from-csv", from_csv,
      "offline: compare samples from a CSV file (arm,boot,param,iteration,metric,value)");
  compare_run->excludes(compare_csv);
  compare
      ->add_flag("--lower-is-better", lower_is_better,
                 "with --from-csv: lower values are better (default: higher)")
      ->needs(compare_csv);
  CompareFlags compare_flags;
  compare->add_option("--baseline", compare_flags.baseline,
                      "arm to compare against (default: first arm)");
  compare->add_option("--margin", compare_flags.margin,
                      "equivalence margin of \"same\", e.g. 1% or 0.01 (default 1%)");
  compare->add_option("--level", compare_flags.level,
                      "confidence level of the intervals, e.g. 0.95 or 95% (default 0.95)");
  compare->add_option("--pairing", compare_flags.pairing,
                      "auto (default: pair arms measured in the same boots), boots, iterations "
                      "or none");
  compare->add_flag("--unadjusted", compare_flags.unadjusted,
                    "judge each row on its own p (default: Benjamini–Hochberg across rows)");
  compare
      ->add_option("--table", compare_flags.table,
                   "mmtests: the rows today's mmtests prints for the benchmark (Hmean, HStddev, "
                   "BHmean.95 for rates), text only, one run (default: tlbfleet's table)")
      ->check(CLI::IsMember({"mmtests"}));
  CLI::Option* compare_with =
      compare->add_option("--with", compare_flags.with_run,
                          "across runs: compare RUN's arms with this run's (arms named RUN:ARM)");
  compare_with->excludes(compare_csv);
  compare->add_option("--arm", compare_flags.arm, "with --with: only this arm of RUN")
      ->needs(compare_with);
  compare
      ->add_option("--with-arm", compare_flags.with_arm,
                   "with --with: only this arm of the other run")
      ->needs(compare_with);
  AddFormatOption(compare, &format, {"text", "json", "csv"});

  std::vector<std::string> profile_arms;
  std::string profile_param;
  CLI::App* profile =
      app.add_subcommand("profile", "a run's TLB flush profile (sizes and reasons) per arm");
  profile->add_option("RUN", run_id, "run id")->required();
  profile->add_option("--arm", profile_arms, "only this arm (repeatable; default: all)");
  profile->add_option("--param", profile_param, "only this sweep value (default: all)");
  bool profile_flush_sizes = false;
  profile->add_flag("--flush-sizes", profile_flush_sizes,
                    "print the tlbflush flush_sizes value that replays this arm's local "
                    "flushes (one --arm)");
  AddFormatOption(profile, &format, {"text", "json"});

  std::string mmtests_config;
  CLI::App* import_mmtests = app.add_subcommand(
      "import-mmtests", "print run specs (YAML) for an mmtests config file; never runs it");
  import_mmtests->add_option("CONFIG", mmtests_config, "mmtests config file, or - for stdin")
      ->required();

  std::string lkp_job;
  CLI::App* import_lkp = app.add_subcommand(
      "import-lkp", "print run specs (YAML) for an LKP job file (lkp-tests jobs/*.yaml)");
  import_lkp->add_option("JOB", lkp_job, "LKP job file, or - for stdin")->required();

  ChangepointsCommand changepoints(app);
  AdaptiveCommand adaptive(app);
  NightlyCommands nightly(app);
  CeilingsCommand ceilings(app);
  ExportCommand export_command(app);
  ImportResultsCommand import_results(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitUsage;
  }

  if (import_mmtests->parsed()) return ImportMmtestsCommand(mmtests_config, out, err);
  if (import_lkp->parsed()) return ImportLkpCommand(lkp_job, out, err);
  if (changepoints.parsed()) return changepoints.Run(out, err);
  if (adaptive.parsed()) return adaptive.Run(out, err);

  FleetClientOptions options;
  options.address = controller;
  options.connect_timeout = Millis(connect_timeout_s);
  options.rpc_timeout = Millis(rpc_timeout_s);
  options.token = env.token;
  if (!token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(token_file, "--token-file");
    if (!token.ok()) {
      err << "tlbfleet: " << token.status().message() << "\n";
      return kExitUsage;
    }
    options.token = *std::move(token);
  }
  options.tls.ca = tls_ca.empty() ? env.tls_ca : tls_ca;
  options.tls.server_name = tls_server_name;
  if (nightly.parsed()) return nightly.Run(options, out, err);
  if (export_command.parsed()) return export_command.Run(options, out, err);
  if (import_results.parsed()) return import_results.Run(options, out, err);
  absl::StatusOr<std::unique_ptr<FleetClient>> client = FleetClient::Create(options);
  if (!client.ok()) {
    err << "tlbfleet: " << client.status().message() << "\n";
    return kExitUsage;
  }
  Commands commands(**client, out, err, clock, env.stderr_is_tty);
  if (ceilings.parsed()) return ceilings.Run(**client, out, err);

  if (submit->parsed()) return commands.Submit(file);
  if (runs->parsed()) return commands.Runs(limit, ParseFormat(format));
  if (run->parsed()) return commands.ShowRun(run_id, ParseFormat(format));
  if (wait->parsed()) {
    WaitOptions wait_options;
    wait_options.timeout = Millis(wait_timeout_s);
    wait_options.poll_interval = Millis(wait_interval_s);
    wait_options.quiet = quiet;
    return commands.Wait(run_id, wait_options);
  }
  if (cancel->parsed()) return commands.Cancel(run_id);
  if (hosts->parsed()) return commands.Hosts(ParseFormat(format));
  if (results->parsed()) return commands.Results(run_id, ParseFormat(results_format));
  if (build_log->parsed()) return commands.BuildLog(build_task, ParseFormat(format));
  if (profile->parsed()) {
    return commands.Profile(run_id, profile_arms, profile_param, ParseFormat(format),
                            profile_flush_sizes);
  }
  if (compare->parsed()) {
    if (!from_csv.empty()) {
      return commands.CompareFromCsv(from_csv, compare_flags, lower_is_better, ParseFormat(format));
    }
    if (run_id.empty()) {
      err << "tlbfleet: compare needs RUN or --from-csv FILE\n";
      return kExitUsage;
    }
    return commands.Compare(run_id, compare_flags, ParseFormat(format));
  }
  err << "tlbfleet: no command given; see tlbfleet --help\n";
  return kExitUsage;
}

}  // namespace tlbfleet::cli
