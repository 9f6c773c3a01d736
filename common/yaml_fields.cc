#include "common/yaml_fields.h"

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tlbfleet::yaml_fields {

absl::Status FieldError(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

std::string Quote(absl::string_view text) { return absl::StrCat("\"", absl::CEscape(text), "\""); }

absl::Status RangeError(absl::string_view path, int64_t lo, int64_t hi, absl::string_view text) {
  return FieldError(path,
                    absl::StrCat("must be an integer in [", lo, ", ", hi, "], got ", Quote(text)));
}

absl::Status UnknownField(absl::string_view path, const std::vector<std::string>& known) {
  return FieldError(
      path, absl::StrCat("unknown field (expected one of: ", absl::StrJoin(known, ", "), ")"));
}

absl::StatusOr<std::string> ScalarText(const YAML::Node& node, absl::string_view path) {
  if (!node.IsDefined() || node.IsNull()) return FieldError(path, "value is missing");
  if (!node.IsScalar()) {
    return FieldError(path, node.IsMap() ? "expected a scalar value, got a map"
                                         : "expected a scalar value, got a list");
  }
  return node.Scalar();
}

absl::StatusOr<int64_t> ScalarInt(const YAML::Node& node, absl::string_view path, int64_t lo,
                                  int64_t hi) {
  absl::StatusOr<std::string> text = ScalarText(node, path);
  if (!text.ok()) return text.status();
  int64_t value = 0;
  if (!absl::SimpleAtoi(*text, &value)) {
    return FieldError(path, absl::StrCat("expected an integer, got ", Quote(*text)));
  }
  if (value < lo || value > hi) return RangeError(path, lo, hi, *text);
  return value;
}

absl::StatusOr<bool> ScalarBool(const YAML::Node& node, absl::string_view path) {
  absl::StatusOr<std::string> text = ScalarText(node, path);
  if (!text.ok()) return text.status();
  if (*text == "true" || *text == "yes" || *text == "on" || *text == "1") return true;
  if (*text == "false" || *text == "no" || *text == "off" || *text == "0") return false;
  return FieldError(path, absl::StrCat("expected true or false, got ", Quote(*text)));
}

absl::StatusOr<std::vector<std::string>> ScalarList(const YAML::Node& node,
                                                    absl::string_view path) {
  if (!node.IsSequence()) return FieldError(path, "expected a list");
  std::vector<std::string> out;
  for (size_t i = 0; i < node.size(); ++i) {
    absl::StatusOr<std::string> s = ScalarText(node[i], absl::StrCat(path, "[", i, "]"));
    if (!s.ok()) return s.status();
    out.push_back(*s);
  }
  return out;
}

}  // namespace tlbfleet::yaml_fields
