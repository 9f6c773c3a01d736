#pragma once
// Rows that stop on their own, simulated (docs/statistics.md#rows-that-stop-on-their-own):
// a stop: verdict run whose decided rows stop getting boots while the open ones go on,
// driven by the functions the controller's adaptive driver calls — DecideAdaptive with the
// previous look's rows, then StillMeasured for what gets the next boot — over data drawn
// from a known design (calibration::Simulate). Seeded: the same design and seed give the
// same runs everywhere. The calibration unit test (sequential_test.cc) asserts on it;
// tests/perf/sequential_calibration.cc prints its table.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/report/adaptive.h"
#include "controller/report/calibration.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

struct RowStoppingRun {
  // Per row (sweep value "0", "1", ...): its verdict and what it had used when decided, or
  // at the stop while open; decided_round is the look (0 = the first) of its decision.
  std::vector<RowOutcome> rows;
  size_t looks = 0;
  // Machine time in boots of one (sweep value, arm): what the run measured, and what it would
  // have measured growing every (sweep value, arm) until the same stop (the rows' verdicts
  // do not depend on it: a decided row keeps its verdict, an open row's data are the same).
  size_t boots_measured = 0;
  size_t boots_whole_run = 0;
};

// One simulated run: `noise` gives the boots' maximum (boots), iterations per boot, the
// noise and the number of rows; `changes[r]` is row r's true change (empty: noise.change
// for every row). `spec` is stop: verdict with boots adaptive (iterations fixed at
// noise.iterations). INVALID_ARGUMENT for a spec that does not grow boots or changes of the
// wrong size.
absl::StatusOr<RowStoppingRun> SimulateRowStopping(const calibration::Design& noise,
                                                   const std::vector<double>& changes,
                                                   const v1::AdaptiveSpec& spec, uint64_t seed,
                                                   int index);

}  // namespace tlbfleet::report
