#include "controller/bisect/bisection.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tlbfleet::bisect {

namespace {

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

// Index of `name` in the spec's entries, or -1.
int IndexOf(const v1::BisectSpec& spec, absl::string_view name) {
  for (int i = 0; i < spec.entries_size(); ++i) {
    if (spec.entries(i) == name) return i;
  }
  return -1;
}

absl::Status ValidateSpec(const v1::BisectSpec& spec) {
  if (spec.entries().empty()) return Invalid("entries", "at least two boot entries are needed");
  std::set<absl::string_view> seen;
  for (int i = 0; i < spec.entries_size(); ++i) {
    if (spec.entries(i).empty()) return Invalid(absl::StrCat("entries[", i, "]"), "empty name");
    if (!seen.insert(spec.entries(i)).second) {
      return Invalid(absl::StrCat("entries[", i, "]"),
                     absl::StrCat("'", spec.entries(i), "' appears twice"));
    }
  }
  if (spec.good().empty()) return Invalid("good", "missing");
  if (spec.bad().empty()) return Invalid("bad", "missing");
  const int good = IndexOf(spec, spec.good());
  const int bad = IndexOf(spec, spec.bad());
  if (good < 0) return Invalid("good", absl::StrCat("unknown entry '", spec.good(), "'"));
  if (bad < 0) return Invalid("bad", absl::StrCat("unknown entry '", spec.bad(), "'"));
  if (good == bad) {
    return Invalid("bad", absl::StrCat("good and bad are the same entry '", spec.good(), "'"));
  }
  if (good > bad) {
    return Invalid(
        "bad", absl::StrCat("'", spec.bad(), "' (entry ", bad, ") comes before good '", spec.good(),
                            "' (entry ", good, "); entries are listed oldest first"));
  }
  if (spec.max_boots_per_step() < spec.boots_per_round()) {
    return Invalid("max_boots_per_step",
                   absl::StrCat(spec.max_boots_per_step(), " is less than boots_per_round (",
                                spec.boots_per_round(), ")"));
  }
  return absl::OkStatus();
}

uint32_t BootsSoFar(const v1::BisectStep& step) {
  uint32_t boots = 0;
  for (const v1::BisectRound& r : step.rounds()) boots += r.boots();
  return boots;
}

}  // namespace

absl::StatusOr<Bisection> Bisection::Start(std::string id, v1::BisectSpec spec) {
  if (id.empty()) return Invalid("id", "missing");
  if (spec.boots_per_round() == 0) spec.set_boots_per_round(kDefaultBootsPerRound);
  if (spec.max_boots_per_step() == 0) {
    spec.set_max_boots_per_step(std::max(kDefaultMaxBootsPerStep, spec.boots_per_round()));
  }
  if (absl::Status s = ValidateSpec(spec); !s.ok()) return s;
  v1::BisectState state;
  state.set_id(std::move(id));
  state.set_status(v1::BISECT_RUNNING);
  state.set_good_index(static_cast<uint32_t>(IndexOf(spec, spec.good())));
  state.set_bad_index(static_cast<uint32_t>(IndexOf(spec, spec.bad())));
  *state.mutable_spec() = std::move(spec);
  Bisection b(std::move(state));
  if (b.state_.spec().skip_endpoint_check()) b.CheckFound();
  return b;
}

absl::StatusOr<Bisection> Bisection::Resume(v1::BisectState state) {
  if (state.id().empty()) return Invalid("id", "missing");
  if (absl::Status s = ValidateSpec(state.spec()); !s.ok()) return s;
  if (state.spec().boots_per_round() == 0) return Invalid("spec.boots_per_round", "0");
  const uint32_t n = static_cast<uint32_t>(state.spec().entries_size());
  if (state.status() == v1::BISECT_STATUS_UNSPECIFIED) return Invalid("status", "unspecified");
  if (!(state.good_index() < state.bad_index() && state.bad_index() < n)) {
    return Invalid("good_index", absl::StrCat("bracket [", state.good_index(), ", ",
                                              state.bad_index(), "] does not fit ", n, " entries"));
  }
  for (int i = 0; i < state.steps_size(); ++i) {
    const v1::BisectStep& step = state.steps(i);
    const bool last = i + 1 == state.steps_size();
    if (step.tested_index() >= n ||
        state.spec().entries(static_cast<int>(step.tested_index())) != step.tested()) {
      return Invalid(absl::StrCat("steps[", i, "].tested"), "does not match entries");
    }
    if (step.rounds().empty()) return Invalid(absl::StrCat("steps[", i, "].rounds"), "empty");
    if (step.verdict() == v1::BISECT_VERDICT_UNSPECIFIED && !last) {
      return Invalid(absl::StrCat("steps[", i, "].verdict"), "an earlier step is still open");
    }
  }
  if (!state.pending_run_id().empty()) {
    const bool open = !state.steps().empty() &&
                      state.steps().rbegin()->verdict() == v1::BISECT_VERDICT_UNSPECIFIED &&
                      state.steps().rbegin()->rounds().rbegin()->run_id() == state.pending_run_id();
    if (!open) {
      return Invalid("pending_run_id", absl::StrCat("'", state.pending_run_id(),
                                                    "' is not the open step's last run"));
    }
  }
  return Bisection(std::move(state));
}

bool Bisection::HasOpenStep() const {
  return !state_.steps().empty() &&
         state_.steps().rbegin()->verdict() == v1::BISECT_VERDICT_UNSPECIFIED;
}

NextAction Bisection::Next() const {
  NextAction a;
  if (state_.status() != v1::BISECT_RUNNING) return a;
  if (!state_.pending_run_id().empty()) {
    a.kind = NextAction::Kind::kAwaitRun;
    a.run_id = state_.pending_run_id();
    a.step = state_.steps().rbegin()->number();
    return a;
  }
  const v1::BisectSpec& spec = state_.spec();
  a.kind = NextAction::Kind::kMeasure;
  a.boots = spec.boots_per_round();
  std::string tested;
  bool endpoint_check = false;
  if (HasOpenStep()) {
    const v1::BisectStep& open = *state_.steps().rbegin();
    a.step = open.number();
    tested = open.tested();
    endpoint_check = open.number() == 0;
  } else if (state_.steps().empty() && !spec.skip_endpoint_check()) {
    a.step = 0;
    endpoint_check = true;
  } else {
    a.step = state_.steps().empty() ? 1 : state_.steps().rbegin()->number() + 1;
    const uint32_t mid = state_.good_index() + (state_.bad_index() - state_.good_index()) / 2;
    tested = spec.entries(static_cast<int>(mid));
  }
  if (endpoint_check) {
    a.entries = {spec.good(), spec.bad()};
  } else {
    a.entries = {spec.good(), tested, spec.bad()};
  }
  return a;
}

absl::Status Bisection::Submitted(std::string run_id) {
  const NextAction next = Next();
  if (next.kind != NextAction::Kind::kMeasure) {
    return absl::FailedPreconditionError(
        absl::StrCat("bisect ", state_.id(), ": no measurement is wanted now (",
                     next.kind == NextAction::Kind::kAwaitRun
                         ? absl::StrCat("run ", next.run_id, " is pending")
                         : absl::StrCat("status ", BisectStatusName(state_.status())),
                     ")"));
  }
  if (run_id.empty()) return Invalid("run_id", "empty");
  if (!HasOpenStep()) {
    v1::BisectStep* step = state_.add_steps();
    step->set_number(next.step);
    // The tested entry is second: after good, and in the endpoint check it is bad itself.
    const std::string& tested = next.entries[1];
    step->set_tested(tested);
    step->set_tested_index(static_cast<uint32_t>(IndexOf(state_.spec(), tested)));
    step->set_good_index(state_.good_index());
    step->set_bad_index(state_.bad_index());
  }
  v1::BisectRound* round = state_.mutable_steps()->rbegin()->add_rounds();
  round->set_run_id(run_id);
  round->set_boots(next.boots);
  state_.set_pending_run_id(std::move(run_id));
  return absl::OkStatus();
}

absl::Status Bisection::Finished(std::string_view run_id_in, const StepComparator& compare) {
  const absl::string_view run_id(run_id_in.data(), run_id_in.size());
  if (state_.status() != v1::BISECT_RUNNING || state_.pending_run_id() != run_id) {
    return absl::FailedPreconditionError(absl::StrCat("bisect ", state_.id(), ": run ", run_id,
                                                      " is not the pending run ('",
                                                      state_.pending_run_id(), "')"));
  }
  v1::BisectStep& step = *state_.mutable_steps()->rbegin();
  const v1::BisectSpec& spec = state_.spec();
  StepRequest request;
  request.spec = &spec;
  request.step = step.number();
  request.endpoint_check = step.number() == 0;
  request.good = spec.good();
  request.tested = step.tested();
  request.bad = spec.bad();
  for (const v1::BisectRound& r : step.rounds()) request.run_ids.push_back(r.run_id());
  request.boots_per_arm = BootsSoFar(step);
  absl::StatusOr<v1::BisectComparison> comparison = compare(request);
  if (!comparison.ok()) return comparison.status();
  const v1::BisectVerdict verdict = comparison->verdict();
  if (verdict == v1::BISECT_VERDICT_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bisect ", state_.id(), ": the comparison of run ", run_id, " returned no verdict"));
  }
  *step.mutable_rounds()->rbegin()->mutable_comparison() = *std::move(comparison);
  state_.clear_pending_run_id();

  if (verdict == v1::CANT_TELL) {
    if (request.boots_per_arm + spec.boots_per_round() <= spec.max_boots_per_step()) {
      return absl::OkStatus();  // the step stays open: another round of boots
    }
    step.set_verdict(v1::CANT_TELL);
    state_.set_status(v1::BISECT_AMBIGUOUS);
    const v1::BisectComparison& last = step.rounds().rbegin()->comparison();
    if (request.endpoint_check) {
      state_.set_reason(absl::StrCat("after ", request.boots_per_arm, " boots per arm, bad '",
                                     spec.bad(), "' could not be told apart from good '",
                                     spec.good(), "' (", last.summary(), ")"));
    } else {
      state_.set_reason(absl::StrCat(
          "step ", step.number(), ": after ", request.boots_per_arm, " boots per arm, '",
          step.tested(), "' could not be told like good or like bad (", last.summary(),
          "); the first bad entry is after '", spec.entries(static_cast<int>(state_.good_index())),
          "' and at or before '", spec.entries(static_cast<int>(state_.bad_index())), "'"));
    }
    return absl::OkStatus();
  }
  step.set_verdict(verdict);
  if (request.endpoint_check) {
    if (verdict == v1::LIKE_GOOD) {
      state_.set_status(v1::BISECT_NOT_REPRODUCED);
      state_.set_reason(absl::StrCat("bad '", spec.bad(), "' measured like good '", spec.good(),
                                     "' (", step.rounds().rbegin()->comparison().summary(), ")"));
      return absl::OkStatus();
    }
  } else if (verdict == v1::LIKE_GOOD) {
    state_.set_good_index(step.tested_index());
  } else {
    state_.set_bad_index(step.tested_index());
  }
  CheckFound();
  return absl::OkStatus();
}

void Bisection::CheckFound() {
  if (state_.status() == v1::BISECT_RUNNING && state_.bad_index() == state_.good_index() + 1) {
    state_.set_status(v1::BISECT_FOUND);
    state_.set_first_bad(state_.spec().entries(static_cast<int>(state_.bad_index())));
  }
}

absl::Status Bisection::RunFailed(std::string_view run_id_in, std::string_view reason_in) {
  const absl::string_view run_id(run_id_in.data(), run_id_in.size());
  const absl::string_view reason(reason_in.data(), reason_in.size());
  if (state_.status() != v1::BISECT_RUNNING || state_.pending_run_id() != run_id) {
    return absl::FailedPreconditionError(absl::StrCat("bisect ", state_.id(), ": run ", run_id,
                                                      " is not the pending run ('",
                                                      state_.pending_run_id(), "')"));
  }
  state_.set_status(v1::BISECT_FAILED);
  state_.set_reason(absl::StrCat("step ", state_.steps().rbegin()->number(), ": run ", run_id,
                                 " failed: ", reason));
  state_.clear_pending_run_id();
  return absl::OkStatus();
}

void Bisection::Cancel() {
  if (state_.status() != v1::BISECT_RUNNING) return;
  state_.set_status(v1::BISECT_CANCELLED);
  state_.set_reason(
      state_.pending_run_id().empty()
          ? "cancelled"
          : absl::StrCat("cancelled while run ", state_.pending_run_id(), " was pending"));
  state_.clear_pending_run_id();
}

v1::BisectVerdict ClassifyStep(Difference versus_good, Difference versus_bad, bool bad_is_worse) {
  const Difference toward_bad = bad_is_worse ? Difference::kWorse : Difference::kBetter;
  const Difference toward_good = bad_is_worse ? Difference::kBetter : Difference::kWorse;
  const bool evidence_bad =
      versus_good == toward_bad || versus_bad == Difference::kSame || versus_bad == toward_bad;
  const bool evidence_good =
      versus_bad == toward_good || versus_good == Difference::kSame || versus_good == toward_good;
  if (evidence_good && !evidence_bad) return v1::LIKE_GOOD;
  if (evidence_bad && !evidence_good) return v1::LIKE_BAD;
  return v1::CANT_TELL;
}

v1::BisectVerdict ClassifyEndpoints(Difference bad_versus_good) {
  switch (bad_versus_good) {
    case Difference::kBetter:
    case Difference::kWorse:
      return v1::LIKE_BAD;
    case Difference::kSame:
      return v1::LIKE_GOOD;
    case Difference::kUnknown:
      return v1::CANT_TELL;
  }
  return v1::CANT_TELL;
}

const char* BisectStatusName(v1::BisectStatus status) {
  switch (status) {
    case v1::BISECT_RUNNING:
      return "running";
    case v1::BISECT_FOUND:
      return "found";
    case v1::BISECT_AMBIGUOUS:
      return "ambiguous";
    case v1::BISECT_NOT_REPRODUCED:
      return "not reproduced";
    case v1::BISECT_CANCELLED:
      return "cancelled";
    case v1::BISECT_FAILED:
      return "failed";
    default:
      return "unspecified";
  }
}

const char* BisectVerdictName(v1::BisectVerdict verdict) {
  switch (verdict) {
    case v1::LIKE_GOOD:
      return "like good";
    case v1::LIKE_BAD:
      return "like bad";
    case v1::CANT_TELL:
      return "can't tell";
    default:
      return "open";
  }
}

}  // namespace tlbfleet::bisect
