#include "controller/scheduler/iteration_length.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "catalogue/catalogue.h"
#include "controller/scheduler/run_spec_internal.h"

namespace tlbfleet::scheduler {
namespace {

// char arrays, not std::string_view: absl::string_view is not std::string_view here.
constexpr char kLengthParam[] = "seconds";
constexpr char kAuto[] = "auto";
constexpr char kAutoPrefix[] = "auto:";

// The measured models (tests/perf/iteration_length.py; docs/iteration-length.md has the tables
// they come from). A workload absent here refuses `auto`: a length chosen from no data would
// be a guess dressed as a measurement.
constexpr IterationLengthModel kIterationLengthModels[] = {
    {.workload = "ebizzy",
     .param = kLengthParam,
     .noise_per_second = 0.00564,
     .noise_floor = 0.00494,
     .startup_seconds = 0.033,
     .startup_per_second = 0,
     .lag1_per_second = 0.49,
     .measured = "tests/perf/iteration_length.py, threads=2, quiet machine, 2026-12-03 "
                 "(docs/iteration-length.md)"},
};

}  // namespace

const IterationLengthModel* FindIterationLengthModel(std::string_view workload) {
  for (const IterationLengthModel& m : kIterationLengthModels) {
    if (m.workload == workload) return &m;
  }
  return nullptr;
}

double VariancePerMachineSecond(const IterationLengthModel& model, double seconds) {
  const double cov2 = model.noise_per_second / seconds + model.noise_floor;
  const double wall = (1 + model.startup_per_second) * seconds + model.startup_seconds;
  // Capped as the harness caps a measured r1: never more than 0.95, never below independence.
  const double r = std::clamp(std::pow(model.lag1_per_second, seconds), 0.0, 0.95);
  return cov2 * wall * (1 + r) / (1 - r);
}

bool IsAutoValue(const std::string& value) {
  return value == kAuto || absl::StartsWith(value, kAutoPrefix);
}

absl::StatusOr<AutoBounds> ParseAutoBounds(const std::string& value, const std::string& field,
                                           int64_t param_min, int64_t param_max) {
  if (value == kAuto) {
    return AutoBounds{std::max(kAutoMinSeconds, param_min), std::min(kAutoMaxSeconds, param_max)};
  }
  const auto syntax = [&] {
    return FieldError(field, absl::StrCat("expected auto or auto:LO..HI (whole seconds, e.g. "
                                          "auto:1..10), got ",
                                          Quote(value)));
  };
  if (!IsAutoValue(value)) return syntax();
  const std::string range = value.substr(sizeof(kAutoPrefix) - 1);
  const std::vector<std::string> parts = absl::StrSplit(range, "..");
  AutoBounds bounds;
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 9 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (parts.size() != 2 || !digits(parts[0]) || !digits(parts[1]) ||
      !absl::SimpleAtoi(parts[0], &bounds.min) || !absl::SimpleAtoi(parts[1], &bounds.max)) {
    return syntax();
  }
  if (bounds.min < param_min || bounds.max > param_max) {
    return FieldError(field, absl::StrCat(Quote(value), ": the bounds must lie in [", param_min,
                                          ", ", param_max, "] seconds"));
  }
  if (bounds.min > bounds.max) {
    return FieldError(field,
                      absl::StrCat(Quote(value), ": LO ", bounds.min, " is above HI ", bounds.max));
  }
  return bounds;
}

int64_t ChooseAutoSeconds(const IterationLengthModel& model, AutoBounds bounds) {
  // Scanning every whole second: with autocorrelation the objective has no closed-form
  // minimum, and the bounds are small.
  int64_t best = bounds.min;
  double best_value = std::numeric_limits<double>::infinity();
  const int64_t last = std::min(bounds.max, bounds.min + 100000);
  for (int64_t s = bounds.min; s <= last; ++s) {
    const double v = VariancePerMachineSecond(model, static_cast<double>(s));
    if (v < best_value) {  // strict: the shorter length wins a tie
      best_value = v;
      best = s;
    }
  }
  return best;
}

absl::Status ResolveAutoParams(v1::RunSpec* spec) {
  for (int i = 0; i < spec->arms_size(); ++i) {
    for (const auto& [name, value] : spec->arms(i).params()) {
      if (name == kLengthParam && IsAutoValue(value)) {
        return FieldError(absl::StrCat("arms[", i, "].params.", name),
                          "auto belongs in the run's params: every arm must measure with the "
                          "same iteration length");
      }
    }
  }
  auto it = spec->mutable_params()->find(std::string(kLengthParam));
  if (it == spec->mutable_params()->end() || !IsAutoValue(it->second)) return absl::OkStatus();
  const std::string field = absl::StrCat("params.", kLengthParam);
  const catalogue::WorkloadSchema* workload = FindWorkload(spec->benchmark());
  if (workload == nullptr) return absl::OkStatus();  // ValidateRunSpec names the benchmark
  const catalogue::ParamSpec* param = workload->FindParam(kLengthParam);
  if (param == nullptr || param->type != catalogue::ParamType::kInt) {
    std::vector<std::string> known;
    for (const catalogue::ParamSpec& p : workload->Schema()) known.push_back(p.name);
    return FieldError(field, absl::StrCat("auto chooses the length of a workload that runs for "
                                          "a time; ",
                                          spec->benchmark(), " has no seconds parameter (known: ",
                                          absl::StrJoin(known, ", "), ")"));
  }
  const IterationLengthModel* model = FindIterationLengthModel(spec->benchmark());
  if (model == nullptr) {
    return FieldError(field, absl::StrCat("auto: no iteration-length model has been measured "
                                          "for ",
                                          spec->benchmark(),
                                          " (docs/iteration-length.md); give a number of "
                                          "seconds"));
  }
  absl::StatusOr<AutoBounds> bounds = ParseAutoBounds(it->second, field, param->min, param->max);
  if (!bounds.ok()) return bounds.status();
  (*spec->mutable_auto_params())[std::string(kLengthParam)] =
      absl::StrCat(kAuto, ":", bounds->min, "..", bounds->max);
  it->second = absl::StrCat(ChooseAutoSeconds(*model, *bounds));
  return absl::OkStatus();
}

absl::Status CheckAutoParamsRecord(const v1::RunSpec& spec) {
  const std::map<std::string, std::string> sorted(spec.auto_params().begin(),
                                                  spec.auto_params().end());
  for (const auto& [name, asked] : sorted) {
    const std::string field = absl::StrCat("auto_params.", name);
    if (name != kLengthParam) {
      return FieldError(field, "only seconds can be chosen by the controller");
    }
    auto it = spec.params().find(name);
    if (it == spec.params().end() || IsAutoValue(it->second)) {
      return FieldError(field, absl::StrCat("records a chosen ", name, " but params.", name,
                                            " holds no chosen value"));
    }
    absl::StatusOr<AutoBounds> bounds =
        ParseAutoBounds(asked, field, 1, std::numeric_limits<int32_t>::max());
    if (!bounds.ok()) return bounds.status();
  }
  return absl::OkStatus();
}

}  // namespace tlbfleet::scheduler
