#pragma once
// `seconds: auto` (docs/iteration-length.md): the controller chooses a workload's iteration
// length when it accepts a run, from a model measured per workload by
// tests/perf/iteration_length.py, as the whole number of seconds within the bounds that gives
// the most precision per second of machine time.
//
// The model. An iteration of nominal length L seconds takes wall(L) = (1 + c1) L + c0 seconds
// of the machine (c0, c1: start-up: exec, memory set-up, threads), and the coefficient of
// variation of its metric satisfies CoV(L)^2 = A / L + B: noise that averages out over the
// iteration (A) plus a floor that does not (B: what each iteration draws once, e.g. where its
// threads and pages land). Consecutive iterations are correlated: a slow drift of the host
// that outlasts one iteration gives a lag-1 autocorrelation r(L) = rho^L, rho being that of
// consecutive seconds, so short iterations share more of it. A mean over the iterations that
// fit in T seconds has a relative variance CoV(L)^2 wall(L) / T x (1 + r) / (1 - r) (the
// effective sample size of an AR(1) series), so the best L minimises
//   V(L) = CoV(L)^2 wall(L) (1 + r(L)) / (1 - r(L)).
// Without autocorrelation (rho = 0) its unbounded minimum is L* = sqrt(A c0 / (B (1 + c1)));
// autocorrelation moves it longer.
//
// The length is fixed from this model before any job runs, never from the run's own samples,
// so it cannot bias an estimate or a verdict: fixed and adaptive runs may both use it.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::scheduler {

// One workload's measured model (see above). Immutable data.
struct IterationLengthModel {
  std::string_view workload;
  std::string_view param;     // the workload's length parameter, in whole seconds
  double noise_per_second;    // A: CoV^2 x seconds of the noise that averages out
  double noise_floor;         // B: CoV^2 that a longer iteration does not reduce
  double startup_seconds;     // c0
  double startup_per_second;  // c1: start-up that grows with the length (0 for most)
  double lag1_per_second;     // rho: autocorrelation of consecutive seconds, in [0, 1)
  std::string_view measured;  // where and how the figures were measured, for messages
};

// The model of `workload`, or nullptr when none was measured.
const IterationLengthModel* FindIterationLengthModel(std::string_view workload);

// V(L) above: the relative variance of a mean over one second of machine time with
// iterations of `seconds` (> 0), autocorrelation included. Smaller is better.
double VariancePerMachineSecond(const IterationLengthModel& model, double seconds);

// `auto` without bounds chooses within [kAutoMinSeconds, kAutoMaxSeconds]: the lengths
// measured on these machines, and the seed mail's 10 s as the longest.
inline constexpr int64_t kAutoMinSeconds = 1;
inline constexpr int64_t kAutoMaxSeconds = 10;

struct AutoBounds {
  int64_t min = kAutoMinSeconds;
  int64_t max = kAutoMaxSeconds;
};

// Whether `value` asks for a chosen length: "auto" or "auto:..." (well formed or not).
bool IsAutoValue(const std::string& value);

// "auto" -> {1, 10}; "auto:LO..HI" -> {LO, HI}, whole seconds with param_min <= LO <= HI <=
// param_max. INVALID_ARGUMENT naming `field` otherwise.
absl::StatusOr<AutoBounds> ParseAutoBounds(const std::string& value, const std::string& field,
                                           int64_t param_min, int64_t param_max);

// The whole number of seconds in [bounds.min, bounds.max] that minimises
// VariancePerMachineSecond; the shorter one on a tie.
int64_t ChooseAutoSeconds(const IterationLengthModel& model, AutoBounds bounds);

// Replaces `seconds: auto[:LO..HI]` in spec->params() by the chosen whole number of seconds and
// records what was asked in spec->auto_params() ("seconds" -> "auto:1..10", bounds written
// out), so the stored spec shows both. A spec without auto is left as it is. INVALID_ARGUMENT
// naming the field: auto in an arm's params (every arm must measure the same length), on a
// workload without a `seconds` parameter or without a measured model, or with bad bounds.
// An unknown benchmark is left to ValidateRunSpec.
absl::Status ResolveAutoParams(v1::RunSpec* spec);

// For ValidateRunSpec: every auto_params entry names a parameter the run's params set to a
// value (not auto) and records a well-formed auto. INVALID_ARGUMENT naming
// "auto_params.<name>" otherwise.
absl::Status CheckAutoParamsRecord(const v1::RunSpec& spec);

}  // namespace tlbfleet::scheduler
