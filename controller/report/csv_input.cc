// ParseObservationsCsv (declared in comparison.h): the offline input of `compare --from-csv`.

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/csv.h"
#include "controller/report/comparison.h"

namespace tlbfleet::report {
namespace {

constexpr const char* kColumns[] = {"arm", "boot", "param", "iteration", "metric", "value"};

}  // namespace

absl::StatusOr<std::vector<Observation>> ParseObservationsCsv(std::string_view text,
                                                              stats::Direction direction) {
  std::vector<Observation> out;
  std::map<std::string, size_t> column;
  bool have_header = false;
  absl::Status status = ForEachCsvRecord(
      text, CsvReadOptions{},
      [&](size_t line_number, const std::vector<std::string>& fields) -> absl::Status {
        if (!have_header) {
          for (size_t i = 0; i < fields.size(); ++i) column[absl::AsciiStrToLower(fields[i])] = i;
          for (const char* name : kColumns) {
            if (!column.contains(name)) {
              return absl::InvalidArgumentError(
                  absl::StrCat("line ", line_number, ": the header lacks column \"", name,
                               "\" (expected arm,boot,param,iteration,metric,value)"));
            }
          }
          have_header = true;
          return absl::OkStatus();
        }
        auto field = [&](const char* name) -> const std::string& { return fields[column[name]]; };
        for (const char* name : kColumns) {
          if (column[name] >= fields.size()) {
            return absl::InvalidArgumentError(absl::StrCat(
                "line ", line_number, ": ", fields.size(), " fields, no \"", name, "\""));
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
          return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": value \"",
                                                         field("value"), "\" is not a number"));
        }
        if (o.arm.empty() || o.metric.empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat("line ", line_number, ": arm and metric must not be empty"));
        }
        out.push_back(std::move(o));
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  if (!have_header) return absl::InvalidArgumentError("empty CSV: no header line");
  return out;
}

}  // namespace tlbfleet::report
