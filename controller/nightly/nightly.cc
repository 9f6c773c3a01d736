#include "controller/nightly/nightly.h"

#include <fnmatch.h>
#include <pthread.h>

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "controller/bisect/calibrated.h"
#include "controller/nightly/nightly_internal.h"
#include "controller/nightly/schedules.h"
#include "controller/nightly/series_compare.h"
#include "controller/nightly/series_upkeep.h"
#include "controller/nightly/specs.h"
#include "controller/scheduler/host_fit.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::nightly {

absl::Status CheckBuilderHas(const v1::ListHostsResponse& hosts, const std::string& source,
                             const std::string& config, const std::string& prefix) {
  std::set<std::string> sources;
  std::set<std::string> configs;
  for (const v1::Host& h : hosts.hosts()) {
    for (const v1::KernelSourceInfo& s : h.info().kernel_sources()) {
      sources.insert(s.name());
      if (s.name() == source) configs.insert(s.configs().begin(), s.configs().end());
    }
  }
  if (sources.count(source) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, "source: no builder agent has a kernel source named \"", source, "\" (",
        sources.empty()
            ? std::string("no builder agent has connected (tlbfleet-agent --kernel-sources)")
            : absl::StrCat("sources: ", absl::StrJoin(sources, ", ")),
        ")"));
  }
  if (!config.empty() && configs.count(config) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, "config: source ", source, " has no build config \"", config, "\" (it has ",
        configs.empty() ? std::string("none") : absl::StrJoin(configs, ", "), ")"));
  }
  return absl::OkStatus();
}

namespace {

// A branch's head may need a fetch of a kernel repository first: minutes, not seconds.
constexpr absl::Duration kBranchQueryTimeout = absl::Minutes(3);

// The next slot of an active schedule after `now` (stored schedules carry only the last).
void SetNextSlot(v1::Schedule& s, absl::Time now) {
  if (s.paused()) return;
  absl::StatusOr<CronSchedule> cron = CronSchedule::Parse(s.spec().cron());
  if (!cron.ok()) return;
  const absl::Time from = std::max(now, absl::FromUnixSeconds(s.last_slot_unix()));
  s.set_next_slot_unix(absl::ToUnixSeconds(cron->NextAfter(from)));
}

// "nightly-s3-20261201T0200": unique per schedule and slot, and a valid run name.
std::string SlotRunName(const v1::Schedule& schedule, absl::Time slot) {
  return absl::StrCat(schedule.spec().name(), "-s", schedule.id(), "-",
                      absl::FormatTime("%Y%m%dT%H%M", slot, absl::UTCTimeZone()));
}

Series ToSeries(const v1::Series& stored) {
  Series series;
  const v1::SeriesKey& k = stored.key();
  series.key =
      SeriesKey{k.microarch(), k.boot_entry(), k.config(), k.benchmark(), k.param(), k.metric()};
  series.direction = stored.better() == v1::BETTER_LOWER ? stats::Direction::kLowerIsBetter
                                                         : stats::Direction::kHigherIsBetter;
  for (const v1::SeriesPoint& p : stored.points()) {
    HistoryPoint h;
    h.finished = absl::FromUnixMillis(p.finished_unix_ms());
    h.estimate = p.estimate();
    h.low = p.low();
    h.high = p.high();
    h.confidence = p.confidence();
    h.provenance.run_id = p.run_id();
    h.provenance.arm = p.arm();
    h.provenance.boot_entry = p.boot_entry();
    h.provenance.kernel_release = p.kernel_release();
    h.provenance.commit = p.commit();
    h.provenance.boot_ids.assign(p.boot_ids().begin(), p.boot_ids().end());
    h.provenance.schedule_id = p.schedule_id();
    series.points.push_back(std::move(h));
  }
  return series;
}

v1::ChangeInterval Interval(double estimate, double low, double high) {
  v1::ChangeInterval c;
  c.set_estimate(estimate);
  c.set_low(low);
  c.set_high(high);
  return c;
}

}  // namespace

Nightly::Nightly(core::RunService& controller, store::NightlyStore& store, NightlyOptions options)
    : controller_(controller),
      store_(store),
      options_(std::move(options)),
      comparator_(bisect::MakeStepComparator([this](const std::string& run_id) {
        absl::StatusOr<v1::GetResultsResponse> r = controller_.GetResults(run_id);
        if (!r.ok()) return absl::StatusOr<std::vector<v1::Sample>>(r.status());
        return absl::StatusOr<std::vector<v1::Sample>>(
            std::vector<v1::Sample>(r->samples().begin(), r->samples().end()));
      })),
      series_comparison_(MakeSeriesComparison([this](const std::string& run_id) {
        absl::StatusOr<v1::GetResultsResponse> r = controller_.GetResults(run_id);
        if (!r.ok()) return absl::StatusOr<std::vector<v1::Sample>>(r.status());
        return absl::StatusOr<std::vector<v1::Sample>>(
            std::vector<v1::Sample>(r->samples().begin(), r->samples().end()));
      })),
      retry_delay_(options_.retry_min) {}

Nightly::~Nightly() { Stop(); }

int64_t Nightly::NowMs() const { return absl::ToUnixMillis(absl::Now()); }

void Nightly::Start() {
  absl::MutexLock lock(&mu_);
  stopping_ = false;
  worker_ = std::thread([this] { Loop(); });
}

void Nightly::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (worker_.joinable()) worker_.join();
}

void Nightly::OnRunFinished(const v1::Run& run) {
  absl::MutexLock lock(&mu_);
  finished_.push_back(run.id());
}

void Nightly::RunPendingForTest() {
  absl::MutexLock lock(&work_mu_);
  if (!recovered_) Recover();
  Pass();
}

void Nightly::Loop() {
  // Named for operators (top -H, gdb) and for the fault tests, which stop this thread alone.
  pthread_setname_np(pthread_self(), "tlbf-nightly");
  {
    absl::MutexLock lock(&work_mu_);
    Recover();
  }
  for (;;) {
    absl::Time next;
    {
      absl::MutexLock lock(&work_mu_);
      next = Pass();
    }
    absl::MutexLock lock(&mu_);
    // The clock may be a test's file: never sleep past `poll` without looking at it again.
    const absl::Duration wait =
        std::clamp(next - options_.clock->Now(), absl::ZeroDuration(), options_.poll);
    auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return stopping_ || wake_ || !finished_.empty();
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), wait);
    wake_ = false;
    if (stopping_) return;
  }
}

// --- the worker's pass --------------------------------------------------------------------

absl::Time Nightly::Pass() {
  std::vector<std::string> arrived;
  {
    absl::MutexLock lock(&mu_);
    arrived.assign(finished_.begin(), finished_.end());
    finished_.clear();
  }
  const absl::Time now = options_.clock->Now();
  absl::Time next = now + options_.poll;
  auto queue_for_retry = [this](const std::string& run_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_) {
    if (std::find(retry_runs_.begin(), retry_runs_.end(), run_id) == retry_runs_.end()) {
      retry_runs_.push_back(run_id);
    }
  };
  if (absl::Now() < retry_at_) {
    // Backing off after a failure: what arrived waits with the rest.
    for (const std::string& run_id : arrived) queue_for_retry(run_id);
    return next;
  }
  failed_in_pass_ = false;
  if (recover_again_) {
    recover_again_ = false;
    Recover();
  }
  // Runs to redo first (they finished earlier), each once per pass.
  std::vector<std::string> runs(retry_runs_.begin(), retry_runs_.end());
  retry_runs_.clear();
  runs.insert(runs.end(), arrived.begin(), arrived.end());
  std::set<std::string> handled;
  for (const std::string& run_id : runs) {
    if (!handled.insert(run_id).second) continue;
    if (!HandleFinishedRun(run_id).ok()) queue_for_retry(run_id);
  }
  RecheckSeries();
  FireDueSchedules(now, &next);
  if (failed_in_pass_) {
    retry_at_ = absl::Now() + retry_delay_;
    retry_delay_ = std::min(retry_delay_ * 2, options_.retry_max);
  } else {
    retry_delay_ = options_.retry_min;
  }
  return next;
}

void Nightly::FireDueSchedules(absl::Time now, absl::Time* next_wakeup) {
  absl::StatusOr<std::vector<v1::Schedule>> schedules = store_.ListSchedules();
  if (!schedules.ok()) {
    StoreFailed(StoreOp::kRead, "reading the schedules (due slots wait)",
                schedules.status());  // the next pass reads them again
    return;
  }
  std::vector<ScheduleState> states;
  std::map<std::string, const v1::Schedule*> by_id;
  for (const v1::Schedule& s : *schedules) {
    absl::StatusOr<CronSchedule> cron = CronSchedule::Parse(s.spec().cron());
    if (!cron.ok()) continue;  // checked when added; a damaged row is not run
    states.push_back(
        ScheduleState{s.id(), *cron, s.paused(), absl::FromUnixSeconds(s.last_slot_unix())});
    by_id[s.id()] = &s;
  }
  for (const DueRun& due : TakeDue(&states, now)) {
    const v1::Schedule& schedule = *by_id[due.schedule_id];
    const std::string name = SlotRunName(schedule, due.slot);
    const std::string slot = absl::FormatTime("%Y-%m-%dT%H:%MZ", due.slot, absl::UTCTimeZone());
    // A schedule that follows a branch measures its head of tonight: resolved (and fetched)
    // before the slot is taken, so that the run stored with the slot names the commit. A
    // builder that cannot answer now leaves the slot due; a branch that is gone is the night's
    // refusal.
    v1::KernelRevision head;
    absl::StatusOr<std::string> yaml = absl::UnknownError("");
    if (schedule.spec().has_kernel()) {
      absl::StatusOr<v1::GitAnswer> answer = ResolveBranchHead(schedule.spec().kernel(), true);
      if (!answer.ok() && !absl::IsInvalidArgument(answer.status())) {
        spdlog::warn("nightly: schedule {} ({}) slot {}: {}; the slot waits for a builder",
                     schedule.id(), schedule.spec().name(), slot, answer.status().ToString());
        RetryLater();
        continue;
      }
      if (answer.ok()) {
        head.set_source(schedule.spec().kernel().source());
        head.set_rev(answer->resolved());
        head.set_config(schedule.spec().kernel().config());
        head.set_branch(schedule.spec().kernel().branch());
        spdlog::info("nightly: schedule {} ({}) slot {}: {} {} is at {}{}", schedule.id(),
                     schedule.spec().name(), slot, head.source(), head.branch(), head.rev(),
                     answer->commits_size() > 0
                         ? absl::StrCat(" (", answer->commits(0).subject(), ")")
                         : std::string());
        yaml = ScheduledRunYaml(schedule.spec(), name, &head);
      } else {
        yaml = answer.status();
      }
    } else {
      yaml = ScheduledRunYaml(schedule.spec(), name);
    }
    store::Submission submission{name, ScheduleOwner(schedule.id()), yaml.ok() ? *yaml : "", ""};
    if (absl::Status s =
            store_.TakeSlot(schedule.id(), absl::ToUnixMillis(due.slot), submission, NowMs());
        !s.ok()) {
      if (absl::IsFailedPrecondition(s)) {
        spdlog::warn("nightly: schedule {} slot {}: {}", schedule.id(), slot, s.ToString());
      } else {
        // The slot's last_slot_ms did not move: it is still due at the next pass.
        StoreFailed(StoreOp::kWrite,
                    absl::StrCat("schedule ", schedule.id(), " (", schedule.spec().name(),
                                 ") slot ", slot, ": taking the slot for run ", name),
                    s);
      }
      continue;
    }
    absl::StatusOr<std::string> run_id =
        yaml.ok() ? SubmitOnce(submission) : absl::StatusOr<std::string>(yaml.status());
    if (!run_id.ok()) {
      if (RetryableFailure(run_id.status())) {
        // The submission stays pending: the recovery submits it (or finds it) later.
        spdlog::error(
            "nightly: schedule {} ({}) slot {}: run {} could not be submitted, trying "
            "again later: {}",
            schedule.id(), schedule.spec().name(), slot, name, run_id.status().ToString());
        RetryLater();
        continue;
      }
      spdlog::error("nightly: schedule {} ({}) slot {}: the run was refused: {}", schedule.id(),
                    schedule.spec().name(), slot, run_id.status().ToString());
      if (absl::Status s = store_.RecordSubmission(name, "-", nullptr, NowMs()); !s.ok()) {
        // Still pending: the recovery asks again and records the refusal then.
        StoreFailed(StoreOp::kWrite, absl::StrCat("recording that run ", name, " was refused"), s);
      }
      continue;
    }
    spdlog::info("nightly: schedule {} ({}) slot {}{}: run {}", schedule.id(),
                 schedule.spec().name(), slot,
                 due.skipped > 0 ? absl::StrCat(" (", due.skipped, " missed slots folded in)") : "",
                 *run_id);
    if (absl::Status s = store_.RecordSubmission(name, *run_id, nullptr, NowMs()); !s.ok()) {
      // The recovery finds the run by its name and records it.
      StoreFailed(StoreOp::kWrite,
                  absl::StrCat("schedule ", schedule.id(), " slot ", slot, ": recording run ",
                               *run_id, " (", name, ")"),
                  s);
    }
  }
  *next_wakeup = std::min(*next_wakeup, NextWakeUp(states, now));
}

// --- history ------------------------------------------------------------------------------

absl::Status Nightly::HandleFinishedRun(const std::string& run_id) {
  absl::StatusOr<bool> seen = store_.RunSeen(run_id);
  if (!seen.ok()) {
    StoreFailed(StoreOp::kRead, absl::StrCat("run ", run_id, ": was it handled?"), seen.status());
    return seen.status();
  }
  if (*seen) return absl::OkStatus();
  absl::StatusOr<v1::Run> run = controller_.GetRun(run_id);
  if (absl::IsNotFound(run.status())) {
    spdlog::warn("nightly: run {} finished but is gone: {}", run_id, run.status().ToString());
    return absl::OkStatus();
  }
  if (!run.ok()) {
    spdlog::error("nightly: run {}: {}; handled again later", run_id, run.status().ToString());
    RetryLater();
    return run.status();
  }
  // Whose run it is decides where it goes: never guessed from a failed read.
  absl::StatusOr<std::optional<store::Submission>> submission = SubmissionOf(*run);
  if (!submission.ok()) return submission.status();
  const std::string owner = submission->has_value() ? (*submission)->owner : std::string();
  if (const std::string bisect_id = BisectOfOwner(owner); !bisect_id.empty()) {
    // A bisection's measurement: its steps judge it; it adds nothing to the history.
    absl::StatusOr<v1::BisectState> state = store_.GetBisect(bisect_id);
    if (state.ok()) {
      if (absl::Status s = BisectRunFinished(*std::move(state), *run); !s.ok()) return s;
    } else if (!absl::IsNotFound(state.status())) {
      StoreFailed(StoreOp::kRead, absl::StrCat("bisect ", bisect_id, " of run ", run_id),
                  state.status());
      return state.status();
    }
  } else if (run->state() == v1::RUN_STATE_SUCCEEDED) {
    const std::string schedule_id = ScheduleOfOwner(owner);
    std::optional<v1::Schedule> schedule;
    if (!schedule_id.empty()) {
      absl::StatusOr<v1::Schedule> s = store_.GetSchedule(schedule_id);
      if (s.ok()) {
        schedule = *std::move(s);
      } else if (!absl::IsNotFound(s.status())) {  // removed since: its run still counts
        StoreFailed(StoreOp::kRead, absl::StrCat("schedule ", schedule_id, " of run ", run_id),
                    s.status());
        return s.status();
      }
    }
    absl::StatusOr<v1::GetResultsResponse> results = controller_.GetResults(run_id);
    if (!results.ok()) {
      spdlog::error("nightly: samples of run {}: {}; handled again later", run_id,
                    results.status().ToString());
      RetryLater();
      return results.status();
    }
    const std::vector<v1::Sample> samples(results->samples().begin(), results->samples().end());
    absl::StatusOr<std::vector<std::string>> touched =
        store_.AppendRun(run_id, PointsFromRun(*run, samples, schedule_id), NowMs());
    if (!touched.ok()) {
      StoreFailed(StoreOp::kWrite, absl::StrCat("appending the points of run ", run_id),
                  touched.status());
      return touched.status();
    }
    for (const std::string& series_id : *touched) {
      if (!DetectChanges(series_id, schedule.has_value() ? &*schedule : nullptr).ok()) {
        recheck_series_[series_id] = schedule_id;
      }
    }
    return absl::OkStatus();
  }
  // Nothing for the history: remembered as handled, so that a restart does not look again.
  if (absl::StatusOr<std::vector<std::string>> marked = store_.AppendRun(run_id, {}, NowMs());
      !marked.ok()) {
    StoreFailed(StoreOp::kWrite, absl::StrCat("marking run ", run_id, " handled"), marked.status());
    return marked.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<store::Submission>> Nightly::SubmissionOf(const v1::Run& run) {
  absl::StatusOr<std::optional<store::Submission>> by_id = store_.SubmissionOfRun(run.id());
  if (!by_id.ok()) {
    StoreFailed(StoreOp::kRead, absl::StrCat("run ", run.id(), ": whose run is it?"),
                by_id.status());
    return by_id.status();
  }
  if (by_id->has_value() || run.spec().name().empty()) return by_id;
  // Not recorded under its id: its recording may have failed after it was submitted.
  absl::StatusOr<std::optional<store::Submission>> named =
      store_.SubmissionNamed(run.spec().name());
  if (!named.ok()) {
    StoreFailed(StoreOp::kRead, absl::StrCat("run ", run.id(), ": whose run is it?"),
                named.status());
    return named.status();
  }
  if (!named->has_value()) return named;  // submitted by hand
  const store::Submission& s = **named;
  if (s.run_id.empty()) {
    spdlog::warn("nightly: run {} is {}'s run {}, not recorded yet; handled once it is", run.id(),
                 s.owner, s.name);
    RetryLater();
    return absl::UnavailableError(
        absl::StrCat("run ", run.id(), " (", s.name, ") of ", s.owner, " is not recorded yet"));
  }
  // Given up ("-") though its run exists after all: still the owner's, kept out of the
  // history. Recorded with another run: a run by hand that took the name.
  if (s.run_id == "-") return named;
  return std::optional<store::Submission>();
}

absl::Status Nightly::DetectChanges(const std::string& series_id, const v1::Schedule* schedule) {
  absl::StatusOr<v1::Series> stored = store_.GetSeries(series_id, true);
  if (!stored.ok()) {
    StoreFailed(StoreOp::kRead, absl::StrCat("series ", series_id, " (searched again later)"),
                stored.status());
    return stored.status();
  }
  absl::StatusOr<std::set<std::string>> known = store_.KnownFindings(series_id);
  if (!known.ok()) {
    StoreFailed(StoreOp::kRead,
                absl::StrCat("findings of series ", series_id, " (searched again later)"),
                known.status());
    return known.status();
  }
  const Series series = ToSeries(*stored);
  RegressionOptions options = options_.regression;
  if (schedule != nullptr && schedule->spec().has_detection()) {
    options.detector = DetectorOptions(schedule->spec().detection());
    options.drift_opens_regression = schedule->spec().detection().drift_opens_regression();
  }
  absl::StatusOr<std::vector<Finding>> findings =
      FindChanges(series, options, series_comparison_, *known);
  if (!findings.ok()) {
    // Not the store's: the series is searched again with its next point.
    spdlog::error("nightly: series {} ({}): {}", series_id, series.key.ToString(),
                  findings.status().ToString());
    return absl::OkStatus();
  }
  absl::Status result;
  for (const Finding& f : *findings) {
    spdlog::info("nightly: series {} ({}): {} at run {} (after {}): {}", series_id,
                 series.key.ToString(), FindingKindName(f.kind), f.first_bad_run, f.last_good_run,
                 f.verdict.summary);
    if (f.kind == Finding::Kind::kImprovement) {
      if (absl::Status s = store_.AddImprovement(series_id, f.first_bad_run); !s.ok()) {
        StoreFailed(StoreOp::kWrite,
                    absl::StrCat("series ", series_id, ": recording the improvement at run ",
                                 f.first_bad_run, " (searched again later)"),
                    s);
        result.Update(s);
      }
      continue;
    }
    if (f.kind != Finding::Kind::kRegression) continue;  // unconfirmed: judged again later
    v1::Regression r;
    r.set_series_id(series_id);
    *r.mutable_series() = stored->key();
    r.set_better(stored->better());
    r.set_first_bad_run(f.first_bad_run);
    r.set_last_good_run(f.last_good_run);
    r.set_index(static_cast<uint32_t>(f.index));
    if (f.drift) {
      const stats::Trend& t = *f.drift;
      r.set_drift(true);
      r.set_drift_points(static_cast<uint32_t>(t.end - t.begin));
      if (t.level > 0) {
        *r.mutable_drift_slope() =
            Interval(t.slope / t.level, t.slope_low / t.level, t.slope_high / t.level);
      }
      if (t.relative_change) {
        const double points = static_cast<double>(t.end - t.begin);
        *r.mutable_relative() = Interval(*t.relative_change, t.slope_low * points / t.level,
                                         t.slope_high * points / t.level);
      }
      r.set_p(t.p);
      r.set_note(absl::StrCat("a drift over ", t.end - t.begin,
                              " nights, not a step: no commit to bisect to"));
    } else {
      const stats::ChangeEstimate& e = f.change.estimate;
      if (e.relative) {
        *r.mutable_relative() = Interval(*e.relative, e.relative_low.value_or(*e.relative),
                                         e.relative_high.value_or(*e.relative));
      }
      r.set_p(f.change.p);
    }
    *r.mutable_ratio() = Interval(f.verdict.ratio, f.verdict.ratio_low, f.verdict.ratio_high);
    r.set_summary(f.verdict.summary);
    r.set_schedule_id(schedule != nullptr ? schedule->id() : "");
    if (f.index > 0) {
      r.set_good_kernel(stored->points(static_cast<int>(f.index) - 1).kernel_release());
    }
    r.set_bad_kernel(stored->points(static_cast<int>(f.index)).kernel_release());
    // Kernels built from source: the change lies between the two nights' commits.
    if (f.index > 0) {
      r.set_good_commit(stored->points(static_cast<int>(f.index) - 1).commit());
    }
    r.set_bad_commit(stored->points(static_cast<int>(f.index)).commit());
    if (!r.bad_commit().empty() && schedule != nullptr && schedule->spec().has_kernel()) {
      r.set_kernel_source(schedule->spec().kernel().source());
    }
    absl::StatusOr<v1::Regression> added = store_.AddRegression(r, NowMs());
    if (absl::IsAlreadyExists(added.status())) {
      // Recorded by an attempt whose outcome was not known; its bisection, if any, is the
      // recovery's to start.
      spdlog::info("nightly: series {}: {}", series_id, std::string(added.status().message()));
      continue;
    }
    if (!added.ok()) {
      StoreFailed(StoreOp::kWrite,
                  absl::StrCat("series ", series_id, ": recording the regression at run ",
                               f.first_bad_run, " (searched again later)"),
                  added.status());
      result.Update(added.status());
      continue;
    }
    spdlog::warn("nightly: regression {} of {}: first bad run {}, last good run {} ({})",
                 added->id(), series.key.ToString(), f.first_bad_run, f.last_good_run,
                 f.verdict.summary);
    if (schedule != nullptr && !f.drift &&
        schedule->spec().on_regression().action() == v1::OnRegression::ACTION_BISECT) {
      StartRegressionBisect(*added, *schedule, stored->points(static_cast<int>(f.index)).arm());
    }
  }
  return result;
}

void Nightly::RecheckSeries() {
  for (auto it = recheck_series_.begin(); it != recheck_series_.end();) {
    const auto& [series_id, schedule_id] = *it;
    std::optional<v1::Schedule> schedule;
    if (!schedule_id.empty()) {
      absl::StatusOr<v1::Schedule> s = store_.GetSchedule(schedule_id);
      if (s.ok()) {
        schedule = *std::move(s);
      } else if (!absl::IsNotFound(s.status())) {
        StoreFailed(StoreOp::kRead,
                    absl::StrCat("schedule ", schedule_id, " of series ", series_id), s.status());
        ++it;
        continue;
      }
    }
    if (DetectChanges(series_id, schedule.has_value() ? &*schedule : nullptr).ok()) {
      it = recheck_series_.erase(it);
    } else {
      ++it;
    }
  }
}

void Nightly::StartRegressionBisect(const v1::Regression& regression, const v1::Schedule& schedule,
                                    const std::string& arm) {
  if (schedule.spec().has_kernel()) {
    StartRegressionCommitBisect(regression, schedule, arm);
    return;
  }
  const v1::OnRegression& on = schedule.spec().on_regression();
  v1::BisectSpec spec;
  spec.mutable_entries()->CopyFrom(on.entries());
  spec.set_boots_per_round(on.boots_per_round());
  spec.set_max_boots_per_step(on.max_boots_per_step());
  spec.set_metric(regression.series().metric());
  spec.set_param(regression.series().param());
  spec.set_regression_id(regression.id());
  // The ends: as the schedule names them, else the entries that boot the last good and first
  // bad runs' kernels (the agents' expectations of their entries).
  std::string good = on.good();
  std::string bad = on.bad();
  if (good.empty() || bad.empty()) {
    absl::StatusOr<v1::ListHostsResponse> hosts = controller_.ListHosts();
    if (!hosts.ok()) {
      // Without the hosts no entry can be matched: that is no reason to give up the bisection.
      spdlog::error("nightly: regression {}: listing hosts: {}; its bisection starts later",
                    regression.id(), hosts.status().ToString());
      RetryLater();
      return;
    }
    std::map<std::string, std::string> release_of;
    for (const v1::Host& h : hosts->hosts()) {
      for (const v1::BootEntryInfo& e : h.info().boot_entries()) release_of[e.name()] = e.release();
    }
    auto entry_booting = [&](const std::string& kernel) {
      for (const std::string& e : on.entries()) {
        auto it = release_of.find(e);
        if (it != release_of.end() && !it->second.empty() &&
            ::fnmatch(it->second.c_str(), kernel.c_str(), 0) == 0) {
          return e;
        }
      }
      return std::string();
    };
    if (good.empty()) good = entry_booting(regression.good_kernel());
    if (bad.empty()) bad = entry_booting(regression.bad_kernel());
  }
  spec.set_good(good);
  spec.set_bad(bad);
  absl::StatusOr<v1::BisectState> started = absl::InvalidArgumentError("");
  if (good.empty() || bad.empty()) {
    started = absl::InvalidArgumentError(
        absl::StrCat("no entry of on_regression.entries boots ",
                     good.empty() ? regression.good_kernel() : regression.bad_kernel()));
  } else {
    // The schedule's run, measuring the regressed series' arm on each entry.
    absl::StatusOr<std::string> yaml = BisectRunYamlFromSchedule(schedule.spec(), arm);
    if (yaml.ok()) {
      spec.set_run_yaml(*yaml);
      // On success the regression names the bisection (stored with it, in one transaction).
      started = CreateBisect(spec);
    } else {
      started = yaml.status();
    }
  }
  if (started.ok()) return;
  if (RetryableFailure(started.status())) {
    // Logged and counted where it failed; the regression keeps no note, so the recovery
    // starts its bisection again.
    RetryLater();
    return;
  }
  const std::string note = absl::StrCat("no bisection: ", started.status().message());
  spdlog::warn("nightly: regression {}: {}", regression.id(), note);
  if (absl::Status s = store_.SetRegressionNote(regression.id(), note, NowMs()); !s.ok()) {
    // Without its note the regression is taken up again by the recovery, and refused again.
    StoreFailed(StoreOp::kWrite,
                absl::StrCat("regression ", regression.id(), ": noting \"", note, "\""), s);
  }
}

void Nightly::StartRegressionCommitBisect(const v1::Regression& regression,
                                          const v1::Schedule& schedule, const std::string& arm) {
  const v1::KernelBranch& kernel = schedule.spec().kernel();
  const v1::OnRegression& on = schedule.spec().on_regression();
  absl::StatusOr<v1::BisectState> started = absl::InvalidArgumentError("");
  if (regression.good_commit().empty() || regression.bad_commit().empty()) {
    started = absl::InvalidArgumentError(
        "the last good or the first bad night recorded no commit (was it built from source?)");
  } else if (absl::StrContains(regression.good_commit(), ",") ||
             absl::StrContains(regression.bad_commit(), ",")) {
    started = absl::InvalidArgumentError(
        absl::StrCat("a night measured several commits (", regression.good_commit(), " .. ",
                     regression.bad_commit(), "): no single range to bisect"));
  } else if (regression.good_commit() == regression.bad_commit()) {
    started = absl::InvalidArgumentError(
        absl::StrCat("both nights measured commit ", regression.bad_commit(),
                     ": the change is not in the source (the machine, the toolchain or noise)"));
  } else {
    v1::BisectSpec spec;
    spec.set_boots_per_round(on.boots_per_round());
    spec.set_max_boots_per_step(on.max_boots_per_step());
    spec.set_metric(regression.series().metric());
    spec.set_param(regression.series().param());
    spec.set_regression_id(regression.id());
    v1::BisectCommits* commits = spec.mutable_commits();
    commits->set_source(kernel.source());
    commits->set_config(kernel.config());
    commits->set_good_rev(regression.good_commit());
    commits->set_bad_rev(regression.bad_commit());
    absl::Status resolved = ResolveCommits(&spec);
    if (absl::IsFailedPrecondition(resolved)) {
      // No builder can answer now: that is no reason to give up the bisection.
      resolved = absl::UnavailableError(resolved.message());
    }
    if (!resolved.ok()) {
      started = resolved;
    } else if (absl::StatusOr<std::string> yaml = BisectRunYamlFromSchedule(schedule.spec(), arm);
               !yaml.ok()) {
      started = yaml.status();
    } else {
      spec.set_run_yaml(*yaml);
      started = CreateBisect(spec);
    }
  }
  if (started.ok()) return;
  if (RetryableFailure(started.status())) {
    spdlog::warn("nightly: regression {}: its bisection over {} {}..{} starts later: {}",
                 regression.id(), kernel.source(), regression.good_commit(),
                 regression.bad_commit(), started.status().ToString());
    RetryLater();
    return;
  }
  const std::string note = absl::StrCat("no bisection: ", started.status().message());
  spdlog::warn("nightly: regression {}: {}", regression.id(), note);
  if (absl::Status s = store_.SetRegressionNote(regression.id(), note, NowMs()); !s.ok()) {
    StoreFailed(StoreOp::kWrite,
                absl::StrCat("regression ", regression.id(), ": noting \"", note, "\""), s);
  }
}

absl::StatusOr<v1::GitAnswer> Nightly::ResolveBranchHead(const v1::KernelBranch& kernel,
                                                         bool fetch) {
  absl::StatusOr<v1::ListHostsResponse> hosts = controller_.ListHosts();
  if (!hosts.ok()) return hosts.status();
  if (absl::Status s = CheckBuilderHas(*hosts, kernel.source(), kernel.config(), "kernel.");
      !s.ok()) {
    return s;
  }
  v1::GitQuery query;
  query.set_kind(v1::GitQuery::KIND_BRANCH);
  query.set_source(kernel.source());
  query.set_rev(kernel.branch());
  query.set_fetch(fetch);
  absl::StatusOr<v1::GitAnswer> answer = controller_.QueryGit(query, kBranchQueryTimeout);
  if (answer.ok() && answer->resolved().empty()) {
    return absl::UnavailableError(
        absl::StrCat("kernel.branch: the builder resolved \"", kernel.branch(), "\" to nothing"));
  }
  if (absl::IsInvalidArgument(answer.status())) {
    return absl::InvalidArgumentError(absl::StrCat("kernel.branch: ", answer.status().message()));
  }
  if (!answer.ok()) {
    // Not UNAVAILABLE: to a client that means the controller itself could not be reached.
    return absl::FailedPreconditionError(
        absl::StrCat("kernel.branch: no builder of source ", kernel.source(),
                     " could answer now (try again): ", answer.status().message()));
  }
  return answer;
}

// --- user API: schedules and history -------------------------------------------------------

absl::StatusOr<v1::Schedule> Nightly::AddSchedule(const std::string& yaml,
                                                  const std::string& source) {
  absl::StatusOr<v1::ScheduleSpec> spec = ParseScheduleSpec(yaml, source);
  if (!spec.ok()) return spec.status();
  if (spec->has_kernel()) {
    // A branch the builders do not have would fail every night: refused now, naming it.
    absl::StatusOr<v1::GitAnswer> head = ResolveBranchHead(spec->kernel(), true);
    if (!head.ok()) return head.status();
    spdlog::info("nightly: schedule {}: {} {} is at {} now", spec->name(), spec->kernel().source(),
                 spec->kernel().branch(), head->resolved());
  }
  const absl::Time now = options_.clock->Now();
  absl::StatusOr<v1::Schedule> added =
      Counted(StoreOp::kWrite, store_.AddSchedule(*spec, yaml, absl::ToUnixMillis(now)));
  if (!added.ok()) return added.status();
  SetNextSlot(*added, now);
  spdlog::info(
      "nightly: schedule {} ({}) added: \"{}\" UTC, on regression: {}", added->id(), spec->name(),
      spec->cron(),
      spec->on_regression().action() == v1::OnRegression::ACTION_BISECT ? "bisect" : "alert");
  absl::MutexLock lock(&mu_);
  wake_ = true;
  return added;
}

absl::StatusOr<v1::ListSchedulesResponse> Nightly::ListSchedules() {
  absl::StatusOr<std::vector<v1::Schedule>> schedules =
      Counted(StoreOp::kRead, store_.ListSchedules());
  if (!schedules.ok()) return schedules.status();
  const absl::Time now = options_.clock->Now();
  v1::ListSchedulesResponse response;
  for (v1::Schedule& s : *schedules) {
    SetNextSlot(s, now);
    *response.add_schedules() = std::move(s);
  }
  return response;
}

absl::StatusOr<v1::Schedule> Nightly::PauseSchedule(const std::string& id) {
  return Counted(StoreOp::kWrite,
                 store_.SetPaused(id, true, absl::ToUnixMillis(options_.clock->Now())));
}

absl::StatusOr<v1::Schedule> Nightly::ResumeSchedule(const std::string& id) {
  const absl::Time now = options_.clock->Now();
  absl::StatusOr<v1::Schedule> s =
      Counted(StoreOp::kWrite, store_.SetPaused(id, false, absl::ToUnixMillis(now)));
  if (s.ok()) SetNextSlot(*s, now);
  absl::MutexLock lock(&mu_);
  wake_ = true;
  return s;
}

absl::StatusOr<v1::Schedule> Nightly::RemoveSchedule(const std::string& id) {
  return Counted(StoreOp::kWrite, store_.RemoveSchedule(id));
}

absl::StatusOr<v1::ListSeriesResponse> Nightly::ListSeries(const v1::ListSeriesRequest& request) {
  absl::StatusOr<std::vector<v1::Series>> series =
      Counted(StoreOp::kRead,
              store_.ListSeries(request.benchmark(), request.metric(), request.with_points()));
  if (!series.ok()) return series.status();
  v1::ListSeriesResponse response;
  for (v1::Series& s : *series) *response.add_series() = std::move(s);
  return response;
}

absl::StatusOr<v1::ListRegressionsResponse> Nightly::ListRegressions(
    const v1::ListRegressionsRequest& request) {
  std::vector<v1::RegressionStatus> statuses;
  for (int s : request.statuses()) statuses.push_back(static_cast<v1::RegressionStatus>(s));
  absl::StatusOr<std::vector<v1::Regression>> list =
      Counted(StoreOp::kRead, store_.ListRegressions(statuses, request.limit()));
  if (!list.ok()) return list.status();
  v1::ListRegressionsResponse response;
  for (v1::Regression& r : *list) *response.add_regressions() = std::move(r);
  return response;
}

absl::StatusOr<v1::Regression> Nightly::UpdateRegression(
    const v1::UpdateRegressionRequest& request) {
  if (request.status() == v1::REGRESSION_STATUS_UNSPECIFIED) {
    return absl::InvalidArgumentError("status: required (open, acknowledged or fixed)");
  }
  // One transaction: a note the worker writes meanwhile is kept.
  return Counted(StoreOp::kWrite,
                 store_.SetRegressionStatus(request.id(), request.status(), NowMs()));
}

absl::StatusOr<std::map<std::string, int>> OpenRegressionsBySeries(Nightly& nightly) {
  v1::ListRegressionsRequest request;
  request.add_statuses(v1::REGRESSION_OPEN);
  absl::StatusOr<v1::ListRegressionsResponse> open = nightly.ListRegressions(request);
  if (!open.ok()) return open.status();
  std::map<std::string, int> by_series;
  for (const v1::Regression& r : open->regressions()) ++by_series[SeriesLabel(r.series())];
  return by_series;
}

}  // namespace tlbfleet::nightly
