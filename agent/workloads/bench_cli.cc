#include "agent/workloads/bench_cli.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json.h"

namespace tlbfleet::workloads {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

void AppendJsonNumber(std::string& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";  // JSON has no NaN or infinity
    return;
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, end);
}

// The command line of one workload: its classic flags and the common options.
struct WorkloadCommand {
  const Workload* workload = nullptr;
  CLI::App* app = nullptr;
  std::vector<std::string> flag_values;  // one per ClassicFlag; used by flags with a value
  std::vector<CLI::Option*> flag_options;
  std::vector<std::string> sets;
  bool json = false;
  int iterations = 1;
};

std::unique_ptr<WorkloadCommand> AddWorkloadCommand(CLI::App& app, const Workload& workload) {
  auto command = std::make_unique<WorkloadCommand>();
  command->workload = &workload;
  command->app =
      app.add_subcommand(std::string(workload.Name()), std::string(workload.Description()));
  const std::vector<ClassicFlag>& flags = workload.ClassicFlags();
  // Sized before any option binds to an element, so the bound addresses stay valid.
  command->flag_values.resize(flags.size());
  for (size_t i = 0; i < flags.size(); ++i) {
    const ClassicFlag& flag = flags[i];
    std::string help = flag.help;
    if (!flag.param.empty()) {
      absl::StrAppend(&help, flag.fixed_value.empty() ? " (" : " (sets ", flag.param,
                      flag.fixed_value.empty() ? "" : "=", flag.fixed_value, ")");
    }
    CLI::Option* option = nullptr;
    if (flag.param.empty() || !flag.fixed_value.empty()) {
      // Must be const: CLI11 takes a non-const string here as the variable to store into.
      const std::string& description = help;
      option = command->app->add_flag(flag.flag, description);
    } else {
      option = command->app->add_option(flag.flag, command->flag_values[i], help)
                   ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
    command->flag_options.push_back(option);
  }
  command->app->add_option("--set", command->sets, "set a parameter: name=value (repeatable)")
      ->allow_extra_args(false);
  command->app->add_flag("--json", command->json, "one JSON object per measurement per line");
  command->app->add_option("--iterations", command->iterations, "how many times to run (default 1)")
      ->check(CLI::Range(1, 1000000));
  return command;
}

// Collects the parameters given by classic flags and --set. The same parameter given twice
// with different values is an error rather than last-one-wins: "-m -M" is more likely a
// mistake than a wish.
absl::StatusOr<std::map<std::string, std::string>> GivenParams(const WorkloadCommand& command) {
  std::map<std::string, std::pair<std::string, std::string>> given;  // name -> (value, source)
  auto add = [&](const std::string& name, const std::string& value,
                 const std::string& source) -> absl::Status {
    auto [it, inserted] = given.try_emplace(name, value, source);
    if (!inserted && it->second.first != value) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": set twice, to \"", it->second.first,
                                                     "\" (", it->second.second, ") and \"", value,
                                                     "\" (", source, ")"));
    }
    return absl::OkStatus();
  };
  const std::vector<ClassicFlag>& flags = command.workload->ClassicFlags();
  for (size_t i = 0; i < flags.size(); ++i) {
    const ClassicFlag& flag = flags[i];
    if (flag.param.empty() || command.flag_options[i]->count() == 0) continue;
    const std::string& value = flag.fixed_value.empty() ? command.flag_values[i] : flag.fixed_value;
    if (absl::Status s = add(flag.param, value, flag.flag); !s.ok()) return s;
  }
  for (const std::string& set : command.sets) {
    size_t eq = set.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--set: expected name=value, got \"", set, "\""));
    }
    if (absl::Status s = add(set.substr(0, eq), set.substr(eq + 1), "--set"); !s.ok()) return s;
  }
  std::map<std::string, std::string> out;
  for (auto& [name, value_source] : given) out[name] = value_source.first;
  return out;
}

int RunWorkload(const WorkloadCommand& command, const std::string& program) {
  const Workload& workload = *command.workload;
  absl::StatusOr<std::map<std::string, std::string>> given = GivenParams(command);
  absl::StatusOr<Params> params =
      given.ok() ? ResolveParams(workload, *given) : absl::StatusOr<Params>(given.status());
  if (!params.ok()) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(),
                 std::string(params.status().message()).c_str());
    return kExitUsage;
  }
  for (int iteration = 1; iteration <= command.iterations; ++iteration) {
    absl::StatusOr<std::vector<Measurement>> result = workload.Run(*params);
    if (!result.ok()) {
      std::fprintf(stderr, "%s: %s failed: %s\n", program.c_str(),
                   std::string(workload.Name()).c_str(), result.status().ToString().c_str());
      return kExitFailed;
    }
    std::string out;
    if (command.json) {
      for (const Measurement& m : *result) {
        absl::StrAppend(&out, MeasurementJsonLine(m, iteration, *params), "\n");
      }
    } else {
      out = workload.ClassicOutput(*params, *result);
    }
    std::fputs(out.c_str(), stdout);
    // The agent reads this through a pipe: each iteration's lines go out as soon as they exist.
    std::fflush(stdout);
  }
  return 0;
}

int BenchMainOrThrow(int argc, char** argv) {
  const Registry& registry = Registry::Get();
  const std::string known = absl::StrJoin(registry.Names(), ", ");
  const std::string program = argc > 0 ? argv[0] : "tlbfleet-bench";

  // Checked before parsing, so that a typo reads "unknown workload" and not CLI11's
  // "arguments were not expected".
  if (argc > 1 && argv[1][0] != '-' && registry.Find(argv[1]) == nullptr) {
    std::fprintf(stderr, "%s: unknown workload \"%s\" (known: %s)\n", program.c_str(), argv[1],
                 known.c_str());
    return kExitUsage;
  }

  CLI::App app("Runs one tlbfleet workload in this process and prints its results.");
  bool list = false;
  app.add_flag("--list", list, "print the names of the workloads, one a line");
  app.require_subcommand(0, 1);
  std::vector<std::unique_ptr<WorkloadCommand>> commands;
  for (const std::string& name : registry.Names()) {
    commands.push_back(AddWorkloadCommand(app, *registry.Find(name)));
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, or the error on stderr
    return code == 0 ? 0 : kExitUsage;
  }

  if (list) {
    for (const std::string& name : registry.Names()) std::printf("%s\n", name.c_str());
    return 0;
  }
  for (const auto& command : commands) {
    if (command->app->parsed()) return RunWorkload(*command, program);
  }
  std::fprintf(stderr, "%s: name a workload (known: %s), or --list\n", program.c_str(),
               known.c_str());
  return kExitUsage;
}

}  // namespace

std::string MeasurementJsonLine(const Measurement& measurement, int iteration,
                                const Params& params) {
  std::string out = "{\"metric\":";
  AppendJsonString(out, measurement.metric);
  out += ",\"value\":";
  AppendJsonNumber(out, measurement.value);
  out += ",\"unit\":";
  AppendJsonString(out, measurement.unit);
  out += ",\"better\":";
  out += measurement.better == Better::kHigher ? "\"higher\"" : "\"lower\"";
  if (!measurement.series.empty()) {
    out += ",\"series\":";
    AppendJsonString(out, measurement.series);
  }
  absl::StrAppend(&out, ",\"iteration\":", iteration, ",\"param\":{");
  bool first = true;
  for (const auto& [name, value] : params.values()) {
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(out, name);
    out.push_back(':');
    AppendJsonString(out, value);
  }
  out += "}}";
  return out;
}

int BenchMain(int argc, char** argv) {
  // CLI11 and the standard library report some failures (e.g. std::bad_alloc) by throwing;
  // nothing may escape into the agent.
  try {
    return BenchMainOrThrow(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argc > 0 ? argv[0] : "tlbfleet-bench", e.what());
    return kExitFailed;
  }
}

}  // namespace tlbfleet::workloads
