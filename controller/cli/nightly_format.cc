#include "controller/cli/nightly_format.h"

#include "controller/bisect/bisection.h"
#include "controller/cli/format.h"
#include "fmt/format.h"

namespace tlbfleet::cli {
namespace {

std::string Part(const std::string& s) { return s.empty() ? "-" : s; }

std::string Percent(const tlbfleet::v1::ChangeInterval& c) {
  return fmt::format("{:+.1f}% [{:+.1f}%, {:+.1f}%]", c.estimate() * 100, c.low() * 100,
                     c.high() * 100);
}

}  // namespace

std::string SeriesKeyText(const tlbfleet::v1::SeriesKey& k) {
  return fmt::format("{}/{}/{}/{}/{}/{}", Part(k.microarch()), Part(k.boot_entry()),
                     Part(k.config()), Part(k.benchmark()), Part(k.param()), Part(k.metric()));
}

std::string RegressionStatusName(tlbfleet::v1::RegressionStatus status) {
  switch (status) {
    case tlbfleet::v1::REGRESSION_OPEN:
      return "open";
    case tlbfleet::v1::REGRESSION_ACKNOWLEDGED:
      return "acknowledged";
    case tlbfleet::v1::REGRESSION_FIXED:
      return "fixed";
    default:
      return "-";
  }
}

std::string FormatSchedulesTable(const tlbfleet::v1::ListSchedulesResponse& schedules) {
  TextTable table(
      {"ID", "NAME", "CRON (UTC)", "STATE", "NEXT", "RUNS", "LAST RUN", "ON REGRESSION"});
  table.SetAlign(0, TextTable::Align::kRight);
  table.SetAlign(5, TextTable::Align::kRight);
  for (const tlbfleet::v1::Schedule& s : schedules.schedules()) {
    const bool bisect =
        s.spec().on_regression().action() == tlbfleet::v1::OnRegression::ACTION_BISECT;
    table.AddRow(
        {s.id(), s.spec().name(), s.spec().cron(), s.paused() ? "paused" : "active",
         s.paused() ? "-" : FormatUnixTime(s.next_slot_unix()), std::to_string(s.runs()),
         Part(s.last_run_id()),
         !bisect ? std::string("alert")
         : s.spec().has_kernel()
             ? fmt::format("bisect (commits of {} {})", s.spec().kernel().source(),
                           s.spec().kernel().branch())
             : fmt::format("bisect ({} entries)", s.spec().on_regression().entries_size())});
  }
  return table.Render();
}

std::string FormatRegressionsTable(const tlbfleet::v1::ListRegressionsResponse& regressions) {
  TextTable table(
      {"ID", "STATUS", "SERIES", "CHANGE", "FIRST BAD", "LAST GOOD", "KERNELS", "NOTE"});
  table.SetAlign(0, TextTable::Align::kRight);
  for (const tlbfleet::v1::Regression& r : regressions.regressions()) {
    // Kernels built from source: the change lies in good..bad (short hashes, as git prints).
    const std::string kernels =
        !r.bad_commit().empty() ? fmt::format("{}..{}", Part(r.good_commit().substr(0, 12)),
                                              r.bad_commit().substr(0, 12))
        : r.good_kernel() == r.bad_kernel()
            ? Part(r.bad_kernel())
            : fmt::format("{} -> {}", Part(r.good_kernel()), Part(r.bad_kernel()));
    table.AddRow({r.id(), RegressionStatusName(r.status()), SeriesKeyText(r.series()),
                  (r.has_relative() ? Percent(r.relative()) : "-") +
                      (r.drift() ? fmt::format(" drift over {} nights", r.drift_points()) : ""),
                  fmt::format("run {}", r.first_bad_run()),
                  r.last_good_run().empty() ? "-" : fmt::format("run {}", r.last_good_run()),
                  kernels, Part(r.note())});
  }
  return table.Render();
}

std::string FormatBisectsTable(const tlbfleet::v1::ListBisectsResponse& bisects) {
  TextTable table({"ID", "STATUS", "OVER", "GOOD", "BAD", "STEPS", "RUN", "RESULT"});
  table.SetAlign(0, TextTable::Align::kRight);
  for (const tlbfleet::v1::BisectState& b : bisects.bisects()) {
    const std::string result = b.status() == tlbfleet::v1::BISECT_FOUND
                                   ? fmt::format("first bad: {}", b.first_bad())
                                   : Part(b.reason());
    // Over commits: the commits of good..bad, the revisions as the user wrote them.
    const bool commits = b.spec().has_commits();
    table.AddRow({b.id(), bisect::BisectStatusName(b.status()),
                  commits ? fmt::format("{} commits", b.spec().commits().range_size())
                          : fmt::format("{} entries", b.spec().entries_size()),
                  commits ? b.spec().commits().good_rev() : b.spec().good(),
                  commits ? b.spec().commits().bad_rev() : b.spec().bad(),
                  std::to_string(b.steps_size()), Part(b.pending_run_id()), result});
  }
  return table.Render();
}

std::string FormatSeriesTable(const tlbfleet::v1::ListSeriesResponse& series) {
  TextTable table({"ID", "SERIES", "POINTS", "LAST ESTIMATE", "LAST RUN"});
  table.SetAlign(0, TextTable::Align::kRight);
  table.SetAlign(2, TextTable::Align::kRight);
  for (const tlbfleet::v1::Series& s : series.series()) {
    std::string last = "-";
    std::string run = "-";
    if (s.points_size() > 0) {
      const tlbfleet::v1::SeriesPoint& p = *s.points().rbegin();
      last = fmt::format("{:.6g} [{:.6g}, {:.6g}]", p.estimate(), p.low(), p.high());
      run = p.run_id();
    }
    table.AddRow({s.id(), SeriesKeyText(s.key()), std::to_string(s.points_size()), last, run});
  }
  return table.Render();
}

}  // namespace tlbfleet::cli
