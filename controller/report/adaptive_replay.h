#pragma once
// `tlbfleet adaptive --from-csv`: replays the adaptive decision code (DecideAdaptive and, for
// stop: verdict, the sequential rule of sequential.h — the functions the controller's driver
// calls, not a copy) over samples measured before, to show what an adaptive run would have
// measured and concluded. docs/statistics.md#replaying-an-adaptive-run.
//
// The samples are the rows of `compare --from-csv` (arm, boot, param, iteration, metric,
// value). Boots are taken in the order of the number their name ends with ("b0", "boot-3",
// "7"), per arm; iterations in the order of their number, which within each boot, sweep
// value and metric must run without gaps or repeats from 0 or 1. The replay starts where the
// driver starts (each adaptive level at its min, fixed levels at their count), and after
// each look takes what the decision asks for next: the next boot of every arm with the
// decided number of iterations (its first iterations), or more iterations of the latest
// boot — exactly the samples the driver would have had. With stop: verdict, a (sweep value,
// arm) that StillMeasured (sequential.h) drops after a look takes nothing more, as the
// driver measures it no more (rows that stop on their own). The CSV needs only the samples
// the looks ask for: a run that stopped early replays from its own stored samples.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/report/adaptive.h"
#include "controller/report/comparison.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

struct ReplayOptions {
  // stop, level, margin, spending, target_ci, the adaptive levels' min..max and the judged
  // metrics (empty: every metric of the CSV).
  v1::AdaptiveSpec adaptive;
  uint32_t iterations = 1;  // per boot, when iterations are not adaptive
  uint32_t boots = 1;       // per arm, when boots are not adaptive
  std::string baseline;     // empty: the CSV's first arm
};

struct ReplayLook {
  AdaptivePlan plan;
  size_t samples = 0;  // observations the comparison of this look had (every arm, metric)
  AdaptiveDecision decision;
};

struct ReplayResult {
  std::vector<ReplayLook> looks;
  // Per row of the judged metrics: stop: verdict — its sequential verdict and what it had
  // used when decided (or at the stop); stop: precision — the fixed-sample verdict of the
  // comparison at the stop (what the run's report says) and what the run used.
  std::vector<RowOutcome> rows;
  bool sequential = false;
  size_t samples_used = 0;       // at the stop
  size_t samples_available = 0;  // in the CSV, of the compared arms
};

// INVALID_ARGUMENT naming the line for a malformed CSV (ParseObservationsCsv's errors), a
// boot whose name does not end in a number or shares its number with another boot of the
// arm, an iteration repeated or after a gap, or too few boots or iterations for what a look
// asks for (naming the look, the option and the line of the last sample there is); naming
// the option for
// inconsistent options (ValidateSequentialSpec; stop: precision without target_ci).
absl::StatusOr<ReplayResult> ReplayAdaptiveCsv(std::string_view csv, stats::Direction direction,
                                               const ReplayOptions& options);

// The same over observations (tests, simulations): `lines[i]` is observation i's line for
// messages; empty: i + 2 (as if after a header line).
absl::StatusOr<ReplayResult> ReplayAdaptive(const std::vector<Observation>& observations,
                                            std::vector<size_t> lines,
                                            const ReplayOptions& options);

std::string RenderReplayText(const ReplayResult& result);
std::string RenderReplayJson(const ReplayResult& result);

}  // namespace tlbfleet::report
