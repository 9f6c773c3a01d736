#include "controller/bisect/bisect_state.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tlbfleet::bisect {

absl::Status InvalidField(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

StepKind KindOfStep(const v1::BisectStep& step) {
  switch (step.kind()) {
    case v1::BISECT_STEP_VERIFY_PARENT:
      return StepKind::kVerifyParent;
    case v1::BISECT_STEP_VERIFY_REVERT:
      return StepKind::kVerifyRevert;
    default:
      return step.number() == 0 ? StepKind::kEndpointCheck : StepKind::kSearch;
  }
}

bool HasOpenStep(const v1::BisectState& state) {
  return !state.steps().empty() &&
         state.steps().rbegin()->verdict() == v1::BISECT_VERDICT_UNSPECIFIED;
}

uint32_t BootsSoFar(const v1::BisectStep& step) {
  uint32_t boots = 0;
  for (const v1::BisectRound& r : step.rounds()) boots += r.boots();
  return boots;
}

std::optional<NextAction> StoppedOrAwaiting(const v1::BisectState& state) {
  NextAction a;
  if (state.status() != v1::BISECT_RUNNING) return a;
  if (state.pending_run_id().empty()) return std::nullopt;
  a.kind = NextAction::Kind::kAwaitRun;
  a.run_id = state.pending_run_id();
  a.step = state.steps().rbegin()->number();
  return a;
}

absl::Status CheckMeasurementWanted(const v1::BisectState& state, const NextAction& next) {
  if (next.kind != NextAction::Kind::kDone && next.kind != NextAction::Kind::kAwaitRun) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("bisect ", state.id(), ": no measurement is wanted now (",
                   next.kind == NextAction::Kind::kAwaitRun
                       ? absl::StrCat("run ", next.run_id, " is pending")
                       : absl::StrCat("status ", BisectStatusName(state.status())),
                   ")"));
}

absl::Status CheckPendingRun(const v1::BisectState& state, absl::string_view run_id) {
  if (state.status() == v1::BISECT_RUNNING && state.pending_run_id() == run_id) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat("bisect ", state.id(), ": run ", run_id,
                                                    " is not the pending run ('",
                                                    state.pending_run_id(), "')"));
}

absl::Status CheckComparisonVerdict(const v1::BisectState& state, absl::string_view run_id,
                                    v1::BisectVerdict verdict) {
  if (verdict == v1::LIKE_GOOD || verdict == v1::LIKE_BAD || verdict == v1::CANT_TELL) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("bisect ", state.id(), ": the comparison of run ",
                                                 run_id, " returned no verdict (",
                                                 BisectVerdictName(verdict), ")"));
}

v1::BisectStep* AddStep(v1::BisectState* state, uint32_t number, std::string tested,
                        uint32_t tested_index) {
  v1::BisectStep* step = state->add_steps();
  step->set_number(number);
  step->set_tested(std::move(tested));
  step->set_tested_index(tested_index);
  step->set_good_index(state->good_index());
  step->set_bad_index(state->bad_index());
  return step;
}

void AddRound(v1::BisectState* state, std::string run_id, uint32_t boots) {
  v1::BisectRound* round = state->mutable_steps()->rbegin()->add_rounds();
  round->set_run_id(run_id);
  round->set_boots(boots);
  state->set_pending_run_id(std::move(run_id));
}

StepRequest RequestFor(const v1::BisectState& state, const v1::BisectStep& step) {
  StepRequest request;
  request.spec = &state.spec();
  request.step = step.number();
  request.kind = KindOfStep(step);
  request.good = state.spec().good();
  request.tested = step.tested();
  request.bad = state.spec().bad();
  for (const v1::BisectRound& r : step.rounds()) request.run_ids.push_back(r.run_id());
  request.boots_per_arm = BootsSoFar(step);
  return request;
}

bool AnotherRoundFits(const v1::BisectSpec& spec, uint32_t boots_so_far) {
  return boots_so_far + spec.boots_per_round() <= spec.max_boots_per_step();
}

absl::Status CheckStoredPendingRun(const v1::BisectState& state) {
  if (state.pending_run_id().empty()) return absl::OkStatus();
  const bool open = HasOpenStep(state) && !state.steps().rbegin()->rounds().empty() &&
                    state.steps().rbegin()->rounds().rbegin()->run_id() == state.pending_run_id();
  if (open) return absl::OkStatus();
  return InvalidField("pending_run_id", absl::StrCat("'", state.pending_run_id(),
                                                     "' is not the open step's last run"));
}

absl::Status FailPendingRun(v1::BisectState* state, absl::string_view run_id,
                            absl::string_view reason) {
  if (absl::Status s = CheckPendingRun(*state, run_id); !s.ok()) return s;
  state->set_status(v1::BISECT_FAILED);
  state->set_reason(absl::StrCat("step ", state->steps().rbegin()->number(), ": run ", run_id,
                                 " failed: ", reason));
  state->clear_pending_run_id();
  return absl::OkStatus();
}

void CancelBisection(v1::BisectState* state) {
  if (state->status() != v1::BISECT_RUNNING) return;
  state->set_status(v1::BISECT_CANCELLED);
  state->set_reason(
      state->pending_run_id().empty()
          ? "cancelled"
          : absl::StrCat("cancelled while run ", state->pending_run_id(), " was pending"));
  state->clear_pending_run_id();
}

std::string PctInterval(const v1::ChangeInterval& c) {
  return absl::StrFormat("%+.1f%% [%+.1f%%, %+.1f%%]", c.estimate(), c.low(), c.high());
}

}  // namespace tlbfleet::bisect
