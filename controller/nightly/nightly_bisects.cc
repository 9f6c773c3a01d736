// The nightly unit's bisections: starting one, submitting each measurement exactly once,
// moving it on when its run ends, cancelling it.

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/bisect/report.h"
#include "controller/nightly/nightly.h"
#include "controller/nightly/specs.h"
#include "controller/scheduler/host_fit.h"
#include "controller/scheduler/run_spec.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::nightly {
namespace {

constexpr char kBisectPrefix[] = "bisect:";

bool Terminal(v1::RunState state) {
  return state == v1::RUN_STATE_SUCCEEDED || state == v1::RUN_STATE_FAILED ||
         state == v1::RUN_STATE_CANCELLED;
}

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
  absl::StatusOr<std::string> id = store_.CreateBisect(NowMs());
  if (!id.ok()) return id.status();
  absl::StatusOr<bisect::Bisection> b = bisect::Bisection::Start(*id, std::move(spec));
  if (!b.ok()) return b.status();
  SaveBisect(b->state());
  spdlog::info("nightly: bisect {} started over {} entries, good {} bad {}{}", *id,
               b->state().spec().entries_size(), b->state().spec().good(), b->state().spec().bad(),
               b->state().spec().regression_id().empty()
                   ? ""
                   : absl::StrCat(" (regression ", b->state().spec().regression_id(), ")"));
  AdvanceBisect(b->state());
  return store_.GetBisect(*id);
}

void Nightly::SaveBisect(const v1::BisectState& state) {
  if (absl::Status s = store_.SaveBisect(state, NowMs()); !s.ok()) {
    spdlog::error("nightly: saving bisect {}: {}", state.id(), s.ToString());
  }
}

void Nightly::AdvanceBisect(v1::BisectState state) {
  absl::StatusOr<bisect::Bisection> b = bisect::Bisection::Resume(state);
  if (!b.ok()) {
    spdlog::error("nightly: bisect {} cannot resume: {}", state.id(), b.status().ToString());
    return;
  }
  const bisect::NextAction next = b->Next();
  if (next.kind == bisect::NextAction::Kind::kAwaitRun) {
    // Its run may have ended while nobody watched.
    absl::StatusOr<v1::Run> run = controller_.GetRun(next.run_id);
    if (run.ok() && Terminal(run->state())) BisectRunFinished(b->state(), *run);
    return;
  }
  if (next.kind != bisect::NextAction::Kind::kMeasure) return;
  const std::string name = MeasurementName(b->state(), next);
  absl::StatusOr<std::string> yaml = MeasurementRunYaml(b->state().spec(), next, name);
  absl::StatusOr<std::string> run_id = absl::UnknownError("not submitted");
  if (!yaml.ok()) {
    run_id = yaml.status();
  } else {
    const store::Submission submission{name, absl::StrCat(kBisectPrefix, state.id()), *yaml, ""};
    if (absl::Status s = store_.BeginSubmission(submission, NowMs()); !s.ok()) {
      run_id = s;
    } else {
      run_id = SubmitOnce(submission);
    }
  }
  if (!run_id.ok()) {
    v1::BisectState failed = b->state();
    failed.set_status(v1::BISECT_FAILED);
    failed.set_reason(absl::StrCat("step ", next.step, ": submitting run ", name,
                                   " failed: ", run_id.status().message()));
    spdlog::error("nightly: bisect {}: {}", state.id(), failed.reason());
    (void)store_.RecordSubmission(name, "-", nullptr, NowMs());
    SaveBisect(failed);
    return;
  }
  if (absl::Status s = b->Submitted(*run_id); !s.ok()) {
    spdlog::error("nightly: bisect {}: {}", state.id(), s.ToString());
    return;
  }
  spdlog::info("nightly: bisect {} step {}: run {} measures {} ({} boots each)", state.id(),
               next.step, *run_id, absl::StrJoin(next.entries, ", "), next.boots);
  if (absl::Status s = store_.RecordSubmission(name, *run_id, &b->state(), NowMs()); !s.ok()) {
    spdlog::error("nightly: bisect {}: recording run {}: {}", state.id(), *run_id, s.ToString());
  }
}

void Nightly::BisectRunFinished(v1::BisectState state, const v1::Run& run) {
  absl::StatusOr<bisect::Bisection> b = bisect::Bisection::Resume(std::move(state));
  if (!b.ok() || b->state().pending_run_id() != run.id()) return;  // handled already
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
    return;
  }
  SaveBisect(b->state());
  const v1::BisectState& now = b->state();
  if (now.status() == v1::BISECT_RUNNING) {
    AdvanceBisect(now);
    return;
  }
  spdlog::info("nightly: bisect {} {}: {}", now.id(), bisect::BisectStatusName(now.status()),
               now.status() == v1::BISECT_FOUND ? absl::StrCat("first bad ", now.first_bad())
                                                : now.reason());
  if (!now.spec().regression_id().empty()) {
    absl::StatusOr<v1::Regression> r = store_.GetRegression(now.spec().regression_id());
    if (r.ok()) {
      r->set_note(now.status() == v1::BISECT_FOUND
                      ? absl::StrCat("bisect ", now.id(), ": first bad ", now.first_bad())
                      : absl::StrCat("bisect ", now.id(), ": ",
                                     bisect::BisectStatusName(now.status()), ": ", now.reason()));
      (void)store_.UpdateRegression(*r, NowMs());
    }
  }
}

absl::StatusOr<v1::GetBisectResponse> Nightly::GetBisect(const std::string& id) {
  absl::StatusOr<v1::BisectState> state = store_.GetBisect(id);
  if (!state.ok()) return state.status();
  v1::GetBisectResponse response;
  response.set_report(bisect::RenderReport(*state));
  *response.mutable_state() = *std::move(state);
  return response;
}

absl::StatusOr<v1::ListBisectsResponse> Nightly::ListBisects(uint32_t limit) {
  absl::StatusOr<std::vector<v1::BisectState>> list = store_.ListBisects(limit, false);
  if (!list.ok()) return list.status();
  v1::ListBisectsResponse response;
  for (v1::BisectState& s : *list) *response.add_bisects() = std::move(s);
  return response;
}

absl::StatusOr<v1::BisectState> Nightly::CancelBisect(const std::string& id) {
  absl::MutexLock lock(&work_mu_);
  absl::StatusOr<v1::BisectState> state = store_.GetBisect(id);
  if (!state.ok()) return state.status();
  absl::StatusOr<bisect::Bisection> b = bisect::Bisection::Resume(*state);
  if (!b.ok()) return b.status();
  const std::string pending = b->state().pending_run_id();
  b->Cancel();
  SaveBisect(b->state());
  if (!pending.empty()) (void)controller_.CancelRun(pending);
  spdlog::info("nightly: bisect {} cancelled{}", id,
               pending.empty() ? "" : absl::StrCat(" with its run ", pending));
  return b->state();
}

}  // namespace tlbfleet::nightly
