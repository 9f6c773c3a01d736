#pragma once
// What Bisection (boot entries) and CommitBisection (commits) do alike to a v1::BisectState:
// the run bookkeeping of a step (one pending run at a time, rounds of boots), stopping, and
// the checks a stored state and a comparison's answer must pass. Each returns the error the
// machines return, naming the bisection.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "controller/bisect/bisection.h"
#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::bisect {

// "+1.2% [-0.3%, +2.8%]": a change and its interval, as reports and logs print it.
std::string PctInterval(const v1::ChangeInterval& c);

// INVALID_ARGUMENT "field: what".
absl::Status InvalidField(absl::string_view field, absl::string_view what);

// What a stored step measured: its kind, and for a search step whether it is step 0.
StepKind KindOfStep(const v1::BisectStep& step);
// The last step has no verdict yet.
bool HasOpenStep(const v1::BisectState& state);
// Boots per arm over the step's rounds.
uint32_t BootsSoFar(const v1::BisectStep& step);

// Next() of a bisection that has stopped (kDone) or awaits its pending run (kAwaitRun);
// nullopt when it wants a measurement.
std::optional<NextAction> StoppedOrAwaiting(const v1::BisectState& state);
// FAILED_PRECONDITION unless `next` asks for a measurement (Submitted() is then wrong).
absl::Status CheckMeasurementWanted(const v1::BisectState& state, const NextAction& next);
// FAILED_PRECONDITION unless the bisection runs and `run_id` is its pending run.
absl::Status CheckPendingRun(const v1::BisectState& state, absl::string_view run_id);
// INVALID_ARGUMENT unless a comparison's verdict is LIKE_GOOD, LIKE_BAD or CANT_TELL.
absl::Status CheckComparisonVerdict(const v1::BisectState& state, absl::string_view run_id,
                                    v1::BisectVerdict verdict);
// Appends a step testing `tested` (at `tested_index`) with the current bracket; no verdict yet.
v1::BisectStep* AddStep(v1::BisectState* state, uint32_t number, std::string tested,
                        uint32_t tested_index);
// Adds a round of `boots` per arm, run `run_id`, to the open step, and makes it pending.
void AddRound(v1::BisectState* state, std::string run_id, uint32_t boots);
// What the comparison of `step` gets: its kind, good, tested (as stored) and bad, its runs.
StepRequest RequestFor(const v1::BisectState& state, const v1::BisectStep& step);
// A step whose rounds came to `boots_so_far` per arm may have another round.
bool AnotherRoundFits(const v1::BisectSpec& spec, uint32_t boots_so_far);
// Resume(): INVALID_ARGUMENT unless a pending run is the open step's last round.
absl::Status CheckStoredPendingRun(const v1::BisectState& state);

// Stops the bisection as FAILED: the pending run `run_id` failed for `reason`.
// FAILED_PRECONDITION (CheckPendingRun) when `run_id` is not pending; nothing changes then.
absl::Status FailPendingRun(v1::BisectState* state, absl::string_view run_id,
                            absl::string_view reason);
// Stops a running bisection as CANCELLED; a stopped one stays as it is.
void CancelBisection(v1::BisectState* state);

}  // namespace tlbfleet::bisect
