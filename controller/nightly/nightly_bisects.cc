// The nightly unit's bisections: starting one, submitting each measurement exactly once,
// moving it on when its run ends, cancelling it.

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/bisect/report.h"
#include "controller/nightly/nightly.h"
#include "controller/nightly/nightly_internal.h"
#include "controller/nightly/specs.h"
#include "controller/scheduler/host_fit.h"
#include "controller/scheduler/run_spec.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::nightly {
namespace {

// "bisect-4-s2-r1": the bisection, its step and the step's round; unique, and the same after
// a restart, so that a run submitted just before a crash is found again by its name.
std::string MeasurementName(const v1::BisectState& state, const bisect::NextAction& next) {
  uint32_t round = 1;
  if (!state.steps().empty()) {
    const v1::BisectStep& last = *state.steps().rbegin();
    if (last.number() == next.step && last.verdict() == v1::BISECT_VERDICT_UNSPECIFIED) {
      round = static_cast<uint32_t>(last.rounds_size()) + 1;
    }
  }
  return absl::StrCat("bisect-", state.id(), "-s", next.step, "-r", round);
}

// What the regression a bisection works for says of it once it ended.
std::string OutcomeNote(const v1::BisectState& state) {
  return state.status() == v1::BISECT_FOUND
             ? absl::StrCat("bisect ", state.id(), ": first bad ", state.first_bad())
             : absl::StrCat("bisect ", state.id(), ": ", bisect::BisectStatusName(state.status()),
                            ": ", state.reason());
}

}  // namespace

absl::Status Nightly::CheckEntriesKnown(const v1::BisectSpec& spec) {
  absl::StatusOr<v1::ListHostsResponse> hosts = controller_.ListHosts();
  if (!hosts.ok()) return hosts.status();
  // Only hosts the run would select: their entries are what its arms can name.
  v1::RunSpec selector = spec.run();
  selector.clear_arms();
  std::set<std::string> known;
  bool any_host = false;
  for (const v1::Host& h : hosts->hosts()) {
    if (scheduler::FitHost(selector, h.info()) != scheduler::HostFit::kFits &&
        scheduler::FitHost(selector, h.info()) != scheduler::HostFit::kCannotReboot) {
      continue;
    }
    any_host = true;
    for (const v1::BootEntryInfo& e : h.info().boot_entries()) known.insert(e.name());
  }
  if (!any_host) return absl::OkStatus();  // no host yet: the runs wait for one, or fail then
  for (int i = 0; i < spec.entries_size(); ++i) {
    if (known.count(spec.entries(i)) > 0) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "entries[", i, "]: no host the run selects has boot entry '", spec.entries(i), "' (",
        known.empty() ? std::string("they have none") : absl::StrJoin(known, ", "), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::BisectState> Nightly::StartBisect(const std::string& yaml,
                                                     const std::string& source) {
  absl::StatusOr<v1::BisectSpec> spec = ParseBisectSpec(yaml, source);
  if (!spec.ok()) return spec.status();
  if (absl::Status s = CheckEntriesKnown(*spec); !s.ok()) return s;
  absl::MutexLock lock(&work_mu_);
  return CreateBisect(*std::move(spec));
}

absl::StatusOr<v1::BisectState> Nightly::CreateBisect(v1::BisectSpec spec) {
  if (spec.run().benchmark().empty()) {
    if (absl::Status s = CheckBisectRun(&spec); !s.ok()) return s;
  }
  // Checked before a row is made, so a refused bisection leaves nothing behind.
  absl::StatusOr<bisect::Bisection> probe = bisect::Bisection::Start("probe", spec);
  if (!probe.ok()) return probe.status();
  const std::string regression_id = spec.regression_id();
  const std::string for_regression =
      regression_id.empty() ? "" : absl::StrCat(" (regression ", regression_id, ")");
  absl::StatusOr<std::string> id = store_.CreateBisect(NowMs());
  if (!id.ok()) {
    StoreFailed(StoreOp::kWrite, absl::StrCat("creating a bisection", for_regression), id.status());
    return id.status();
  }
  absl::StatusOr<bisect::Bisection> b = bisect::Bisection::Start(*id, std::move(spec));
  if (!b.ok()) return b.status();
  // Until its state is stored the row is empty, which every reader skips: a failure here
  // leaves no bisection behind, and the regression names none.
  absl::Status saved = regression_id.empty()
                           ? store_.SaveBisect(b->state(), NowMs())
                           : store_.SaveBisectAndNoteRegression(
                                 b->state(), absl::StrCat("bisect ", *id, " started"), NowMs());
  if (!saved.ok()) {
    StoreFailed(StoreOp::kWrite, absl::StrCat("storing new bisect ", *id, for_regression), saved);
    return saved;
  }
  spdlog::info("nightly: bisect {} started over {} entries, good {} bad {}{}", *id,
               b->state().spec().entries_size(), b->state().spec().good(), b->state().spec().bad(),
               for_regression);
  AdvanceBisect(b->state());
  absl::StatusOr<v1::BisectState> stored = store_.GetBisect(*id);
  if (!stored.ok()) {
    // It was stored: the caller learns of it as it was created (its first run, if submitted,
    // shows in the next read).
    StoreFailed(StoreOp::kRead, absl::StrCat("reading new bisect ", *id), stored.status());
    return b->state();
  }
  return stored;
}

void Nightly::AdvanceBisect(const v1::BisectState& state) {
  absl::StatusOr<bisect::Bisection> b = bisect::Bisection::Resume(state);
  if (!b.ok()) {
    spdlog::error("nightly: bisect {} cannot resume: {}", state.id(), b.status().ToString());
    return;
  }
  const bisect::NextAction next = b->Next();
  if (next.kind == bisect::NextAction::Kind::kAwaitRun) {
    // Its run may have ended while nobody watched.
    absl::StatusOr<v1::Run> run = controller_.GetRun(next.run_id);
    if (!run.ok()) {
      spdlog::error("nightly: bisect {}: run {}: {}; looked at again later", state.id(),
                    next.run_id, run.status().ToString());
      RetryLater();
      return;
    }
    if (RunEnded(run->state())) {
      // A failure was logged and counted there; the next recovery advances it again, and the
      // run's own handling retries it too.
      BisectRunFinished(b->state(), *run).IgnoreError();
    }
    return;
  }
  if (next.kind != bisect::NextAction::Kind::kMeasure) return;
  const std::string name = MeasurementName(b->state(), next);
  v1::BisectState failed = b->state();
  failed.set_status(v1::BISECT_FAILED);
  absl::StatusOr<std::string> yaml = MeasurementRunYaml(b->state().spec(), next, name);
  if (!yaml.ok()) {
    failed.set_reason(absl::StrCat("step ", next.step, ": run ", name,
                                   " cannot be written: ", yaml.status().message()));
    spdlog::error("nightly: bisect {}: {}", state.id(), failed.reason());
    if (absl::Status s = store_.SaveBisect(failed, NowMs()); !s.ok()) {
      StoreFailed(StoreOp::kWrite, absl::StrCat("bisect ", state.id(), ": storing its failure"), s);
    }
    return;
  }
  const store::Submission submission{name, BisectOwner(state.id()), *yaml, ""};
  if (absl::Status s = store_.BeginSubmission(submission, NowMs()); !s.ok()) {
    // Nothing submitted; the recovery advances the bisection again.
    StoreFailed(StoreOp::kWrite,
                absl::StrCat("bisect ", state.id(), " step ", next.step, ": recording run ", name,
                             " before submitting it"),
                s);
    return;
  }
  absl::StatusOr<std::string> run_id = SubmitOnce(submission);
  if (!run_id.ok()) {
    if (RetryableFailure(run_id.status())) {
      // The submission stays pending: the recovery submits it (or finds it) later.
      spdlog::error(
          "nightly: bisect {} step {}: run {} could not be submitted, trying again "
          "later: {}",
          state.id(), next.step, name, run_id.status().ToString());
      RetryLater();
      return;
    }
    failed.set_reason(absl::StrCat("step ", next.step, ": submitting run ", name,
                                   " failed: ", run_id.status().message()));
    spdlog::error("nightly: bisect {}: {}", state.id(), failed.reason());
    // The refusal and the bisection's end in one transaction; if it fails, the submission
    // stays pending and the recovery asks again.
    if (absl::Status s = store_.RecordSubmission(name, "-", &failed, NowMs()); !s.ok()) {
      StoreFailed(StoreOp::kWrite, absl::StrCat("bisect ", state.id(), ": storing its failure"), s);
    }
    return;
  }
  if (absl::Status s = b->Submitted(*run_id); !s.ok()) {
    spdlog::error("nightly: bisect {}: {}", state.id(), s.ToString());
    return;
  }
  spdlog::info("nightly: bisect {} step {}: run {} measures {} ({} boots each)", state.id(),
               next.step, *run_id, absl::StrJoin(next.entries, ", "), next.boots);
  if (absl::Status s = store_.RecordSubmission(name, *run_id, &b->state(), NowMs()); !s.ok()) {
    // The recovery finds the run by its name and records it with the state that awaits it.
    StoreFailed(StoreOp::kWrite,
                absl::StrCat("bisect ", state.id(), ": recording run ", *run_id, " (", name, ")"),
                s);
  }
}

absl::Status Nightly::BisectRunFinished(v1::BisectState state, const v1::Run& run) {
  absl::StatusOr<bisect::Bisection> b = bisect::Bisection::Resume(std::move(state));
  if (!b.ok() || b->state().pending_run_id() != run.id()) return absl::OkStatus();  // handled
  absl::Status s;
  if (run.state() == v1::RUN_STATE_SUCCEEDED) {
    s = b->Finished(run.id(), comparator_);
    if (!s.ok()) {
      // The samples cannot be compared (none of the metric, say): asking again changes nothing.
      s = b->RunFailed(run.id(), absl::StrCat("its samples cannot be compared: ", s.message()));
    }
  } else {
    s = b->RunFailed(run.id(), run.error().empty() ? v1::RunState_Name(run.state()) : run.error());
  }
  if (!s.ok()) {
    spdlog::error("nightly: bisect {}: {}", b->state().id(), s.ToString());
    return absl::OkStatus();  // not the store's: handling the run again changes nothing
  }
  const v1::BisectState& now = b->state();
  const bool noted = now.status() != v1::BISECT_RUNNING && !now.spec().regression_id().empty();
  // With the regression's note in the same transaction, so that the note cannot be lost.
  absl::Status saved = noted ? store_.SaveBisectAndNoteRegression(now, OutcomeNote(now), NowMs())
                             : store_.SaveBisect(now, NowMs());
  if (!saved.ok()) {
    // The stored state still awaits the run: handling it again redoes this step.
    StoreFailed(StoreOp::kWrite,
                absl::StrCat("bisect ", now.id(), ": storing the result of run ", run.id()), saved);
    return saved;
  }
  if (now.status() == v1::BISECT_RUNNING) {
    AdvanceBisect(now);
    return absl::OkStatus();
  }
  spdlog::info("nightly: bisect {} {}: {}", now.id(), bisect::BisectStatusName(now.status()),
               now.status() == v1::BISECT_FOUND ? absl::StrCat("first bad ", now.first_bad())
                                                : now.reason());
  return absl::OkStatus();
}

absl::StatusOr<v1::GetBisectResponse> Nightly::GetBisect(const std::string& id) {
  absl::StatusOr<v1::BisectState> state = Counted(StoreOp::kRead, store_.GetBisect(id));
  if (!state.ok()) return state.status();
  v1::GetBisectResponse response;
  response.set_report(bisect::RenderReport(*state));
  *response.mutable_state() = *std::move(state);
  return response;
}

absl::StatusOr<v1::ListBisectsResponse> Nightly::ListBisects(uint32_t limit) {
  absl::StatusOr<std::vector<v1::BisectState>> list =
      Counted(StoreOp::kRead, store_.ListBisects(limit, false));
  if (!list.ok()) return list.status();
  v1::ListBisectsResponse response;
  for (v1::BisectState& s : *list) *response.add_bisects() = std::move(s);
  return response;
}

absl::StatusOr<v1::BisectState> Nightly::CancelBisect(const std::string& id) {
  absl::MutexLock lock(&work_mu_);
  absl::StatusOr<v1::BisectState> state = Counted(StoreOp::kRead, store_.GetBisect(id));
  if (!state.ok()) return state.status();
  absl::StatusOr<bisect::Bisection> b = bisect::Bisection::Resume(*state);
  if (!b.ok()) return b.status();
  const std::string pending = b->state().pending_run_id();
  b->Cancel();
  if (absl::Status s = store_.SaveBisect(b->state(), NowMs()); !s.ok()) {
    // Still running as stored: the caller is told, and its run goes on.
    StoreFailed(StoreOp::kWrite, absl::StrCat("bisect ", id, ": storing its cancellation"), s);
    return s;
  }
  if (!pending.empty()) {
    if (absl::StatusOr<v1::Run> c = controller_.CancelRun(pending); !c.ok()) {
      // The bisection no longer awaits the run: whatever it measures is ignored; only the
      // lab's time is lost.
      spdlog::warn("nightly: bisect {} cancelled but its run {} could not be: {}", id, pending,
                   c.status().ToString());
    }
  }
  spdlog::info("nightly: bisect {} cancelled{}", id,
               pending.empty() ? "" : absl::StrCat(" with its run ", pending));
  return b->state();
}

}  // namespace tlbfleet::nightly
