#include "agent/runner/metric_line.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace tlbfleet::agent {
namespace {

using google::protobuf::Value;

const Value* Field(const google::protobuf::Struct& object, const char* name) {
  auto it = object.fields().find(name);
  return it == object.fields().end() ? nullptr : &it->second;
}

absl::Status Bad(std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("metric line: ", std::string(why)));
}

}  // namespace

absl::StatusOr<v1::Sample> ParseMetricLine(std::string_view line) {
  google::protobuf::Struct object;
  auto parsed = google::protobuf::util::JsonStringToMessage(std::string(line), &object);
  if (!parsed.ok()) return Bad(absl::StrCat("not a JSON object: ", parsed.ToString()));

  v1::Sample sample;
  const Value* metric = Field(object, "metric");
  if (metric == nullptr || metric->kind_case() != Value::kStringValue ||
      metric->string_value().empty()) {
    return Bad("\"metric\" missing or not a non-empty string");
  }
  sample.set_metric(metric->string_value());

  const Value* value = Field(object, "value");
  if (value == nullptr || value->kind_case() != Value::kNumberValue ||
      !std::isfinite(value->number_value())) {
    return Bad(absl::StrCat("\"value\" of ", sample.metric(), " missing or not a finite number"));
  }
  sample.set_value(value->number_value());

  if (const Value* unit = Field(object, "unit")) {
    if (unit->kind_case() != Value::kStringValue) return Bad("\"unit\" is not a string");
    sample.set_unit(unit->string_value());
  }
  if (const Value* series = Field(object, "series")) {
    if (series->kind_case() != Value::kStringValue) return Bad("\"series\" is not a string");
    sample.set_series(series->string_value());
  }
  if (const Value* better = Field(object, "better")) {
    if (better->kind_case() == Value::kStringValue && better->string_value() == "higher") {
      sample.set_better(v1::BETTER_HIGHER);
    } else if (better->kind_case() == Value::kStringValue && better->string_value() == "lower") {
      sample.set_better(v1::BETTER_LOWER);
    } else {
      return Bad("\"better\" is neither \"higher\" nor \"lower\"");
    }
  }
  return sample;
}

}  // namespace tlbfleet::agent
