#include "controller/bisect/bisection.h"

#include <cmath>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "controller/bisect/bisect_state.h"

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

absl::Status ValidateEntrySpec(const v1::BisectSpec& spec) {
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

}  // namespace

absl::StatusOr<Bisection> Bisection::Start(std::string id, v1::BisectSpec spec) {
  if (id.empty()) return Invalid("id", "missing");
  if (spec.boots_per_round() == 0) spec.set_boots_per_round(kDefaultBootsPerRound);
  if (spec.max_boots_per_step() == 0) {
    spec.set_max_boots_per_step(std::max(kDefaultMaxBootsPerStep, spec.boots_per_round()));
  }
  if (absl::Status s = ValidateEntrySpec(spec); !s.ok()) return s;
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
  if (absl::Status s = ValidateEntrySpec(state.spec()); !s.ok()) return s;
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
  if (absl::Status s = CheckStoredPendingRun(state); !s.ok()) return s;
  return Bisection(std::move(state));
}

bool Bisection::HasOpenStep() const { return bisect::HasOpenStep(state_); }

NextAction Bisection::Next() const {
  if (std::optional<NextAction> waiting = StoppedOrAwaiting(state_)) return *waiting;
  NextAction a;
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
  if (absl::Status s = CheckMeasurementWanted(state_, next); !s.ok()) return s;
  if (run_id.empty()) return Invalid("run_id", "empty");
  if (!HasOpenStep()) {
    // The tested entry is second: after good, and in the endpoint check it is bad itself.
    const std::string& tested = next.entries[1];
    AddStep(&state_, next.step, tested, static_cast<uint32_t>(IndexOf(state_.spec(), tested)));
  }
  AddRound(&state_, std::move(run_id), next.boots);
  return absl::OkStatus();
}

absl::Status Bisection::Finished(std::string_view run_id_in, const StepComparator& compare) {
  const absl::string_view run_id(run_id_in.data(), run_id_in.size());
  if (absl::Status s = CheckPendingRun(state_, run_id); !s.ok()) return s;
  v1::BisectStep& step = *state_.mutable_steps()->rbegin();
  const v1::BisectSpec& spec = state_.spec();
  const StepRequest request = RequestFor(state_, step);
  absl::StatusOr<v1::BisectComparison> comparison = compare(request);
  if (!comparison.ok()) return comparison.status();
  const v1::BisectVerdict verdict = comparison->verdict();
  if (absl::Status s = CheckComparisonVerdict(state_, run_id, verdict); !s.ok()) return s;
  *step.mutable_rounds()->rbegin()->mutable_comparison() = *std::move(comparison);
  state_.clear_pending_run_id();

  if (verdict == v1::CANT_TELL) {
    if (AnotherRoundFits(spec, request.boots_per_arm)) {
      return absl::OkStatus();  // the step stays open: another round of boots
    }
    step.set_verdict(v1::CANT_TELL);
    state_.set_status(v1::BISECT_AMBIGUOUS);
    const v1::BisectComparison& last = step.rounds().rbegin()->comparison();
    if (request.kind == StepKind::kEndpointCheck) {
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
  if (request.kind == StepKind::kEndpointCheck) {
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
  return FailPendingRun(&state_, run_id, reason);
}

void Bisection::Cancel() { CancelBisection(&state_); }

Placement PlacementOf(const v1::ChangeInterval& versus_good_pct,
                      const v1::ChangeInterval& versus_bad_pct) {
  // On a log scale, where the ratios compose: ln(tested / good) - ln(tested / bad) is the way
  // from good to bad, ln(bad / good); halfway lies half of it from either end.
  const auto log_ratio = [](double pct) { return std::log1p(pct / 100); };
  for (const v1::ChangeInterval* c : {&versus_good_pct, &versus_bad_pct}) {
    for (const double pct : {c->estimate(), c->low(), c->high()}) {
      if (!std::isfinite(pct) || pct <= -100) return {};
    }
  }
  const double way = log_ratio(versus_good_pct.estimate()) - log_ratio(versus_bad_pct.estimate());
  if (way == 0) return {};
  const double half = std::abs(way) / 2;
  Placement p;
  if (way > 0) {  // bad's value is above good's
    p.nearer_bad = -log_ratio(versus_bad_pct.low()) < half;
    p.nearer_good = log_ratio(versus_good_pct.high()) < half;
  } else {
    p.nearer_bad = log_ratio(versus_bad_pct.high()) < half;
    p.nearer_good = -log_ratio(versus_good_pct.low()) < half;
  }
  return p;
}

v1::BisectVerdict ClassifyStep(Difference versus_good, Difference versus_bad, bool bad_is_worse,
                               Placement estimate) {
  const Difference toward_bad = bad_is_worse ? Difference::kWorse : Difference::kBetter;
  const Difference toward_good = bad_is_worse ? Difference::kBetter : Difference::kWorse;
  const bool evidence_bad =
      versus_good == toward_bad || versus_bad == Difference::kSame || versus_bad == toward_bad;
  const bool evidence_good =
      versus_bad == toward_good || versus_good == Difference::kSame || versus_good == toward_good;
  // Differing from one reference does not place an entry that may lie between the two
  // (bisection.h): the other comparison, or the intervals, must keep it on that side of halfway.
  const bool not_better_than_bad =
      estimate.nearer_bad || versus_bad == Difference::kSame || versus_bad == toward_bad;
  const bool not_worse_than_good =
      estimate.nearer_good || versus_good == Difference::kSame || versus_good == toward_good;
  if (evidence_good && !evidence_bad && not_worse_than_good) return v1::LIKE_GOOD;
  if (evidence_bad && !evidence_good && not_better_than_bad) return v1::LIKE_BAD;
  return v1::CANT_TELL;
}

v1::BisectVerdict ClassifyAgainstParent(Difference culprit_versus_parent, bool bad_is_worse) {
  const Difference toward_bad = bad_is_worse ? Difference::kWorse : Difference::kBetter;
  if (culprit_versus_parent == Difference::kUnknown) return v1::CANT_TELL;
  return culprit_versus_parent == toward_bad ? v1::LIKE_BAD : v1::LIKE_GOOD;
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
    case v1::BISECT_ONE_OF:
      return "one of";
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
    case v1::SKIPPED:
      return "skipped";
    default:
      return "open";
  }
}

const char* VerificationName(v1::BisectVerificationOutcome outcome) {
  switch (outcome) {
    case v1::VERIFICATION_CONFIRMED:
      return "confirmed";
    case v1::VERIFICATION_NOT_REPRODUCED:
      return "not reproduced";
    case v1::VERIFICATION_REVERT_DOES_NOT_FIX:
      return "revert does not fix";
    default:
      return "not verified";
  }
}

}  // namespace tlbfleet::bisect
