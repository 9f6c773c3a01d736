#include "catalogue/schema.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tlbfleet::catalogue {

namespace {

// Strict: optional '-' and decimal digits only, no spaces, no '+', no suffixes, so that a
// value means the same thing to every tool that reads the run spec.
std::optional<int64_t> ParseInt(std::string_view value) {
  int64_t out = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, out);
  if (ec != std::errc() || ptr != end || value.empty()) return std::nullopt;
  return out;
}

std::optional<bool> ParseBool(std::string_view value) {
  if (value == "true" || value == "yes" || value == "on" || value == "1") return true;
  if (value == "false" || value == "no" || value == "off" || value == "0") return false;
  return std::nullopt;
}

// Params are validated by ResolveParams, so a missing or malformed value here is a bug in
// the workload (asking for a parameter it does not declare), not a user error.
[[noreturn]] void ParamsBug(std::string_view what, std::string_view name) {
  std::fprintf(stderr, "tlbfleet: Params::%.*s(\"%.*s\"): no such validated parameter\n",
               static_cast<int>(what.size()), what.data(), static_cast<int>(name.size()),
               name.data());
  std::abort();
}

std::string Quoted(std::string_view value) { return absl::StrCat("\"", std::string(value), "\""); }

}  // namespace

absl::Status ParamSpec::Check(std::string_view value) const {
  switch (type) {
    case ParamType::kInt: {
      std::optional<int64_t> v = ParseInt(value);
      if (!v || *v < min || *v > max) {
        return absl::InvalidArgumentError(
            absl::StrCat("must be an integer in [", min, ", ", max, "], got ", Quoted(value)));
      }
      return absl::OkStatus();
    }
    case ParamType::kBool:
      if (!ParseBool(value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("must be a boolean (true/false/yes/no/on/off/1/0), got ", Quoted(value)));
      }
      return absl::OkStatus();
    case ParamType::kEnum:
      for (const std::string& choice : choices) {
        if (choice == value) return absl::OkStatus();
      }
      return absl::InvalidArgumentError(
          absl::StrCat("must be one of ", absl::StrJoin(choices, "|"), ", got ", Quoted(value)));
    case ParamType::kString:
      if (canonical) {
        absl::StatusOr<std::string> c = canonical(value);
        if (!c.ok()) return c.status();
      }
      return absl::OkStatus();
  }
  return absl::InternalError("unknown parameter type");
}

int64_t Params::Int(std::string_view name) const {
  auto it = values_.find(std::string(name));
  if (it == values_.end()) ParamsBug("Int", name);
  std::optional<int64_t> v = ParseInt(it->second);
  if (!v) ParamsBug("Int", name);
  return *v;
}

bool Params::Bool(std::string_view name) const {
  auto it = values_.find(std::string(name));
  if (it == values_.end()) ParamsBug("Bool", name);
  std::optional<bool> v = ParseBool(it->second);
  if (!v) ParamsBug("Bool", name);
  return *v;
}

const std::string& Params::Str(std::string_view name) const {
  auto it = values_.find(std::string(name));
  if (it == values_.end()) ParamsBug("Str", name);
  return it->second;
}

const ParamSpec* WorkloadSchema::FindParam(std::string_view name) const {
  for (const ParamSpec& spec : Schema()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

absl::Status WorkloadSchema::CheckCombination(const Params& params) const {
  return absl::OkStatus();
}

std::vector<std::string> WorkloadSchema::MmtestsNames() const { return {}; }

void WorkloadSchema::FromMmtests(const std::string& mmtest, MmtestsConfig& config,
                                 MmtestsSpec* spec) const {}

std::string PolicySweep(const std::string& param, const std::string& policy,
                        const std::optional<std::string>& min,
                        const std::optional<std::string>& max) {
  std::string out = absl::StrCat("{", param, ": {policy: ", policy);
  if (min.has_value()) absl::StrAppend(&out, ", min: ", *min);
  if (max.has_value()) absl::StrAppend(&out, ", max: ", *max);
  return out + "}}";
}

const MetricSpec* WorkloadSchema::FindMetric(std::string_view name) const {
  for (const MetricSpec& spec : Metrics()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const std::vector<ClassicFlag>& WorkloadSchema::ClassicFlags() const {
  static const std::vector<ClassicFlag> kNone;
  return kNone;
}

absl::StatusOr<Params> ResolveParams(const WorkloadSchema& workload,
                                     const std::map<std::string, std::string>& given) {
  std::map<std::string, std::string> values;
  for (const auto& [name, value] : given) {
    const ParamSpec* spec = workload.FindParam(name);
    if (spec == nullptr) {
      std::vector<std::string> known;
      for (const ParamSpec& s : workload.Schema()) known.push_back(s.name);
      return absl::InvalidArgumentError(absl::StrCat(name, ": unknown parameter for ",
                                                     std::string(workload.Name()),
                                                     " (known: ", absl::StrJoin(known, ", "), ")"));
    }
    if (absl::Status s = spec->Check(value); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": ", s.message()));
    }
    switch (spec->type) {
      case ParamType::kInt:
        values[name] = absl::StrCat(*ParseInt(value));
        break;
      case ParamType::kBool:
        values[name] = *ParseBool(value) ? "true" : "false";
        break;
      case ParamType::kEnum:
        values[name] = value;
        break;
      case ParamType::kString:
        values[name] = spec->canonical ? *spec->canonical(value) : value;
        break;
    }
  }
  for (const ParamSpec& spec : workload.Schema()) {
    if (!values.contains(spec.name)) {
      std::string value = spec.default_value;
      if (spec.type == ParamType::kBool)
        value = ParseBool(value).value_or(false) ? "true" : "false";
      values[spec.name] = std::move(value);
    }
  }
  Params params(std::move(values));
  if (absl::Status s = workload.CheckCombination(params); !s.ok()) return s;
  return params;
}

ParamSpec IntParam(std::string name, std::string def, int64_t min, int64_t max, std::string help) {
  return {std::move(name), ParamType::kInt, std::move(def), min, max, {}, std::move(help)};
}

ParamSpec BoolParam(std::string name, std::string help) {
  return {std::move(name), ParamType::kBool, "false", 0, 0, {}, std::move(help)};
}

ParamSpec EnumParam(std::string name, std::string def, std::vector<std::string> choices,
                    std::string help) {
  return {std::move(name),    ParamType::kEnum, std::move(def), 0, 0,
          std::move(choices), std::move(help)};
}

ParamSpec StringParam(std::string name, std::string def, StringCanonicalizer canonical,
                      std::string help) {
  ParamSpec spec;
  spec.name = std::move(name);
  spec.type = ParamType::kString;
  spec.default_value = std::move(def);
  spec.help = std::move(help);
  spec.canonical = std::move(canonical);
  return spec;
}

}  // namespace tlbfleet::catalogue
