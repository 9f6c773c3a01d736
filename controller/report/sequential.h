#pragma once
// Sequentially valid verdicts for adaptive runs (AdaptiveSpec.stop = STOP_VERDICT): a run
// may stop as soon as every row has a verdict — better, worse, or `same` within the margin —
// and the error rate holds however many looks it took. docs/statistics.md#sequential-verdicts
// has the design, its reference and its calibration.
//
// The design: a group-sequential test with a Lan–DeMets alpha-spending function (Lan &
// DeMets 1983; O'Brien–Fleming-type by default) over the information fraction t = boots so
// far / boots.max (or, in a run whose iterations alone are adaptive, iterations so far /
// iterations.max). At a look with fraction t_k, whose previous look had t_{k-1}, each row is
// tested at alpha_k = (alpha(t_k) - alpha(t_{k-1})) / m, m the number of rows (Bonferroni
// across rows, which holds whenever each row stops): `better`/`worse` when the verdict's
// ratio test (stats/ratio_interval.h, the same t test as the fixed-sample verdict) has
// p < alpha_k, `same` when the TOST at the margin has p < alpha_k. The looks' levels add up
// to at most alpha = 1 - level, and the chance of any false verdict over every look is at
// most their sum (the union bound), whatever the correlation between looks and however few
// degrees of freedom the t tests have. That is conservative compared with exact boundaries
// from the joint normal distribution of the looks (Jennison & Turnbull 2000, ch. 7), which
// are anticonservative at the 1–10 degrees of freedom of boot units.
//
// Pure functions: the driver and `tlbfleet adaptive --from-csv` call them with the
// comparison of the samples so far.
//
// Rows that stop on their own (docs/statistics.md#rows-that-stop-on-their-own): the driver
// passes each look's rows back in, so a decided row keeps its verdict, and measures only the
// (sweep value, arm) that StillMeasured names. The Bonferroni split stays m, the number of
// all rows, at every look: a decided row spends nothing more, and the union bound holds
// whichever rows stop when.

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "controller/report/adaptive.h"
#include "controller/report/comparison.h"
#include "tlbfleet/v1/common.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::report {

enum class Spending { kOBrienFleming, kPocock };

// Lan–DeMets spending functions, two-sided: the error rate spent by information fraction t
// in [0, 1]. O'Brien–Fleming type: 2 - 2 Phi(z_{1 - alpha/2} / sqrt(t)) (spends almost
// nothing early, nearly alpha at the end); Pocock type: alpha ln(1 + (e - 1) t).
double SpentAlpha(Spending spending, double alpha, double t);

struct SequentialOptions {
  double alpha = 0.05;  // 1 - level
  double margin = 0.01;
  Spending spending = Spending::kOBrienFleming;
};

// The spec's sequential options with their defaults (level 0.95, margin 1 %, O'Brien–
// Fleming). INVALID_ARGUMENT naming the option ("adaptive.level: ...") for a level or margin
// outside (0, 1), sequential options without stop: verdict, stop: verdict without a maximum
// to spend over (neither boots nor iterations adaptive), or a maximum below the minimum.
absl::Status ValidateSequentialSpec(const v1::AdaptiveSpec& adaptive);
SequentialOptions SequentialOptionsOf(const v1::AdaptiveSpec& adaptive);

// Where a look lies: its information fraction and the previous look's (0 at the first look
// that can test). Looks are at every boot count (boots adaptive) or at the iteration counts
// min, 2 min, 4 min, ... max (iterations alone adaptive) — the schedule DecideSequential
// grows the run by; a look before any row can be tested (fewer than kMinBootsToSettle boots,
// or kMinIterationsToSettle iterations in a one-boot run) spends nothing.
struct LookFraction {
  double fraction = 0;
  double previous = 0;
};
LookFraction LookFractionOf(const v1::AdaptiveSpec& adaptive, const AdaptivePlan& plan);

// One row at one look. `rows` is m of the Bonferroni split; `several_boots` as in
// DecideAdaptive (a row then needs an across-boots test with 2 boots per arm).
RowOutcome DecideRowAtLook(const SequentialOptions& options, size_t rows, bool several_boots,
                           const GroupResult& group, size_t arm_index, const LookFraction& look);

// The run's decision for stop: verdict (DecideAdaptive calls it): stop when every row of
// the judged metrics is decided (rows in `earlier` marked decided keep their verdict), or
// at the maxima; otherwise add a boot (boots adaptive; the Kalibera–Jones iterations of the
// widest open row when iterations are adaptive too) or double the iterations of the one
// boot (iterations alone adaptive), never past the maximum.
AdaptiveDecision DecideSequential(const v1::AdaptiveSpec& adaptive,
                                  const std::vector<std::string>& metrics,
                                  const Comparison& comparison, const AdaptivePlan& plan,
                                  const std::vector<RowOutcome>& earlier);

// A (sweep value, arm) of a run: what gets jobs (param_name and param_value as the jobs and
// the comparison's groups have them; both empty without a sweep).
struct SweepArm {
  std::string param_name;
  std::string param_value;
  std::string arm;
  bool operator<(const SweepArm& o) const {
    return std::tie(param_name, param_value, arm) < std::tie(o.param_name, o.param_value, o.arm);
  }
  bool operator==(const SweepArm& o) const {
    return param_name == o.param_name && param_value == o.param_value && arm == o.arm;
  }
};

// The (sweep value, arm) still to measure after a look whose rows are `rows`
// (AdaptiveDecision.rows): every (sweep value, arm) of `comparison` (any metric) except an
// arm whose rows at that sweep value (every judged metric) are all decided, and the
// baseline at a sweep value where every arm's rows are decided. The baseline thus goes on
// while any row at its sweep value is open, and every open row's arm and baseline get the
// same new boots: the design of the open rows stays balanced.
std::set<SweepArm> StillMeasured(const std::vector<RowOutcome>& rows, const Comparison& comparison);

// A row as Run.adaptive_rows shows it and the store keeps it, and back. `measuring`: its
// (sweep value, arm) still gets jobs; `run_stopped`: the run has stopped (an open row then
// got no verdict by the maximum). AdaptiveRow.p is the p of the test that decided it: the
// TOST's for `same`, the ratio test's otherwise (and for open rows).
v1::AdaptiveRow ToAdaptiveRow(const RowOutcome& row, bool measuring, bool run_stopped);
RowOutcome FromAdaptiveRow(const v1::AdaptiveRow& row);

}  // namespace tlbfleet::report
