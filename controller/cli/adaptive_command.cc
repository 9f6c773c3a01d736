#include "controller/cli/adaptive_command.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "controller/cli/exit_codes.h"

namespace tlbfleet::cli {

namespace {

// "0.01" or "1%".
std::optional<double> AdaptiveFraction(std::string text) {
  double scale = 1;
  absl::string_view view = absl::StripAsciiWhitespace(text);
  if (absl::ConsumeSuffix(&view, "%")) scale = 0.01;
  double value = 0;
  if (!absl::SimpleAtod(view, &value) || !std::isfinite(value)) return std::nullopt;
  return value * scale;
}

// "N" (fixed) or "MIN..MAX" (adaptive) into `fixed` or `range`.
absl::Status ParseCountFlag(const char* flag, const std::string& text, uint32_t* fixed,
                            v1::AdaptiveSpec::Range* range) {
  const size_t dots = text.find("..");
  uint32_t a = 0;
  uint32_t b = 0;
  const bool ok = dots == std::string::npos ? absl::SimpleAtoi(text, &a)
                                            : absl::SimpleAtoi(text.substr(0, dots), &a) &&
                                                  absl::SimpleAtoi(text.substr(dots + 2), &b);
  if (!ok || a < 1 || (dots != std::string::npos && b < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": expected a count N or a range MIN..MAX of whole numbers from 1, got \"", text,
        "\""));
  }
  if (dots == std::string::npos) {
    *fixed = a;
    return absl::OkStatus();
  }
  if (b < a) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": the maximum ", b, " is below the minimum ", a));
  }
  range->set_min(a);
  range->set_max(b);
  *fixed = a;
  return absl::OkStatus();
}

// The replay names options as the run spec does ("adaptive.level: ...", "boots.max: ...");
// on the command line they are flags.
std::string AsAdaptiveFlag(const absl::Status& status) {
  const std::string message(status.message());
  for (const auto& [option, flag] :
       {std::pair<const char*, const char*>{"adaptive.level:", "--level:"},
        {"adaptive.margin:", "--margin:"},
        {"adaptive.spending:", "--spending:"},
        {"boots.max:", "--boots:"},
        {"boots:", "--boots:"},
        {"iterations.max:", "--iterations:"},
        {"iterations:", "--iterations:"},
        {"target_ci:", "--target-ci:"},
        {"baseline:", "--baseline:"},
        {"metric:", "--metric:"}}) {
    const std::string prefix(option);
    if (message.rfind(prefix, 0) == 0) return flag + message.substr(prefix.size());
  }
  return message;
}

}  // namespace

absl::StatusOr<report::ReplayOptions> ReplayOptionsFromFlags(const AdaptiveFlags& flags) {
  report::ReplayOptions options;
  v1::AdaptiveSpec& a = options.adaptive;
  if (absl::Status s = ParseCountFlag("--iterations", flags.iterations, &options.iterations,
                                      a.mutable_iterations());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ParseCountFlag("--boots", flags.boots, &options.boots, a.mutable_boots());
      !s.ok()) {
    return s;
  }
  if (flags.stop == "verdict") {
    a.set_stop(v1::AdaptiveSpec::STOP_VERDICT);
  } else if (flags.stop == "precision") {
    a.set_stop(v1::AdaptiveSpec::STOP_PRECISION);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--stop: expected precision or verdict, got \"", flags.stop, "\""));
  }
  for (const auto& [flag, text, set] :
       {std::tuple{"--target-ci", &flags.target_ci, &v1::AdaptiveSpec::set_target_ci},
        std::tuple{"--level", &flags.level, &v1::AdaptiveSpec::set_level},
        std::tuple{"--margin", &flags.margin, &v1::AdaptiveSpec::set_margin}}) {
    if (text->empty()) continue;
    std::optional<double> value = AdaptiveFraction(*text);
    if (!value) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": expected a fraction such as 0.01 or 1%, got \"", *text, "\""));
    }
    // 0 would read as "the default" in the spec: refuse it here, where it was typed.
    if (!(*value > 0 && *value < 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": must be above 0 and below 1 (100%), got \"", *text, "\""));
    }
    (a.*set)(*value);
  }
  if (flags.spending == "obrien-fleming") {
    a.set_spending(v1::AdaptiveSpec::SPENDING_OBRIEN_FLEMING);
  } else if (flags.spending == "pocock") {
    a.set_spending(v1::AdaptiveSpec::SPENDING_POCOCK);
  } else if (!flags.spending.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--spending: expected obrien-fleming or pocock, got \"", flags.spending, "\""));
  }
  for (const std::string& m : flags.metrics) a.add_metrics(m);
  options.baseline = flags.baseline;
  return options;
}

AdaptiveCommand::AdaptiveCommand(CLI::App& app) {
  command_ = app.add_subcommand(
      "adaptive",
      "replay the adaptive decisions over samples measured before (what an adaptive run "
      "would have measured and concluded)");
  command_->add_option("--from-csv", file_, "CSV of compare --from-csv, or - for stdin")
      ->required();
  command_
      ->add_option("--iterations", flags_.iterations,
                   "iterations per boot: N, or MIN..MAX (adaptive)")
      ->capture_default_str();
  command_->add_option("--boots", flags_.boots, "boots per arm: N, or MIN..MAX (adaptive)")
      ->capture_default_str();
  command_->add_option("--stop", flags_.stop, "what ends the run: precision|verdict")
      ->capture_default_str();
  command_->add_option("--target-ci", flags_.target_ci,
                       "stop precision: ratio CI half-width to reach, e.g. 1%");
  command_->add_option("--level", flags_.level,
                       "stop verdict: confidence level over every row and look (default 0.95)");
  command_->add_option("--margin", flags_.margin,
                       "stop verdict: equivalence margin of \"same\" (default 1%)");
  command_->add_option("--spending", flags_.spending,
                       "stop verdict: obrien-fleming (default) or pocock");
  command_->add_option("--metric", flags_.metrics,
                       "judged metric (repeatable; default every metric of the CSV)");
  command_->add_option("--baseline", flags_.baseline, "baseline arm (default the CSV's first)");
  command_->add_flag("--lower-is-better", lower_is_better_, "every metric is lower-is-better");
  command_->add_option("--format", format_, "output format: text|json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

bool AdaptiveCommand::parsed() const { return command_->parsed(); }

int AdaptiveCommand::Run(std::ostream& out, std::ostream& err) const {
  absl::StatusOr<report::ReplayOptions> options = ReplayOptionsFromFlags(flags_);
  if (!options.ok()) {
    err << "tlbfleet: " << options.status().message() << "\n";
    return kExitUsage;
  }
  std::string text;
  {
    std::ifstream in(file_ == "-" ? "/dev/stdin" : file_, std::ios::binary);
    if (!in) {
      err << "tlbfleet: cannot read CSV " << file_ << ": " << std::strerror(errno) << "\n";
      return kExitUsage;
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  absl::StatusOr<report::ReplayResult> result = report::ReplayAdaptiveCsv(
      text, lower_is_better_ ? stats::Direction::kLowerIsBetter : stats::Direction::kHigherIsBetter,
      *options);
  if (!result.ok()) {
    const std::string message = AsAdaptiveFlag(result.status());
    // Errors of the file name it; errors of the options name the flag.
    if (message.rfind("line ", 0) == 0 || message.rfind("empty CSV", 0) == 0 ||
        message.rfind("the CSV", 0) == 0) {
      err << "tlbfleet: " << file_ << ": " << message << "\n";
    } else {
      err << "tlbfleet: " << message << "\n";
    }
    return kExitUsage;
  }
  out << (format_ == "json" ? report::RenderReplayJson(*result)
                            : report::RenderReplayText(*result));
  return kExitOk;
}

}  // namespace tlbfleet::cli
