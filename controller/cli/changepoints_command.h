#pragma once
// `tlbfleet changepoints --from-csv FILE [--format text|json]`: the nightly change-point
// detector (controller/stats/changepoint.h), offline, on any data. The CSV has the header
// `series,order,value` and optionally `low,high` (each point's interval); it prints, per
// series, every change point: the `order` of the first point after the change, the magnitude
// with its interval, and the p-value; every drift (a trend, with its slope and interval); and
// the AR(1) coefficient the detector assumed. Works without a controller.

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/stats/changepoint.h"
#include "tlbfleet/v1/nightly.pb.h"

namespace CLI {
class App;
}

namespace tlbfleet::cli {

// One series of the CSV, its points in `order`.
struct CsvSeries {
  std::string name;
  std::vector<std::string> orders;  // as written, for the report
  std::vector<stats::SeriesPoint> points;
};

// Parses the CSV (RFC 4180 quoting on one line; blank lines and lines starting with '#' are
// skipped). INVALID_ARGUMENT "line N: ..." naming the column on any malformed line: a missing
// or unknown column, a field count that differs from the header's, a value, order, low or
// high that is not a finite number, low without high, an interval that does not hold its
// value, an order repeated within a series, a series whose points do not all have (or all
// lack) an interval. Series come in the order of their first line; points sorted by order.
absl::StatusOr<std::vector<CsvSeries>> ParseChangePointCsv(std::string_view text);

// Runs the detector on every series. INVALID_ARGUMENT "series 'X': ..." from the detector.
// (The command itself refuses --min-segment above half a series' points first.)
absl::StatusOr<v1::ChangePointsReport> DetectInCsvSeries(const std::vector<CsvSeries>& series,
                                                         const stats::ChangePointOptions& options);

// The text rendering; `explain` adds every decision of the search.
std::string RenderChangePointsText(const v1::ChangePointsReport& report, bool explain);

// Registers the command on `app`; after app.parse(), Run() it when parsed().
class ChangepointsCommand {
 public:
  explicit ChangepointsCommand(CLI::App& app);
  bool parsed() const;
  // 0, or 2 (exit_codes.h) for an unreadable file, bad CSV or bad options.
  int Run(std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* command_;
  std::string file_;
  std::string format_ = "text";
  std::string test_ = "permutation";
  double max_p_ = 0;  // 0: the test's default
  int permutations_ = stats::ChangePointOptions{}.permutations;
  size_t min_segment_ = stats::ChangePointOptions{}.min_segment;
  uint64_t seed_ = stats::ChangePointOptions{}.seed;
  std::string serial_ = "ar1";
  size_t block_length_ = 0;  // given: --serial block
  bool no_drift_ = false;
  double drift_threshold_ = 0;
  bool explain_ = false;
};

}  // namespace tlbfleet::cli
