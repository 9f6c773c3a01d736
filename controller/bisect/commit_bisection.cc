#include "controller/bisect/commit_bisection.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "controller/bisect/bisect_state.h"

namespace tlbfleet::bisect {

namespace {

uint32_t RangeSize(const v1::BisectSpec& spec) {
  return static_cast<uint32_t>(spec.commits().range_size());
}

// The position of `hash`, or -1.
int PositionOf(const v1::BisectSpec& spec, absl::string_view hash) {
  if (hash == spec.good()) return 0;
  for (int i = 0; i < spec.commits().range_size(); ++i) {
    if (spec.commits().range(i).hash() == hash) return i + 1;
  }
  return -1;
}

absl::Status ValidateCommitSpec(const v1::BisectSpec& spec) {
  if (!spec.entries().empty()) {
    return InvalidField("entries", "a commit bisection lists commits.range, not boot entries");
  }
  if (spec.good().empty()) return InvalidField("good", "missing");
  if (spec.bad().empty()) return InvalidField("bad", "missing");
  if (spec.good() == spec.bad()) {
    return InvalidField("bad",
                        absl::StrCat("good and bad are the same commit '", spec.good(), "'"));
  }
  const auto& range = spec.commits().range();
  if (range.empty()) {
    return InvalidField("commits.range",
                        absl::StrCat("empty: no commit lies in ", spec.good(), "..", spec.bad(),
                                     " (is good an ancestor of bad?)"));
  }
  std::set<absl::string_view> seen;
  for (int i = 0; i < range.size(); ++i) {
    const std::string& hash = range[i].hash();
    const std::string field = absl::StrCat("commits.range[", i, "].hash");
    if (hash.empty()) return InvalidField(field, "empty");
    if (!seen.insert(hash).second) {
      return InvalidField(field, absl::StrCat("'", hash, "' appears twice"));
    }
    if (hash == spec.good()) {
      return InvalidField(
          "good", absl::StrCat("'", hash, "' is commits.range[", i, "]; good..bad excludes good"));
    }
  }
  if (range.rbegin()->hash() != spec.bad()) {
    const int position = PositionOf(spec, spec.bad());
    if (position > 0) {
      return InvalidField("bad", absl::StrCat("'", spec.bad(), "' is commits.range[", position - 1,
                                              "], not the last; good..bad ends with bad"));
    }
    return InvalidField("bad",
                        absl::StrCat("unknown commit '", spec.bad(), "': commits.range ends with '",
                                     range.rbegin()->hash(), "'"));
  }
  if (spec.max_boots_per_step() < spec.boots_per_round()) {
    return InvalidField("max_boots_per_step",
                        absl::StrCat(spec.max_boots_per_step(), " is less than boots_per_round (",
                                     spec.boots_per_round(), ")"));
  }
  return absl::OkStatus();
}

v1::BisectStepKind ProtoKind(StepKind kind) {
  switch (kind) {
    case StepKind::kVerifyParent:
      return v1::BISECT_STEP_VERIFY_PARENT;
    case StepKind::kVerifyRevert:
      return v1::BISECT_STEP_VERIFY_REVERT;
    default:
      return v1::BISECT_STEP_SEARCH;
  }
}

std::set<uint32_t> SkippedPositions(const v1::BisectState& state) {
  std::set<uint32_t> skipped;
  for (const v1::BisectStep& step : state.steps()) {
    if (step.kind() == v1::BISECT_STEP_SEARCH && step.verdict() == v1::SKIPPED) {
      skipped.insert(step.tested_index());
    }
  }
  return skipped;
}

// The untested, unskipped commit nearest the middle of (good, bad) by count — git's halving.
// Scanning from the older end and keeping the first of equals makes ties go to the older
// commit, so the picks alternate sides around the middle: m, m-1, m+1, m-2, ... (or m, m+1,
// m-1, ... when the middle falls between two commits).
std::optional<uint32_t> PickMidpoint(uint32_t good, uint32_t bad,
                                     const std::set<uint32_t>& skipped) {
  std::optional<uint32_t> best;
  uint32_t best_distance = 0;
  for (uint32_t p = good + 1; p < bad; ++p) {
    if (skipped.count(p) != 0) continue;
    const uint32_t twice = 2 * p;
    const uint32_t distance = twice > good + bad ? twice - (good + bad) : good + bad - twice;
    if (!best || distance < best_distance) {
      best = p;
      best_distance = distance;
    }
  }
  return best;
}

const v1::BisectStep* FindStep(const v1::BisectState& state, v1::BisectStepKind kind) {
  for (const v1::BisectStep& step : state.steps()) {
    if (step.kind() == kind) return &step;
  }
  return nullptr;
}

std::string LastSummary(const v1::BisectStep* step) {
  if (step == nullptr || step->rounds().empty()) return "";
  return step->rounds().rbegin()->comparison().summary();
}

// Which way bad differs from good, as the search measured it: the latest round that measured
// both references (the endpoint check's estimate, or a step's arms). A regression when nothing
// says otherwise, as in MakeStepComparator.
bool BadIsWorse(const v1::BisectState& state) {
  const v1::BisectSpec& spec = state.spec();
  std::optional<double> pct;
  for (const v1::BisectStep& step : state.steps()) {
    if (step.kind() != v1::BISECT_STEP_SEARCH) continue;
    for (const v1::BisectRound& round : step.rounds()) {
      const v1::BisectComparison& c = round.comparison();
      if (c.verdict() == v1::BISECT_VERDICT_UNSPECIFIED) continue;
      if (step.number() == 0) {
        pct = c.versus_good_pct().estimate();
        continue;
      }
      const v1::BisectArmFigures* good = nullptr;
      const v1::BisectArmFigures* bad = nullptr;
      for (const v1::BisectArmFigures& f : c.arms()) {
        if (f.entry() == spec.good()) good = &f;
        if (f.entry() == spec.bad()) bad = &f;
      }
      if (good != nullptr && bad != nullptr && good->mean() != 0) {
        pct = (bad->mean() / good->mean() - 1) * 100;
      }
    }
  }
  if (!pct || *pct == 0) return true;
  return spec.lower_is_better() ? *pct > 0 : *pct < 0;
}

}  // namespace

const std::string& CommitAt(const v1::BisectSpec& spec, uint32_t position) {
  return position == 0 ? spec.good() : spec.commits().range(static_cast<int>(position) - 1).hash();
}

absl::StatusOr<CommitBisection> CommitBisection::Start(std::string id, v1::BisectSpec spec) {
  if (id.empty()) return InvalidField("id", "missing");
  if (spec.boots_per_round() == 0) spec.set_boots_per_round(Bisection::kDefaultBootsPerRound);
  if (spec.max_boots_per_step() == 0) {
    spec.set_max_boots_per_step(
        std::max(Bisection::kDefaultMaxBootsPerStep, spec.boots_per_round()));
  }
  if (absl::Status s = ValidateCommitSpec(spec); !s.ok()) return s;
  v1::BisectState state;
  state.set_id(std::move(id));
  state.set_status(v1::BISECT_RUNNING);
  state.set_good_index(0);
  state.set_bad_index(RangeSize(spec));
  *state.mutable_spec() = std::move(spec);
  CommitBisection b(std::move(state));
  b.Settle();
  return b;
}

absl::StatusOr<CommitBisection> CommitBisection::Resume(v1::BisectState state) {
  if (state.id().empty()) return InvalidField("id", "missing");
  if (absl::Status s = ValidateCommitSpec(state.spec()); !s.ok()) return s;
  const v1::BisectSpec& spec = state.spec();
  if (spec.boots_per_round() == 0) return InvalidField("spec.boots_per_round", "0");
  if (state.status() == v1::BISECT_STATUS_UNSPECIFIED) return InvalidField("status", "unspecified");
  const uint32_t n = RangeSize(spec);
  if (!(state.good_index() < state.bad_index() && state.bad_index() <= n)) {
    return InvalidField("good_index",
                        absl::StrCat("bracket [", state.good_index(), ", ", state.bad_index(),
                                     "] does not fit ", n, " commits"));
  }
  for (int i = 0; i < state.steps_size(); ++i) {
    const v1::BisectStep& step = state.steps(i);
    const std::string field = absl::StrCat("steps[", i, "]");
    if (step.tested_index() > n || CommitAt(spec, step.tested_index()) != step.tested()) {
      return InvalidField(absl::StrCat(field, ".tested"), "does not match commits.range");
    }
    if (!v1::BisectStepKind_IsValid(step.kind())) {
      return InvalidField(absl::StrCat(field, ".kind"), absl::StrCat("unknown kind ", step.kind()));
    }
    if (step.verdict() == v1::SKIPPED) {
      if (step.number() == 0 || step.skip_reason().empty()) {
        return InvalidField(absl::StrCat(field, ".verdict"),
                            "a skip needs a reason, and not in step 0");
      }
    } else if (step.rounds().empty()) {
      return InvalidField(absl::StrCat(field, ".rounds"), "empty");
    }
    if (step.verdict() == v1::BISECT_VERDICT_UNSPECIFIED && i + 1 != state.steps_size()) {
      return InvalidField(absl::StrCat(field, ".verdict"), "an earlier step is still open");
    }
  }
  if (!state.first_bad().empty() && PositionOf(spec, state.first_bad()) <= 0) {
    return InvalidField("first_bad", absl::StrCat("unknown commit '", state.first_bad(), "'"));
  }
  if (absl::Status s = CheckStoredPendingRun(state); !s.ok()) return s;
  CommitBisection b(std::move(state));
  const bool step0_due = b.state_.steps().empty() && !spec.skip_endpoint_check();
  if (b.state_.status() == v1::BISECT_RUNNING && b.state_.first_bad().empty() && !b.HasOpenStep() &&
      !step0_due &&
      !PickMidpoint(b.state_.good_index(), b.state_.bad_index(), SkippedPositions(b.state_))) {
    return InvalidField("status", "running, but no commit is left to test in the bracket");
  }
  return b;
}

bool CommitBisection::HasOpenStep() const { return bisect::HasOpenStep(state_); }

uint32_t CommitBisection::NextStepNumber() const {
  if (!state_.steps().empty()) return state_.steps().rbegin()->number() + 1;
  return state_.spec().skip_endpoint_check() ? 1 : 0;
}

CommitBisection::Plan CommitBisection::NextPlan() const {
  const v1::BisectSpec& spec = state_.spec();
  if (state_.first_bad().empty()) {
    if (state_.steps().empty() && !spec.skip_endpoint_check()) {
      return {StepKind::kEndpointCheck, RangeSize(spec)};
    }
    // Settle() ends the search when no commit is left, and Resume() refuses a state without one.
    const std::optional<uint32_t> mid =
        PickMidpoint(state_.good_index(), state_.bad_index(), SkippedPositions(state_));
    return {StepKind::kSearch, mid.value_or(state_.bad_index())};
  }
  const uint32_t culprit = static_cast<uint32_t>(PositionOf(spec, state_.first_bad()));
  return {FindStep(state_, v1::BISECT_STEP_VERIFY_PARENT) == nullptr ? StepKind::kVerifyParent
                                                                     : StepKind::kVerifyRevert,
          culprit};
}

NextAction CommitBisection::ActionFor(const Plan& plan, uint32_t step) const {
  const v1::BisectSpec& spec = state_.spec();
  NextAction a;
  a.step = step;
  a.boots = spec.boots_per_round();
  switch (plan.kind) {
    case StepKind::kEndpointCheck:
      a.kind = NextAction::Kind::kMeasure;
      a.entries = {spec.good(), spec.bad()};
      break;
    case StepKind::kSearch:
      a.kind = NextAction::Kind::kMeasure;
      a.entries = {spec.good(), CommitAt(spec, plan.position), spec.bad()};
      break;
    case StepKind::kVerifyParent:
      a.kind = NextAction::Kind::kVerifyParent;
      a.entries = {CommitAt(spec, plan.position - 1), CommitAt(spec, plan.position)};
      break;
    case StepKind::kVerifyRevert:
      a.kind = NextAction::Kind::kVerifyRevert;
      a.entries = {spec.good(), spec.bad(), spec.bad()};
      a.revert = CommitAt(spec, plan.position);
      break;
  }
  return a;
}

NextAction CommitBisection::Next() const {
  if (std::optional<NextAction> waiting = StoppedOrAwaiting(state_)) return *waiting;
  if (HasOpenStep()) {
    const v1::BisectStep& open = *state_.steps().rbegin();
    return ActionFor({KindOfStep(open), open.tested_index()}, open.number());
  }
  return ActionFor(NextPlan(), NextStepNumber());
}

absl::Status CommitBisection::Submitted(std::string run_id) {
  const NextAction next = Next();
  if (absl::Status s = CheckMeasurementWanted(state_, next); !s.ok()) return s;
  if (run_id.empty()) return InvalidField("run_id", "empty");
  if (!HasOpenStep()) {
    // Once the culprit is found the bracket is (its parent, it): the parent check's arms.
    const Plan plan = NextPlan();
    AddStep(&state_, next.step, CommitAt(state_.spec(), plan.position), plan.position)
        ->set_kind(ProtoKind(plan.kind));
  }
  AddRound(&state_, std::move(run_id), next.boots);
  return absl::OkStatus();
}

absl::Status CommitBisection::Finished(std::string_view run_id_in, const StepComparator& compare) {
  const absl::string_view run_id(run_id_in.data(), run_id_in.size());
  if (absl::Status s = CheckPendingRun(state_, run_id); !s.ok()) return s;
  const v1::BisectSpec& spec = state_.spec();
  v1::BisectStep& step = *state_.mutable_steps()->rbegin();
  StepRequest request = RequestFor(state_, step);
  if (request.kind == StepKind::kVerifyParent) {
    request.good = CommitAt(spec, step.tested_index() - 1);
  } else if (request.kind == StepKind::kVerifyRevert) {
    request.tested = absl::StrCat("revert of ", step.tested());
  }
  request.bad_is_worse = BadIsWorse(state_);
  absl::StatusOr<v1::BisectComparison> comparison = compare(request);
  if (!comparison.ok()) return comparison.status();
  const v1::BisectVerdict verdict = comparison->verdict();
  if (absl::Status s = CheckComparisonVerdict(state_, run_id, verdict); !s.ok()) return s;
  *step.mutable_rounds()->rbegin()->mutable_comparison() = *std::move(comparison);
  state_.clear_pending_run_id();
  const std::string summary = step.rounds().rbegin()->comparison().summary();
  const std::string culprit = step.tested();
  const std::string parent = CommitAt(spec, step.tested_index() > 0 ? step.tested_index() - 1 : 0);

  if (verdict == v1::CANT_TELL) {
    if (AnotherRoundFits(spec, request.boots_per_arm)) {
      return absl::OkStatus();  // the step stays open: another round of boots
    }
    step.set_verdict(v1::CANT_TELL);
    const std::string after = absl::StrCat("after ", request.boots_per_arm, " boots per arm, ");
    switch (request.kind) {
      case StepKind::kEndpointCheck:
        state_.set_status(v1::BISECT_AMBIGUOUS);
        state_.set_reason(absl::StrCat(after, "bad ", spec.bad(),
                                       " could not be told apart from good ", spec.good(), " (",
                                       summary, ")"));
        break;
      case StepKind::kSearch:
        state_.set_status(v1::BISECT_AMBIGUOUS);
        state_.set_reason(absl::StrCat("step ", step.number(), ": ", after, culprit,
                                       " could not be told like good or like bad (", summary,
                                       "); the first bad commit is after ",
                                       CommitAt(spec, state_.good_index()), " and at or before ",
                                       CommitAt(spec, state_.bad_index())));
        break;
      case StepKind::kVerifyParent:
        Verified(v1::VERIFICATION_NOT_REPRODUCED,
                 absl::StrCat(after, culprit, " could not be told worse than its parent ", parent,
                              " (", summary, ")"));
        break;
      case StepKind::kVerifyRevert:
        Verified(v1::VERIFICATION_REVERT_DOES_NOT_FIX,
                 absl::StrCat(after, "bad with ", culprit,
                              " reverted could not be told like good (", summary, ")"));
        break;
    }
    return absl::OkStatus();
  }
  step.set_verdict(verdict);
  switch (request.kind) {
    case StepKind::kEndpointCheck:
      if (verdict == v1::LIKE_GOOD) {
        state_.set_status(v1::BISECT_NOT_REPRODUCED);
        state_.set_reason(absl::StrCat("bad ", spec.bad(), " measured like good ", spec.good(),
                                       " (", summary, ")"));
        return absl::OkStatus();
      }
      break;
    case StepKind::kSearch:
      if (verdict == v1::LIKE_GOOD) {
        state_.set_good_index(step.tested_index());
      } else {
        state_.set_bad_index(step.tested_index());
      }
      break;
    case StepKind::kVerifyParent:
      if (verdict == v1::LIKE_GOOD) {
        Verified(v1::VERIFICATION_NOT_REPRODUCED,
                 absl::StrCat(culprit, " did not measure worse than its parent ", parent,
                              " on fresh boots (", summary, ")"));
      }
      return absl::OkStatus();  // LIKE_BAD: the revert check is next
    case StepKind::kVerifyRevert:
      if (verdict == v1::LIKE_GOOD) {
        Verified(v1::VERIFICATION_CONFIRMED,
                 absl::StrCat(culprit, " is again worse than its parent ", parent, " (",
                              LastSummary(FindStep(state_, v1::BISECT_STEP_VERIFY_PARENT)),
                              "), and bad with it reverted measures like good (", summary, ")"));
      } else {
        Verified(v1::VERIFICATION_REVERT_DOES_NOT_FIX,
                 absl::StrCat("bad with ", culprit, " reverted measured like bad (", summary, ")"));
      }
      return absl::OkStatus();
  }
  Settle();
  return absl::OkStatus();
}

void CommitBisection::Settle() {
  if (state_.status() != v1::BISECT_RUNNING || !state_.first_bad().empty() || HasOpenStep()) {
    return;
  }
  if (state_.steps().empty() && !state_.spec().skip_endpoint_check()) return;  // step 0 first
  const uint32_t good = state_.good_index();
  const uint32_t bad = state_.bad_index();
  const std::set<uint32_t> skipped = SkippedPositions(state_);
  if (PickMidpoint(good, bad, skipped)) return;
  const v1::BisectSpec& spec = state_.spec();
  std::vector<std::string> candidates;
  for (uint32_t p = good + 1; p < bad; ++p) candidates.push_back(CommitAt(spec, p));
  if (candidates.empty()) {
    state_.set_first_bad(CommitAt(spec, bad));  // the verification is next
    return;
  }
  candidates.push_back(CommitAt(spec, bad));
  state_.set_status(v1::BISECT_ONE_OF);
  state_.set_reason(absl::StrCat("only skipped commits lie between the last good ",
                                 CommitAt(spec, good), " and the first bad ", CommitAt(spec, bad),
                                 ": the first bad commit is one of ",
                                 absl::StrJoin(candidates, " ")));
  for (std::string& c : candidates) state_.add_first_bad_candidates(std::move(c));
}

void CommitBisection::Verified(v1::BisectVerificationOutcome outcome, std::string reason) {
  state_.mutable_verification()->set_outcome(outcome);
  state_.mutable_verification()->set_reason(std::move(reason));
  state_.set_status(v1::BISECT_FOUND);
}

absl::Status CommitBisection::Skip(std::string_view commit_in, std::string_view reason_in) {
  const absl::string_view commit(commit_in.data(), commit_in.size());
  const absl::string_view reason(reason_in.data(), reason_in.size());
  if (state_.status() != v1::BISECT_RUNNING) {
    return absl::FailedPreconditionError(absl::StrCat("bisect ", state_.id(), ": it has stopped (",
                                                      BisectStatusName(state_.status()), ")"));
  }
  if (commit.empty()) return InvalidField("commit", "empty");
  if (reason.empty()) return InvalidField("reason", "empty: say why the commit cannot be tested");
  const v1::BisectSpec& spec = state_.spec();
  const int found = PositionOf(spec, commit);
  if (found < 0) {
    return InvalidField(
        "commit", absl::StrCat("unknown commit '", commit, "': neither good nor in ", spec.good(),
                               "..", spec.bad()));
  }
  const uint32_t position = static_cast<uint32_t>(found);
  if (!state_.first_bad().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("bisect ", state_.id(), ": the search is over (first bad ", state_.first_bad(),
                     "); a revert that cannot be tested is SkipRevertCheck()"));
  }
  if (position == 0 || position == RangeSize(spec)) {
    state_.set_status(v1::BISECT_FAILED);
    state_.set_reason(absl::StrCat(position == 0 ? "good " : "bad ", commit, " cannot be tested (",
                                   reason, "); it is measured in every step"));
    state_.clear_pending_run_id();
    return absl::OkStatus();
  }
  if (HasOpenStep()) {
    v1::BisectStep& open = *state_.mutable_steps()->rbegin();
    if (open.tested_index() != position) {
      return absl::FailedPreconditionError(absl::StrCat("bisect ", state_.id(), ": step ",
                                                        open.number(), " measures ", open.tested(),
                                                        "; only it can be skipped now"));
    }
    open.set_verdict(v1::SKIPPED);
    open.set_skip_reason(std::string(reason));
    state_.clear_pending_run_id();
  } else {
    if (state_.steps().empty() && !spec.skip_endpoint_check()) {
      return absl::FailedPreconditionError(
          absl::StrCat("bisect ", state_.id(), ": step 0 (bad against good) comes first"));
    }
    if (position <= state_.good_index() || position >= state_.bad_index()) {
      return absl::FailedPreconditionError(
          absl::StrCat("bisect ", state_.id(), ": ", commit, " (commit ", position,
                       ") is already known like ", position <= state_.good_index() ? "good" : "bad",
                       " (the bracket is (", state_.good_index(), ", ", state_.bad_index(), "])"));
    }
    if (SkippedPositions(state_).count(position) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("bisect ", state_.id(), ": ", commit, " is already skipped"));
    }
    v1::BisectStep* step = AddStep(&state_, NextStepNumber(), std::string(commit), position);
    step->set_verdict(v1::SKIPPED);
    step->set_skip_reason(std::string(reason));
  }
  Settle();
  return absl::OkStatus();
}

absl::Status CommitBisection::SkipRevertCheck(std::string_view reason_in) {
  const absl::string_view reason(reason_in.data(), reason_in.size());
  const NextAction next = Next();
  const bool revert_due = next.kind == NextAction::Kind::kVerifyRevert ||
                          (next.kind == NextAction::Kind::kAwaitRun &&
                           state_.steps().rbegin()->kind() == v1::BISECT_STEP_VERIFY_REVERT);
  if (!revert_due) {
    return absl::FailedPreconditionError(
        absl::StrCat("bisect ", state_.id(), ": no revert check is due"));
  }
  if (reason.empty()) return InvalidField("reason", "empty: say why the revert cannot be measured");
  if (HasOpenStep()) {
    v1::BisectStep& open = *state_.mutable_steps()->rbegin();
    open.set_verdict(v1::SKIPPED);
    open.set_skip_reason(std::string(reason));
    state_.clear_pending_run_id();
  }
  state_.mutable_verification()->set_revert_skipped(std::string(reason));
  const v1::BisectSpec& spec = state_.spec();
  const uint32_t culprit = static_cast<uint32_t>(PositionOf(spec, state_.first_bad()));
  Verified(v1::VERIFICATION_CONFIRMED,
           absl::StrCat(state_.first_bad(), " is again worse than its parent ",
                        CommitAt(spec, culprit - 1), " (",
                        LastSummary(FindStep(state_, v1::BISECT_STEP_VERIFY_PARENT)),
                        "); its revert was not measured: ", reason));
  return absl::OkStatus();
}

void CommitBisection::Cancel() { CancelBisection(&state_); }

absl::Status CommitBisection::RunFailed(std::string_view run_id_in, std::string_view reason_in) {
  const absl::string_view run_id(run_id_in.data(), run_id_in.size());
  const absl::string_view reason(reason_in.data(), reason_in.size());
  return FailPendingRun(&state_, run_id, reason);
}

}  // namespace tlbfleet::bisect
