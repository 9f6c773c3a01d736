#pragma once
// Text tables of the nightly commands (pure; nightly_format_test.cc).

#include <string>

#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::cli {

// ID NAME CRON(UTC) STATE NEXT RUNS LAST-RUN ON-REGRESSION
std::string FormatSchedulesTable(const tlbfleet::v1::ListSchedulesResponse& schedules);
// ID STATUS SERIES CHANGE FIRST-BAD LAST-GOOD KERNELS NOTE; CHANGE is the relative change of
// the series' means with its interval ("+20.1% [+19.8%, +20.4%]"), signed as the metric moves.
std::string FormatRegressionsTable(const tlbfleet::v1::ListRegressionsResponse& regressions);
// ID STATUS OVER ("8 entries", "16 commits") GOOD BAD STEPS RUN FIRST-BAD/REASON
std::string FormatBisectsTable(const tlbfleet::v1::ListBisectsResponse& bisects);
// ID SERIES POINTS LAST ESTIMATE [LOW, HIGH] LAST-RUN
std::string FormatSeriesTable(const tlbfleet::v1::ListSeriesResponse& series);
// "Sim/nightly/loops=1000/pipetest/-/usecs_per_op"
std::string SeriesKeyText(const tlbfleet::v1::SeriesKey& key);
// "open", "acknowledged", "fixed"
std::string RegressionStatusName(tlbfleet::v1::RegressionStatus status);

}  // namespace tlbfleet::cli
