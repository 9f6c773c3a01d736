#pragma once
// The decision an adaptive run takes each time its plan so far is done: stop, add iterations
// to the latest boot, or add a boot. Pure: the run's adaptive spec, the judged metrics, the
// comparison of its samples (report::Compare with default options) and the plan so far in;
// a decision out. The controller's adaptive driver calls it and applies the decision
// (store::ExtendRun / FinishAdaptiveRun). See docs/statistics.md#adaptive-runs.
//
// stop: precision (the default) is described here; stop: verdict (sequentially valid
// verdicts with alpha spending) is controller/report/sequential.h.
//
// Stopping on precision never stops on the verdict: a row is settled when its ratio's
// interval (the verdict's t interval, stats/ratio_interval.h) is within target_ci with 80 %
// confidence (kStopConfidence) and it has enough units — at least 2 boots per arm when the
// run has or may have several boots (the interval must include boot-to-boot variance), else
// at least 10 iterations per arm. The half-width depends on the spread of the data, not on
// where the ratio lies, so the verdict taken after stopping keeps (nearly) its error rate;
// stopping when a verdict looks settled would not (optional stopping). "With 80 %
// confidence": the half-width is widened to what an 80 % upper bound of the units' variance
// would give, and never narrower than the iteration noise inside each boot implies — at the
// few degrees of freedom an adaptive run starts with, the sample variance is often low by
// chance, and stopping at such a moment leaves the final interval too short
// (docs/statistics.md#adaptive-runs has the simulation). The run stops when every row of the
// judged metrics (every arm against the baseline at every sweep value) is settled, or when
// the maxima leave nothing to add.
//
// Otherwise, in a run whose boots may grow, the next step is a boot: iterations can only be
// added to the boot a host is on, so growing boots keeps them even. The new boot gets the
// Kalibera–Jones optimum r1* of the widest unsettled row (RepetitionAdvice, clamped to the
// iterations' min..max) when iterations are adaptive, else the current count. When boots
// may not grow, iterations are added to the latest boot, as many as the half-width suggests
// (n grows with the square of the shrink factor), at least one more and at most double,
// capped by the maximum.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "controller/report/comparison.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

struct AdaptivePlan {
  uint32_t iterations_per_boot = 0;  // of the latest boot
  uint32_t boots = 1;
};

// One row's sequential verdict (stop: verdict only; docs/statistics.md#sequential-verdicts).
// A row decided at one look keeps its verdict at every later look: pass the previous
// decision's rows back in (DecideAdaptive's `earlier`), which is what lets a caller stop
// measuring that row (per-row stopping) while the others go on.
struct RowOutcome {
  std::string metric;
  std::string param_name;
  std::string param_value;
  std::string arm;
  std::string label;  // "ops_per_sec threads=4, arm fast"
  // better/worse/same once decided; kUnknown while open (or never decided by the maximum).
  Verdict verdict = Verdict::kUnknown;
  bool decided = false;
  // What the row had used at its decision (or at this look while open): per arm.
  size_t base_boots = 0, arm_boots = 0;
  size_t base_samples = 0, arm_samples = 0;
  std::optional<double> ratio;  // the estimate then (see docs: conditionally biased)
  std::optional<double> p, same_p;
  // This look's information fraction and the row's level for it (Bonferroni share of the
  // spending function's increment); 0 when the row could not be tested at this look.
  double information = 0;
  double look_alpha = 0;
  // The caller's round of the look that decided it (the driver's adaptive_rounds then); kept
  // with the verdict. DecideSequential leaves it 0.
  uint32_t decided_round = 0;
};

struct AdaptiveDecision {
  enum class Action { kStop, kAddIterations, kAddBoot };
  Action action = Action::kStop;
  // kAddIterations: the new total of the latest boot. kAddBoot: the new boot's iterations
  // (what later boots get too).
  uint32_t iterations_per_boot = 0;
  std::string reason;  // one sentence for people, stored with the run
  // stop: verdict: every row's state at this look (empty in stop: precision).
  std::vector<RowOutcome> rows;
};

// A row needs this many iterations per arm to settle in a one-boot run (from fewer, a
// sample variance low by chance stops too many runs early), and this many boots per arm in
// a run with several boots.
inline constexpr size_t kMinIterationsToSettle = 10;
inline constexpr size_t kMinBootsToSettle = 2;
// The confidence with which a settled row's interval is within the target (see .cc).
inline constexpr double kStopConfidence = 0.8;

// `metrics` are the judged metrics (AdaptiveSpec.metrics, or the workload's primary one).
// adaptive.stop() == STOP_VERDICT: the sequential rule (controller/report/sequential.h),
// with `earlier` the previous look's rows (nullptr or empty at the first look; a stateless
// caller may always pass nullptr: the error rate holds, rows are only re-tested).
AdaptiveDecision DecideAdaptive(const v1::AdaptiveSpec& adaptive,
                                const std::vector<std::string>& metrics,
                                const Comparison& comparison, const AdaptivePlan& plan,
                                const std::vector<RowOutcome>* earlier = nullptr);

}  // namespace tlbfleet::report
