#include "controller/nightly/nightly.h"

#include <fnmatch.h>

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "controller/bisect/calibrated.h"
#include "controller/nightly/schedules.h"
#include "controller/nightly/series_compare.h"
#include "controller/nightly/series_upkeep.h"
#include "controller/nightly/specs.h"
#include "controller/scheduler/host_fit.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::nightly {
namespace {

// The next slot of an active schedule after `now` (stored schedules carry only the last).
void SetNextSlot(v1::Schedule& s, absl::Time now) {
  if (s.paused()) return;
  absl::StatusOr<CronSchedule> cron = CronSchedule::Parse(s.spec().cron());
  if (!cron.ok()) return;
  const absl::Time from = std::max(now, absl::FromUnixSeconds(s.last_slot_unix()));
  s.set_next_slot_unix(absl::ToUnixSeconds(cron->NextAfter(from)));
}

constexpr char kSchedulePrefix[] = "schedule:";
constexpr char kBisectPrefix[] = "bisect:";

bool Terminal(v1::RunState state) {
  return state == v1::RUN_STATE_SUCCEEDED || state == v1::RUN_STATE_FAILED ||
         state == v1::RUN_STATE_CANCELLED;
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

Nightly::Nightly(core::Controller& controller, store::NightlyStore& store, NightlyOptions options)
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
      })) {}

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

// --- recovery -----------------------------------------------------------------------------

void Nightly::Recover() {
  recovered_ = true;
  // Runs submitted but not recorded: a crash came between the two.
  absl::StatusOr<std::vector<store::Submission>> pending = store_.PendingSubmissions();
  if (!pending.ok()) {
    spdlog::error("nightly: reading pending submissions: {}", pending.status().ToString());
  } else {
    for (const store::Submission& s : *pending) {
      absl::StatusOr<std::string> run_id = SubmitOnce(s);
      if (!run_id.ok()) {
        spdlog::error("nightly: run {} ({}) could not be submitted: {}", s.name, s.owner,
                      run_id.status().ToString());
        (void)store_.RecordSubmission(s.name, "-", nullptr, NowMs());
        continue;
      }
      const v1::BisectState* recorded = nullptr;
      v1::BisectState state;
      if (absl::StartsWith(s.owner, kBisectPrefix)) {
        absl::StatusOr<v1::BisectState> stored =
            store_.GetBisect(s.owner.substr(sizeof(kBisectPrefix) - 1));
        if (stored.ok()) {
          absl::StatusOr<bisect::Bisection> b = bisect::Bisection::Resume(*stored);
          if (b.ok() && b->Next().kind == bisect::NextAction::Kind::kMeasure &&
              b->Submitted(*run_id).ok()) {
            state = b->state();
            recorded = &state;
          }
        }
      }
      spdlog::info("nightly: recovered run {} of {} ({})", *run_id, s.owner, s.name);
      if (absl::Status st = store_.RecordSubmission(s.name, *run_id, recorded, NowMs()); !st.ok()) {
        spdlog::error("nightly: recording run {}: {}", *run_id, st.ToString());
      }
    }
  }
  // Bisections that were waiting: submit what they want, or take their run's end.
  absl::StatusOr<std::vector<v1::BisectState>> running = store_.ListBisects(0, true);
  if (running.ok()) {
    for (v1::BisectState& state : *running) AdvanceBisect(std::move(state));
  }
  // Runs that finished while nobody was watching, oldest first.
  v1::ListRunsRequest ended;
  ended.set_limit(std::min<uint32_t>(options_.recover_runs, 1000));
  for (v1::RunState state :
       {v1::RUN_STATE_SUCCEEDED, v1::RUN_STATE_FAILED, v1::RUN_STATE_CANCELLED}) {
    ended.add_states(state);
  }
  absl::StatusOr<v1::ListRunsResponse> runs = controller_.ListRuns(ended);
  if (runs.ok()) {
    std::vector<std::string> unseen;
    for (const v1::Run& run : runs->runs()) {
      if (!Terminal(run.state())) continue;
      absl::StatusOr<bool> seen = store_.RunSeen(run.id());
      if (seen.ok() && !*seen) unseen.push_back(run.id());
    }
    absl::MutexLock lock(&mu_);
    for (auto it = unseen.rbegin(); it != unseen.rend(); ++it) finished_.push_front(*it);
  }
}

absl::StatusOr<std::string> Nightly::SubmitOnce(const store::Submission& submission) {
  // Submitted before a crash? The name is unique (nightly_submissions); the filter is a
  // substring match, so compare exactly.
  v1::ListRunsRequest named;
  named.set_limit(1000);
  named.set_name(submission.name);
  absl::StatusOr<v1::ListRunsResponse> runs = controller_.ListRuns(named);
  if (runs.ok()) {
    for (const v1::Run& run : runs->runs()) {
      if (run.spec().name() == submission.name) return run.id();
    }
  }
  absl::StatusOr<v1::SubmitRunResponse> submitted =
      controller_.Submit(submission.spec_yaml, submission.name);
  if (!submitted.ok()) return submitted.status();
  return submitted->run_id();
}

// --- the worker's pass --------------------------------------------------------------------

absl::Time Nightly::Pass() {
  for (;;) {
    std::string run_id;
    {
      absl::MutexLock lock(&mu_);
      if (finished_.empty()) break;
      run_id = finished_.front();
      finished_.pop_front();
    }
    HandleFinishedRun(run_id);
  }
  const absl::Time now = options_.clock->Now();
  absl::Time next = now + options_.poll;
  FireDueSchedules(now, &next);
  return next;
}

void Nightly::FireDueSchedules(absl::Time now, absl::Time* next_wakeup) {
  absl::StatusOr<std::vector<v1::Schedule>> schedules = store_.ListSchedules();
  if (!schedules.ok()) {
    spdlog::error("nightly: reading schedules: {}", schedules.status().ToString());
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
    absl::StatusOr<std::string> yaml = ScheduledRunYaml(schedule.spec(), name);
    store::Submission submission{name, absl::StrCat(kSchedulePrefix, schedule.id()),
                                 yaml.ok() ? *yaml : "", ""};
    if (absl::Status s =
            store_.TakeSlot(schedule.id(), absl::ToUnixMillis(due.slot), submission, NowMs());
        !s.ok()) {
      spdlog::warn("nightly: schedule {} slot {}: {}", schedule.id(), absl::FormatTime(due.slot),
                   s.ToString());
      continue;
    }
    absl::StatusOr<std::string> run_id =
        yaml.ok() ? SubmitOnce(submission) : absl::StatusOr<std::string>(yaml.status());
    if (!run_id.ok()) {
      spdlog::error("nightly: schedule {} ({}) slot {}: the run was refused: {}", schedule.id(),
                    schedule.spec().name(), absl::FormatTime(due.slot), run_id.status().ToString());
      (void)store_.RecordSubmission(name, "-", nullptr, NowMs());
      continue;
    }
    spdlog::info("nightly: schedule {} ({}) slot {}{}: run {}", schedule.id(),
                 schedule.spec().name(),
                 absl::FormatTime("%Y-%m-%dT%H:%MZ", due.slot, absl::UTCTimeZone()),
                 due.skipped > 0 ? absl::StrCat(" (", due.skipped, " missed slots folded in)") : "",
                 *run_id);
    if (absl::Status s = store_.RecordSubmission(name, *run_id, nullptr, NowMs()); !s.ok()) {
      spdlog::error("nightly: recording run {}: {}", *run_id, s.ToString());
    }
  }
  *next_wakeup = std::min(*next_wakeup, NextWakeUp(states, now));
}

// --- history ------------------------------------------------------------------------------

void Nightly::HandleFinishedRun(const std::string& run_id) {
  absl::StatusOr<bool> seen = store_.RunSeen(run_id);
  if (!seen.ok() || *seen) return;
  absl::StatusOr<v1::Run> run = controller_.GetRun(run_id);
  if (!run.ok()) {
    spdlog::error("nightly: run {}: {}", run_id, run.status().ToString());
    return;
  }
  absl::StatusOr<std::optional<store::Submission>> submission = store_.SubmissionOfRun(run_id);
  const std::string owner =
      submission.ok() && submission->has_value() ? (*submission)->owner : std::string();
  if (absl::StartsWith(owner, kBisectPrefix)) {
    // A bisection's measurement: its steps judge it; it adds nothing to the history.
    absl::StatusOr<v1::BisectState> state =
        store_.GetBisect(owner.substr(sizeof(kBisectPrefix) - 1));
    if (state.ok()) BisectRunFinished(*std::move(state), *run);
    (void)store_.AppendRun(run_id, {}, NowMs());
    return;
  }
  if (run->state() != v1::RUN_STATE_SUCCEEDED) {
    (void)store_.AppendRun(run_id, {}, NowMs());
    return;
  }
  std::string schedule_id;
  std::optional<v1::Schedule> schedule;
  if (absl::StartsWith(owner, kSchedulePrefix)) {
    schedule_id = owner.substr(sizeof(kSchedulePrefix) - 1);
    absl::StatusOr<v1::Schedule> s = store_.GetSchedule(schedule_id);
    if (s.ok()) schedule = *std::move(s);
  }
  absl::StatusOr<v1::GetResultsResponse> results = controller_.GetResults(run_id);
  if (!results.ok()) {
    spdlog::error("nightly: samples of run {}: {}", run_id, results.status().ToString());
    return;
  }
  const std::vector<v1::Sample> samples(results->samples().begin(), results->samples().end());
  absl::StatusOr<std::vector<std::string>> touched =
      store_.AppendRun(run_id, PointsFromRun(*run, samples, schedule_id), NowMs());
  if (!touched.ok()) {
    spdlog::error("nightly: appending run {}: {}", run_id, touched.status().ToString());
    return;
  }
  for (const std::string& series_id : *touched) {
    DetectChanges(series_id, schedule.has_value() ? &*schedule : nullptr);
  }
}

void Nightly::DetectChanges(const std::string& series_id, const v1::Schedule* schedule) {
  absl::StatusOr<v1::Series> stored = store_.GetSeries(series_id, true);
  absl::StatusOr<std::set<std::string>> known = store_.KnownFindings(series_id);
  if (!stored.ok() || !known.ok()) return;
  const Series series = ToSeries(*stored);
  RegressionOptions options = options_.regression;
  if (schedule != nullptr && schedule->spec().has_detection()) {
    options.detector = DetectorOptions(schedule->spec().detection());
  }
  absl::StatusOr<std::vector<Finding>> findings =
      FindChanges(series, options, series_comparison_, *known);
  if (!findings.ok()) {
    spdlog::error("nightly: series {} ({}): {}", series_id, series.key.ToString(),
                  findings.status().ToString());
    return;
  }
  for (const Finding& f : *findings) {
    spdlog::info("nightly: series {} ({}): {} at run {} (after {}): {}", series_id,
                 series.key.ToString(), FindingKindName(f.kind), f.first_bad_run, f.last_good_run,
                 f.verdict.summary);
    if (f.kind == Finding::Kind::kImprovement) {
      (void)store_.AddImprovement(series_id, f.first_bad_run);
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
    const stats::ChangeEstimate& e = f.change.estimate;
    if (e.relative) {
      *r.mutable_relative() = Interval(*e.relative, e.relative_low.value_or(*e.relative),
                                       e.relative_high.value_or(*e.relative));
    }
    *r.mutable_ratio() = Interval(f.verdict.ratio, f.verdict.ratio_low, f.verdict.ratio_high);
    r.set_p(f.change.p);
    r.set_summary(f.verdict.summary);
    r.set_schedule_id(schedule != nullptr ? schedule->id() : "");
    r.set_good_kernel(stored->points(static_cast<int>(f.index) - 1).kernel_release());
    r.set_bad_kernel(stored->points(static_cast<int>(f.index)).kernel_release());
    absl::StatusOr<v1::Regression> added = store_.AddRegression(r, NowMs());
    if (!added.ok()) {
      spdlog::error("nightly: recording a regression of series {}: {}", series_id,
                    added.status().ToString());
      continue;
    }
    spdlog::warn("nightly: regression {} of {}: first bad run {}, last good run {} ({})",
                 added->id(), series.key.ToString(), f.first_bad_run, f.last_good_run,
                 f.verdict.summary);
    if (schedule != nullptr &&
        schedule->spec().on_regression().action() == v1::OnRegression::ACTION_BISECT) {
      StartRegressionBisect(*added, *schedule, stored->points(static_cast<int>(f.index)).arm());
    }
  }
}

void Nightly::StartRegressionBisect(v1::Regression regression, const v1::Schedule& schedule,
                                    const std::string& arm) {
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
    std::map<std::string, std::string> release_of;
    if (hosts.ok()) {
      for (const v1::Host& h : hosts->hosts()) {
        for (const v1::BootEntryInfo& e : h.info().boot_entries())
          release_of[e.name()] = e.release();
      }
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
      started = CreateBisect(spec);
    } else {
      started = yaml.status();
    }
  }
  if (started.ok()) {
    regression.set_bisect_id(started->id());
    regression.set_note(absl::StrCat("bisect ", started->id(), " started"));
  } else {
    regression.set_note(absl::StrCat("no bisection: ", started.status().message()));
    spdlog::warn("nightly: regression {}: {}", regression.id(), regression.note());
  }
  (void)store_.UpdateRegression(regression, NowMs());
}

// --- user API: schedules and history -------------------------------------------------------

absl::StatusOr<v1::Schedule> Nightly::AddSchedule(const std::string& yaml,
                                                  const std::string& source) {
  absl::StatusOr<v1::ScheduleSpec> spec = ParseScheduleSpec(yaml, source);
  if (!spec.ok()) return spec.status();
  const absl::Time now = options_.clock->Now();
  absl::StatusOr<v1::Schedule> added = store_.AddSchedule(*spec, yaml, absl::ToUnixMillis(now));
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
  absl::StatusOr<std::vector<v1::Schedule>> schedules = store_.ListSchedules();
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
  return store_.SetPaused(id, true, absl::ToUnixMillis(options_.clock->Now()));
}

absl::StatusOr<v1::Schedule> Nightly::ResumeSchedule(const std::string& id) {
  const absl::Time now = options_.clock->Now();
  absl::StatusOr<v1::Schedule> s = store_.SetPaused(id, false, absl::ToUnixMillis(now));
  if (s.ok()) SetNextSlot(*s, now);
  absl::MutexLock lock(&mu_);
  wake_ = true;
  return s;
}

absl::StatusOr<v1::Schedule> Nightly::RemoveSchedule(const std::string& id) {
  return store_.RemoveSchedule(id);
}

absl::StatusOr<v1::ListSeriesResponse> Nightly::ListSeries(const v1::ListSeriesRequest& request) {
  absl::StatusOr<std::vector<v1::Series>> series =
      store_.ListSeries(request.benchmark(), request.metric(), request.with_points());
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
      store_.ListRegressions(statuses, request.limit());
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
  absl::StatusOr<v1::Regression> r = store_.GetRegression(request.id());
  if (!r.ok()) return r.status();
  r->set_status(request.status());
  return store_.UpdateRegression(*r, NowMs());
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
