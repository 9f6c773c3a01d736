#include "controller/report/export_otava.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/csv.h"
#include "common/json.h"
#include "controller/report/results_csv.h"

namespace tlbfleet::report {
namespace {

namespace v1 = tlbfleet::v1;

constexpr char kOtavaCsv[] = "tlbfleet.csv";

struct OtavaRow {
  int64_t time_ms = 0;
  std::string run, kernel, boot_entry, arm;
  std::map<size_t, double> values;  // column index -> estimate
};

std::string OtavaTime(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S +0000", absl::FromUnixMillis(unix_ms),
                          absl::UTCTimeZone());
}

}  // namespace

absl::StatusOr<std::vector<ExportFile>> ExportOtava(const std::vector<v1::Series>& series) {
  std::map<std::string, int> metric_count;
  for (const v1::Series& s : series) ++metric_count[s.key().metric()];
  std::vector<std::string> columns;
  for (const v1::Series& s : series) {
    columns.push_back(metric_count[s.key().metric()] > 1
                          ? absl::StrCat(s.key().metric(), "@", s.id())
                          : s.key().metric());
  }
  std::map<std::tuple<int64_t, std::string, std::string>, OtavaRow> rows;
  for (size_t c = 0; c < series.size(); ++c) {
    for (const v1::SeriesPoint& p : series[c].points()) {
      OtavaRow& row = rows[std::tuple(p.finished_unix_ms(), p.run_id(), p.arm())];
      row.time_ms = p.finished_unix_ms();
      row.run = p.run_id();
      row.arm = p.arm();
      if (row.kernel.empty()) row.kernel = p.kernel_release();
      if (row.boot_entry.empty()) row.boot_entry = p.boot_entry();
      row.values[c] = p.estimate();
    }
  }
  if (rows.empty()) {
    return absl::NotFoundError(series.empty() ? "series: no series chosen"
                                              : "series: the chosen series have no points yet");
  }
  std::vector<std::string> header = {"time", "run", "kernel", "boot_entry", "arm"};
  header.insert(header.end(), columns.begin(), columns.end());
  std::string csv = CsvRow(header);
  for (const auto& [key, row] : rows) {
    std::vector<std::string> fields = {OtavaTime(row.time_ms), row.run, row.kernel, row.boot_entry,
                                       row.arm};
    for (size_t c = 0; c < columns.size(); ++c) {
      auto it = row.values.find(c);
      fields.push_back(it == row.values.end() ? "" : FormatDouble(it->second));
    }
    csv += CsvRow(fields);
  }
  std::string yaml = absl::StrCat(
      "# Apache Otava: otava analyze tlbfleet (run where ", kOtavaCsv, " is)\n",
      "tests:\n  tlbfleet:\n    type: csv\n    file: ", kOtavaCsv,
      "\n    time_column: time\n    attributes: [run, kernel, boot_entry, arm]\n"
      "    csv_options:\n      delimiter: \",\"\n      quote_char: '\"'\n    metrics:\n");
  for (size_t c = 0; c < series.size(); ++c) {
    // Otava's direction: 1 when a rise is an improvement, -1 when a fall is.
    absl::StrAppend(&yaml, "      ", JsonQuote(columns[c]),
                    ":\n        direction: ", series[c].better() == v1::BETTER_LOWER ? -1 : 1,
                    "\n        scale: 1\n");
  }
  return std::vector<ExportFile>{{kOtavaCsv, csv}, {"otava.yaml", yaml}};
}

}  // namespace tlbfleet::report
