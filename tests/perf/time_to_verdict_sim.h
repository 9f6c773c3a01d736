#pragma once
// The simulation behind tests/perf/time_to_verdict (issue 22, "The benchmark"): the seed mail's
// ebizzy comparison of two kernels at 8 thread counts, run by a protocol — mmtests' fixed
// count, today's precision-only adaptive run, or the sequential one with per-row stopping —
// through the project's real decision code: report::Compare for every verdict,
// report::DecideAdaptive for every adaptive look (with the previous look's rows passed back
// as `earlier` under stop: verdict). docs/performance.md#time-to-verdict-issue-22 has the
// results and where each noise figure comes from.
//
// The noise model, per thread count (row) and kernel (arm):
//   ln(value) = ln(mean) + boot effect + the mean of the iteration's seconds,
// where the boot effect is normal with sd `boot_sd`, one per (arm, boot, row): the two kernels
// never share a boot; and ln(records/s) over consecutive seconds of one boot is a stationary
// AR(1) series with sd `second_sd` and lag-1 autocorrelation `second_rho`, so an iteration of
// L seconds averages L of them and consecutive iterations are correlated. Deterministic: one
// seed gives the same runs on every machine. Boot effects are drawn per (run, row, arm, boot)
// and shared by every protocol of that run index (common random numbers: the fixed
// protocol's one boot per kernel is every adaptive protocol's first), iteration noise per
// protocol.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/report/adaptive.h"
#include "controller/report/comparison.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::time_to_verdict {

inline constexpr char kMetric[] = "records_per_sec";
inline constexpr char kBaseline[] = "vanilla";
inline constexpr char kOther[] = "altshift-v3";

struct RowModel {
  int threads = 1;
  double mean = 1000;  // the baseline's records/s
  double change = 0;   // true ratio of the other kernel's mean to the baseline's, - 1
  double second_sd = 0.03;
  double second_rho = 0;
};

struct World {
  uint64_t seed = 1;
  std::vector<RowModel> rows;
  double boot_sd = 0.01;
};

struct Costs {
  double boot_seconds = 10;       // one boot (reboot to the agent connected again)
  double iteration_overhead = 0;  // start-up of one iteration, beyond its length
};

struct Protocol {
  std::string name;
  bool adaptive = false;
  uint32_t seconds = 10;    // per iteration
  uint32_t iterations = 1;  // per boot, when iterations are not adaptive
  uint32_t boots = 1;       // per arm, when boots are not adaptive
  v1::AdaptiveSpec spec;    // adaptive only
  // stop: verdict: a decided row gets no more jobs (per-row stopping); false: every row is
  // measured until the run stops (what the driver did before per-row stopping).
  bool per_row_stop = true;
};

struct RowResult {
  report::Verdict verdict = report::Verdict::kUnknown;
  std::optional<double> ratio;  // the estimate the verdict came with
  double seconds = 0;           // iterations x (length + overhead), both arms, no boots
  size_t boots = 0;             // per arm, in the row's data at its verdict
  bool decided_early = false;   // sequential: decided before the run's maximum
  // Non-sequential protocols: the verdict of the same test and rule had it been given when
  // each kernel had one boot of its own — what mmtests' reader concludes from its table. The
  // project's verdict (`verdict`) is `unknown` then: the arms are confounded with their
  // boots (report/verdict.cc).
  report::Verdict verdict_ignoring_boots = report::Verdict::kUnknown;
};

struct RunResult {
  std::vector<RowResult> rows;  // in World.rows order
  uint32_t boots = 0;           // per arm: what the run booted
  double machine_seconds = 0;   // rows' seconds + 2 arms x boots x boot_seconds
  size_t looks = 0;
};

// Run `index` of `protocol` in `world`: the data the protocol asks for, look by look.
// INVALID_ARGUMENT naming the option for an inconsistent adaptive spec; Compare's errors.
absl::StatusOr<RunResult> RunProtocol(const World& world, const Protocol& protocol,
                                      const Costs& costs, int index);

// The observations run `index` of `protocol` would have measured with `iterations[row][boot]`
// iterations in each boot (both arms alike): exposed so a test can replay the same data.
std::vector<report::Observation> ObservationsOf(
    const World& world, const Protocol& protocol, int index,
    const std::vector<std::vector<uint32_t>>& iterations);

// The variance of the mean of ln(records/s) over `seconds` consecutive seconds of one boot
// (the AR(1) series above, started stationary): sd^2 / T^2 (T + 2 sum_k (T - k) rho^k).
double MeanOfSecondsVariance(const RowModel& row, uint32_t seconds);

// A lower bound on the machine time of every protocol: the least machine time in which any
// design — a boots per kernel, a number of seconds per boot for each row, chosen knowing the
// true changes and variances, judged once by a z-test at `level` (two-sided) with no
// adjustment across rows — reaches a mean power of at least `power` over the rows whose
// change is at least `min_change`. Generous to the design in every respect (known variances,
// one look, no multiplicity, no start-up per iteration, rows below `min_change` and null rows
// not measured at all), so no protocol the benchmark runs can need less; above the goal's
// 1/10, the goal cannot be met at this noise by any design. Machine time = 2 x boots x
// (boot cost + the seconds of every row).
struct TimeBound {
  double machine_seconds = 0;  // +inf when no design within `max_boots` boots reaches it
  uint32_t boots = 0;          // per kernel, at the minimum
};
TimeBound MinimumMachineTime(const World& world, const Costs& costs, double power, double level,
                             double min_change, uint32_t max_boots = 200,
                             uint32_t max_seconds_per_row = 2000);

}  // namespace tlbfleet::time_to_verdict
