#pragma once
// The decision an adaptive run takes each time its plan so far is done: stop, add iterations
// to the latest boot, or add a boot. Pure: a comparison in, a decision out.
// See docs/statistics.md#adaptive-runs.
//
// The rows that must settle are, for each judged metric and sweep value, every arm against
// the baseline. A row is settled when both arms have at least 5 samples and its ratio CI
// half-width is at most the target, or its verdict is better, worse or same. (With fewer
// samples a bootstrap interval has too few distinct resamples to be trusted.) The run stops when
// every row is settled, or when the maxima leave nothing to add. Otherwise the widest unsettled row
// decides what to add: a boot when the run may add boots and either it may not add iterations, or
// between-boot variance is at least half of that row's variance (or still unknown, with one boot);
// else iterations, as many as the CI width suggests (n grows with the square of the
// shrink factor), at least one more and at most double, capped by the maximum.

#include <cstdint>
#include <string>
#include <vector>

#include "controller/report/comparison.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

struct AdaptivePlan {
  uint32_t iterations_per_boot = 0;
  uint32_t boots = 1;
};

struct AdaptiveDecision {
  enum class Action { kStop, kAddIterations, kAddBoot };
  Action action = Action::kStop;
  uint32_t iterations_per_boot = 0;  // kAddIterations: the new total per boot
  std::string reason;                // one sentence for people, stored with the run
};

// `metrics` are the judged metrics (AdaptiveSpec.metrics, or the workload's primary one).
AdaptiveDecision DecideAdaptive(const v1::AdaptiveSpec& adaptive,
                                const std::vector<std::string>& metrics,
                                const Comparison& comparison, const AdaptivePlan& plan);

}  // namespace tlbfleet::report
