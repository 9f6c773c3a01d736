// ParseObservationsCsv (declared in comparison.h): the offline input of `compare --from-csv`.

#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/report/comparison.h"

namespace tlbfleet::report {
namespace {

std::string_view Trim(std::string_view s) {
  const char* kSpace = " \t\r";
  const size_t first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits one CSV line (RFC 4180 quoting, no embedded newlines). False on a stray quote.
bool SplitCsvLine(std::string_view line, std::vector<std::string>* fields) {
  fields->clear();
  std::string field;
  bool quoted = false;
  bool was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c != '"') {
        field += c;
      } else if (i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        quoted = false;
      }
    } else if (c == '"') {
      if (!field.empty() || was_quoted) return false;
      quoted = was_quoted = true;
    } else if (c == ',') {
      fields->push_back(was_quoted ? field : std::string(Trim(field)));
      field.clear();
      was_quoted = false;
    } else if (was_quoted) {
      if (c != ' ' && c != '\t') return false;
    } else {
      field += c;
    }
  }
  if (quoted) return false;
  fields->push_back(was_quoted ? field : std::string(Trim(field)));
  return true;
}

constexpr const char* kColumns[] = {"arm", "boot", "param", "iteration", "metric", "value"};

}  // namespace

absl::StatusOr<std::vector<Observation>> ParseObservationsCsv(std::string_view text,
                                                              stats::Direction direction) {
  std::vector<Observation> out;
  std::map<std::string, size_t> column;
  std::vector<std::string> fields;
  size_t line_number = 0;
  bool have_header = false;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (Trim(line).empty()) continue;
    if (!SplitCsvLine(line, &fields)) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": bad quoting"));
    }
    if (!have_header) {
      for (size_t i = 0; i < fields.size(); ++i) column[Lower(fields[i])] = i;
      for (const char* name : kColumns) {
        if (!column.contains(name)) {
          return absl::InvalidArgumentError(
              absl::StrCat("line ", line_number, ": the header lacks column \"", name,
                           "\" (expected arm,boot,param,iteration,metric,value)"));
        }
      }
      have_header = true;
      continue;
    }
    auto field = [&](const char* name) -> const std::string& { return fields[column[name]]; };
    for (const char* name : kColumns) {
      if (column[name] >= fields.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("line ", line_number, ": ", fields.size(), " fields, no \"", name, "\""));
      }
    }
    Observation o;
    o.arm = field("arm");
    o.boot = field("boot");
    const std::string& param = field("param");
    if (size_t eq = param.find('='); eq != std::string::npos) {
      o.param_name = param.substr(0, eq);
      o.param_value = param.substr(eq + 1);
    } else {
      o.param_value = param;
    }
    if (!field("iteration").empty() && !absl::SimpleAtoi(field("iteration"), &o.iteration)) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": iteration \"",
                                                     field("iteration"), "\" is not a number"));
    }
    o.metric = field("metric");
    o.direction = direction;
    if (!absl::SimpleAtod(field("value"), &o.value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": value \"", field("value"), "\" is not a number"));
    }
    if (o.arm.empty() || o.metric.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": arm and metric must not be empty"));
    }
    out.push_back(std::move(o));
  }
  if (!have_header) return absl::InvalidArgumentError("empty CSV: no header line");
  return out;
}

}  // namespace tlbfleet::report
