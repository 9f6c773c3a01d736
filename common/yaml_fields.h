#pragma once
// The field helpers of every YAML document tlbfleet reads (run specs, nightly schedules, agent
// configs): one wording of errors, all naming the field path ("arms[0].params.threads: ..."),
// and one set of spellings a boolean accepts. So a run spec and a schedule refuse the same
// mistake with the same words, and `on`/`1` mean true in both.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

namespace tlbfleet::yaml_fields {

// INVALID_ARGUMENT "<path>: <what>".
absl::Status FieldError(absl::string_view path, absl::string_view what);

// `text` in double quotes, with C escapes so control characters stay visible.
std::string Quote(absl::string_view text);

// "<path>: must be an integer in [lo, hi], got <text>" (the shape ParamSpec::Check uses).
absl::Status RangeError(absl::string_view path, int64_t lo, int64_t hi, absl::string_view text);

// "<path>: unknown field (expected one of: a, b, c)".
absl::Status UnknownField(absl::string_view path, const std::vector<std::string>& known);

// A scalar's text; "value is missing" for an absent or null node, "expected a scalar value,
// got a map/list" otherwise.
absl::StatusOr<std::string> ScalarText(const YAML::Node& node, absl::string_view path);

// A decimal integer in [lo, hi], range-checked before any caller narrows it (a huge value
// must not wrap around into a valid-looking one).
absl::StatusOr<int64_t> ScalarInt(const YAML::Node& node, absl::string_view path, int64_t lo,
                                  int64_t hi);

// true/yes/on/1 or false/no/off/0: the spellings a workload boolean accepts (ParamSpec).
absl::StatusOr<bool> ScalarBool(const YAML::Node& node, absl::string_view path);

// A list of scalars; element errors name "<path>[i]".
absl::StatusOr<std::vector<std::string>> ScalarList(const YAML::Node& node, absl::string_view path);

}  // namespace tlbfleet::yaml_fields
