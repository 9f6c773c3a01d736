// The nightly unit's bisections: starting one (over commits: its range listed by a builder),
// submitting each measurement exactly once, moving it on when its run ends (over commits: a
// commit that does not build, or builds and does not boot, is skipped; the culprit's revert
// tried first), cancelling it.

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/bisect/bisect_state.h"
#include "controller/bisect/calibrated.h"
#include "controller/bisect/report.h"
#include "controller/nightly/any_bisection.h"
#include "controller/nightly/nightly.h"
#include "controller/nightly/nightly_internal.h"
#include "controller/nightly/specs.h"
#include "controller/scheduler/host_fit.h"
#include "controller/scheduler/run_spec.h"
#include "controller/store/builds.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::nightly {
namespace {

// A builder answers git questions at once (agent.proto, GitQuery); listing a long range may
// take a while on a cold repository. The revert check waits less: it runs on the worker.
constexpr absl::Duration kRangeQueryTimeout = absl::Seconds(60);
constexpr absl::Duration kRevertQueryTimeout = absl::Seconds(30);

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

// Whether `text` names boot entry `entry` as a word of its own: entries are identifiers the
// controller made for the run's kernel arms ("kernel-3f2a9c0d1e2b"), not wording, so this holds
// whatever sentence the core or the agent put around it.
bool NamesBootEntry(std::string_view text, std::string_view entry) {
  if (entry.empty()) return false;
  const auto entry_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '+';
  };
  for (size_t at = text.find(entry); at != std::string_view::npos; at = text.find(entry, at + 1)) {
    const size_t end = at + entry.size();
    // A trailing '.' ends a sentence, not the name.
    const bool ends = end == text.size() || !entry_char(text[end]) ||
                      (text[end] == '.' && (end + 1 == text.size() || !entry_char(text[end + 1])));
    if ((at == 0 || !entry_char(text[at - 1])) && ends) return true;
  }
  return false;
}

// The kernel arm of a failed run whose kernel was built but could not be booted: every build
// of the run succeeded (the build stage passed, so the run failed at a boot or a measurement),
// and the run's error names that arm's boot entry and no other kernel arm's. The core names
// the entry both when the host kept coming back from the reboot asked for on another boot
// (dispatch: "asked 3 times to boot entry E") and when a job of it was refused because the
// boot was not the build (the agent: "job needs boot entry E, but ..."). nullptr otherwise:
// a host lost, a benchmark that failed, are not the commit's.
const v1::KernelBuild* ArmThatDidNotBoot(const v1::Run& run) {
  const v1::KernelBuild* found = nullptr;
  for (const v1::KernelBuild& build : run.builds()) {
    if (build.state() != "succeeded") return nullptr;
    if (!NamesBootEntry(run.error(), build.boot_entry())) continue;
    if (found != nullptr) return nullptr;  // two named: which one failed cannot be told
    found = &build;
  }
  return found;
}

// How often build `task_id` of `run_id` went back to the queue, from the run's build events:
// a builder that failed it (disk full, git failed, busy), cancelled under it or went away.
// A failure of the commit itself ends the build at once; it is never re-queued.
absl::StatusOr<int> RequeuesOfBuild(core::RunService& runs, const std::string& run_id,
                                    int64_t task_id) {
  int requeues = 0;
  uint64_t after = 0;
  constexpr uint32_t kPage = 1000;
  for (;;) {
    absl::StatusOr<std::vector<v1::RunEvent>> events = runs.RunEventsSince(run_id, after, kPage);
    if (!events.ok()) return events.status();
    for (const v1::RunEvent& e : *events) {
      after = std::max(after, e.id());
      if (e.has_build() && e.build().task_id() == task_id && e.build().state() == "queued") {
        ++requeues;
      }
    }
    if (events->size() < kPage) return requeues;
  }
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

absl::Status Nightly::ResolveCommits(v1::BisectSpec* spec) {
  v1::BisectCommits* commits = spec->mutable_commits();
  // The source and config are the builders' names: only the hosts can say what they have.
  absl::StatusOr<v1::ListHostsResponse> hosts = controller_.ListHosts();
  if (!hosts.ok()) return hosts.status();
  if (absl::Status s = CheckBuilderHas(*hosts, commits->source(), commits->config(), "commits.");
      !s.ok()) {
    return s;
  }
  // A wrong question is the user's (INVALID_ARGUMENT, naming the field); a builder away,
  // failing or silent is FAILED_PRECONDITION: nothing is stored, and the same request may work
  // later.
  const auto ask = [&](v1::GitQuery query,
                       const std::string& field) -> absl::StatusOr<v1::GitAnswer> {
    query.set_source(commits->source());
    absl::StatusOr<v1::GitAnswer> answer = controller_.QueryGit(query, kRangeQueryTimeout);
    if (answer.ok()) return answer;
    if (absl::IsInvalidArgument(answer.status())) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", answer.status().message()));
    }
    // Not UNAVAILABLE: to a client that means the controller itself could not be reached.
    return absl::FailedPreconditionError(
        absl::StrCat(field, ": no builder of source ", commits->source(),
                     " could answer now (try again): ", answer.status().message()));
  };
  std::string hash[2];
  const std::string* revs[2] = {&commits->good_rev(), &commits->bad_rev()};
  for (int i = 0; i < 2; ++i) {
    const std::string field = i == 0 ? "commits.good" : "commits.bad";
    v1::GitQuery resolve;
    resolve.set_kind(v1::GitQuery::KIND_RESOLVE);
    resolve.set_rev(*revs[i]);
    absl::StatusOr<v1::GitAnswer> answer = ask(resolve, field);
    if (!answer.ok()) return answer.status();
    if (answer->resolved().empty()) {
      return absl::UnavailableError(
          absl::StrCat(field, ": the builder resolved \"", *revs[i], "\" to nothing"));
    }
    hash[i] = answer->resolved();
  }
  if (hash[0] == hash[1]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "commits.bad: \"", commits->bad_rev(), "\" is the same commit as good (", hash[0], ")"));
  }
  v1::GitQuery range;
  range.set_kind(v1::GitQuery::KIND_RANGE);
  range.set_good(hash[0]);
  range.set_bad(hash[1]);
  // The builder's words say what is wrong (good not an ancestor of bad); good is the usual
  // mistake.
  absl::StatusOr<v1::GitAnswer> answer = ask(range, "commits.good");
  if (!answer.ok()) return answer.status();
  if (answer->commits().empty() || answer->commits().rbegin()->hash() != hash[1]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "commits.good: ", commits->good_rev(), " (", hash[0], ") is not an ancestor of bad ",
        commits->bad_rev(), " (", hash[1], "): good..bad does not end with bad"));
  }
  spec->set_good(hash[0]);
  spec->set_bad(hash[1]);
  commits->mutable_range()->CopyFrom(answer->commits());
  return absl::OkStatus();
}

absl::StatusOr<v1::BisectState> Nightly::StartBisect(const std::string& yaml,
                                                     const std::string& source) {
  absl::StatusOr<v1::BisectSpec> spec = ParseBisectSpec(yaml, source);
  if (!spec.ok()) return spec.status();
  if (IsCommitBisection(*spec)) {
    // Asked before the lock: a builder may take its time, and the worker must not wait.
    if (absl::Status s = ResolveCommits(&*spec); !s.ok()) return s;
  } else if (absl::Status s = CheckEntriesKnown(*spec); !s.ok()) {
    return s;
  }
  absl::MutexLock lock(&work_mu_);
  return CreateBisect(*std::move(spec));
}

absl::StatusOr<v1::BisectState> Nightly::CreateBisect(v1::BisectSpec spec) {
  if (spec.run().benchmark().empty()) {
    if (absl::Status s = CheckBisectRun(&spec); !s.ok()) return s;
  }
  // Checked before a row is made, so a refused bisection leaves nothing behind.
  absl::StatusOr<AnyBisection> probe = AnyBisection::Start("probe", spec);
  if (!probe.ok()) return probe.status();
  const std::string regression_id = spec.regression_id();
  const std::string for_regression =
      regression_id.empty() ? "" : absl::StrCat(" (regression ", regression_id, ")");
  absl::StatusOr<std::string> id = store_.CreateBisect(NowMs());
  if (!id.ok()) {
    StoreFailed(StoreOp::kWrite, absl::StrCat("creating a bisection", for_regression), id.status());
    return id.status();
  }
  absl::StatusOr<AnyBisection> b = AnyBisection::Start(*id, std::move(spec));
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
  const v1::BisectSpec& started = b->state().spec();
  spdlog::info("nightly: bisect {} started over {} {}, good {} bad {}{}", *id,
               IsCommitBisection(started) ? started.commits().range_size() : started.entries_size(),
               IsCommitBisection(started) ? "commits" : "entries", started.good(), started.bad(),
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

absl::Status Nightly::StoreBisectProgress(const v1::BisectState& now, std::string_view what) {
  const bool noted = now.status() != v1::BISECT_RUNNING && !now.spec().regression_id().empty();
  // With the regression's note in the same transaction, so that the note cannot be lost.
  absl::Status saved = noted ? store_.SaveBisectAndNoteRegression(now, OutcomeNote(now), NowMs())
                             : store_.SaveBisect(now, NowMs());
  if (!saved.ok()) {
    StoreFailed(StoreOp::kWrite, absl::StrCat("bisect ", now.id(), ": storing ", std::string(what)),
                saved);
    return saved;
  }
  if (now.status() != v1::BISECT_RUNNING) {
    spdlog::info("nightly: bisect {} {}: {}", now.id(), bisect::BisectStatusName(now.status()),
                 now.status() == v1::BISECT_FOUND
                     ? absl::StrCat("first bad ", now.first_bad(), " (verification: ",
                                    bisect::VerificationName(now.verification().outcome()), ")")
                     : now.reason());
  }
  return absl::OkStatus();
}

bool Nightly::CheckRevertApplies(AnyBisection& b, const bisect::NextAction& next) {
  const v1::BisectState& state = b.state();
  const v1::BisectSpec& spec = state.spec();
  v1::GitQuery query;
  query.set_kind(v1::GitQuery::KIND_REVERT_APPLIES);
  query.set_source(spec.commits().source());
  query.set_rev(next.revert);
  query.set_onto(spec.bad());
  absl::StatusOr<v1::GitAnswer> answer = controller_.QueryGit(query, kRevertQueryTimeout);
  std::string why;
  if (!answer.ok()) {
    if (!absl::IsInvalidArgument(answer.status())) {
      // No builder now: asked again at the next pass (the recovery advances it).
      spdlog::error(
          "nightly: bisect {}: does the revert of {} apply onto {}? {}; asked again later",
          state.id(), next.revert, spec.bad(), answer.status().ToString());
      RetryLater();
      return false;
    }
    why = absl::StrCat("the builder could not revert ", next.revert, " on bad ", spec.bad(), ": ",
                       answer.status().message());
  } else if (!answer->revert_applies()) {
    why =
        absl::StrCat("the revert of ", next.revert, " does not apply cleanly onto bad ", spec.bad(),
                     answer->error().empty() ? "" : absl::StrCat(" (", answer->error(), ")"));
  }
  if (why.empty()) return true;
  if (absl::Status s = b.commits()->SkipRevertCheck(why); !s.ok()) {
    spdlog::error("nightly: bisect {}: {}", state.id(), s.ToString());
    return false;
  }
  StoreBisectProgress(b.state(), "that the revert check was skipped").IgnoreError();
  return false;
}

void Nightly::AdvanceBisect(const v1::BisectState& state) {
  absl::StatusOr<AnyBisection> b = AnyBisection::Resume(state);
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
  if (!b->WantsRun()) return;
  if (next.kind == bisect::NextAction::Kind::kVerifyRevert && !bisect::HasOpenStep(b->state())) {
    // Asked once, before the step's first run: its rounds measure the same revert.
    if (!CheckRevertApplies(*b, next)) return;
  }
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
  // The lab time of the round, for the report: recorded with the step's result.
  for (v1::BisectStep& step : *state.mutable_steps()) {
    for (v1::BisectRound& round : *step.mutable_rounds()) {
      if (round.run_id() == run.id() && run.finished_unix() >= run.created_unix()) {
        round.set_run_seconds(run.finished_unix() - run.created_unix());
      }
    }
  }
  absl::StatusOr<AnyBisection> b = AnyBisection::Resume(std::move(state));
  if (!b.ok() || b->state().pending_run_id() != run.id()) return absl::OkStatus();  // handled
  absl::Status s;
  if (run.state() == v1::RUN_STATE_SUCCEEDED) {
    s = b->Finished(run.id(), comparator_);
    if (!s.ok()) {
      // The samples cannot be compared (none of the metric, say): asking again changes nothing.
      s = b->RunFailed(run.id(), absl::StrCat("its samples cannot be compared: ", s.message()));
    }
  } else if (std::optional<absl::Status> skipped = SkipUntestable(*b, run); skipped.has_value()) {
    s = *skipped;
  } else {
    s = b->RunFailed(run.id(), run.error().empty() ? v1::RunState_Name(run.state()) : run.error());
  }
  if (!s.ok()) {
    spdlog::error("nightly: bisect {}: {}", b->state().id(), s.ToString());
    return absl::OkStatus();  // not the store's: handling the run again changes nothing
  }
  const v1::BisectState& now = b->state();
  // The stored state still awaits the run when this fails: handling it again redoes this step.
  if (absl::Status saved = StoreBisectProgress(now, absl::StrCat("the result of run ", run.id()));
      !saved.ok()) {
    return saved;
  }
  if (now.status() == v1::BISECT_RUNNING) AdvanceBisect(now);
  return absl::OkStatus();
}

std::optional<absl::Status> Nightly::SkipUntestable(AnyBisection& b, const v1::Run& run) {
  bisect::CommitBisection* commits = b.commits();
  if (commits == nullptr || run.state() != v1::RUN_STATE_FAILED) return std::nullopt;
  // The kernel that could not be tested, and why: a build that failed, or one that built and
  // did not boot (it panicked, the host kept coming back off its entry, it booted another
  // kernel). Either is `git bisect skip` for the tested commit.
  const v1::KernelBuild* failed = nullptr;
  for (const v1::KernelBuild& build : run.builds()) {
    if (build.state() == "failed") failed = &build;
  }
  std::string reason;
  if (failed != nullptr) {
    // A build that went back to the queue for every try but the last failed on builders
    // (disk full, git failed, the builder gone): that says nothing of the commit. Told from
    // the run's build events, not from the words of the reason; a commit that does not build
    // fails at its first try.
    absl::StatusOr<int> requeues = RequeuesOfBuild(controller_, run.id(), failed->task_id());
    if (!requeues.ok()) {
      RetryLater();
      return absl::UnavailableError(
          absl::StrCat("run ", run.id(), ": build ", failed->task_id(),
                       " failed, and its events (a commit that does not build, or a builder that"
                       " failed?) cannot be read: ",
                       requeues.status().message(), "; looked at again later"));
    }
    if (*requeues >= store::builds::kMaxBuildAttempts - 1) return std::nullopt;
    reason =
        absl::StrCat("build failed: ", failed->reason().empty() ? run.error() : failed->reason());
  } else if ((failed = ArmThatDidNotBoot(run)) != nullptr) {
    reason = absl::StrCat("boot failed: ", run.error());
  } else {
    return std::nullopt;
  }
  const v1::BisectState& state = b.state();
  if (!bisect::HasOpenStep(state)) return std::nullopt;
  const v1::BisectStep& step = *state.steps().rbegin();
  const uint32_t number = step.number();  // `step` is the machine's: read it before it changes
  absl::Status s;
  switch (bisect::KindOfStep(step)) {
    case bisect::StepKind::kVerifyRevert:
      if (failed->arm() != bisect::kTestedArm) return std::nullopt;
      s = commits->SkipRevertCheck(absl::StrCat("bad with ", step.tested(), " reverted: ", reason));
      break;
    case bisect::StepKind::kEndpointCheck:
    case bisect::StepKind::kSearch:
      // The arm's revision is the full hash the step asked for: good's or bad's stops the
      // bisection (they are measured in every step), the tested commit's is `git bisect skip`.
      s = commits->Skip(failed->kernel().rev(), reason);
      break;
    case bisect::StepKind::kVerifyParent:
      return std::nullopt;  // both were built and booted before: not the commit's fault
  }
  if (!s.ok()) {
    spdlog::warn("nightly: bisect {}: run {}: {} cannot be tested but cannot be skipped: {}",
                 state.id(), run.id(), failed->kernel().rev(), s.ToString());
    return std::nullopt;
  }
  spdlog::info("nightly: bisect {} step {}: {} skipped ({})", b.state().id(), number,
               failed->kernel().rev(), reason);
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
  absl::StatusOr<AnyBisection> b = AnyBisection::Resume(*state);
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
