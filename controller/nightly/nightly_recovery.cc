// The nightly unit's recovery, at start and again after a failure: runs submitted but not
// recorded, bisections that wait, regressions whose bisection was not started, finished runs
// not handled yet; and how store failures are logged, counted and retried.

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "controller/nightly/any_bisection.h"
#include "controller/nightly/nightly.h"
#include "controller/nightly/nightly_internal.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::nightly {

// --- failures -----------------------------------------------------------------------------

void Nightly::Count(StoreOp op) {
  (op == StoreOp::kRead ? store_read_errors_ : store_write_errors_)
      .fetch_add(1, std::memory_order_relaxed);
}

NightlyStoreErrors Nightly::StoreErrors() const {
  return NightlyStoreErrors{store_read_errors_.load(std::memory_order_relaxed),
                            store_write_errors_.load(std::memory_order_relaxed)};
}

void Nightly::StoreFailed(StoreOp op, std::string_view what, const absl::Status& status) {
  Count(op);
  spdlog::error("nightly: store {} failed: {}: {}; done again later",
                op == StoreOp::kRead ? "read" : "write", what, status.ToString());
  RetryLater();
}

void Nightly::RetryLater() {
  recover_again_ = true;
  failed_in_pass_ = true;
}

// --- recovery -----------------------------------------------------------------------------

void Nightly::Recover() {
  recovered_ = true;
  ResolvePendingSubmissions();
  // Bisections that were waiting: submit what they want, or take their run's end.
  absl::StatusOr<std::vector<v1::BisectState>> running = store_.ListBisects(0, true);
  if (running.ok()) {
    for (const v1::BisectState& state : *running) AdvanceBisect(state);
  } else {
    StoreFailed(StoreOp::kRead, "listing the running bisections", running.status());
  }
  StartAwaitedRegressionBisects();
  QueueUnseenFinishedRuns();
}

void Nightly::ResolvePendingSubmissions() {
  // Runs submitted but not recorded: a crash, or a failed write, came between the two.
  absl::StatusOr<std::vector<store::Submission>> pending = store_.PendingSubmissions();
  if (!pending.ok()) {
    StoreFailed(StoreOp::kRead, "reading the pending submissions", pending.status());
    return;
  }
  for (const store::Submission& s : *pending) {
    // A bisection's run is recorded with the state that awaits it; one the bisection no
    // longer wants (it ended, or failed meanwhile) is not submitted now.
    const std::string bisect_id = BisectOfOwner(s.owner);
    std::optional<AnyBisection> bisection;
    if (!bisect_id.empty()) {
      absl::StatusOr<v1::BisectState> stored = store_.GetBisect(bisect_id);
      if (!stored.ok() && !absl::IsNotFound(stored.status())) {
        StoreFailed(StoreOp::kRead, absl::StrCat("bisect ", bisect_id, " of run ", s.name),
                    stored.status());
        continue;
      }
      if (stored.ok()) {
        absl::StatusOr<AnyBisection> b = AnyBisection::Resume(*stored);
        if (b.ok()) bisection = *std::move(b);
      }
    }
    const bool wanted = bisect_id.empty() || (bisection.has_value() && bisection->WantsRun());
    absl::StatusOr<std::string> run_id = absl::UnknownError("");
    if (wanted) {
      run_id = SubmitOnce(s);
    } else {
      absl::StatusOr<std::optional<std::string>> found = FindRunNamed(s.name);
      if (!found.ok()) {
        run_id = found.status();
      } else if (found->has_value()) {
        run_id = **found;
      } else {
        run_id =
            absl::FailedPreconditionError(absl::StrCat(s.owner, " no longer waits for this run"));
      }
    }
    if (!run_id.ok()) {
      if (RetryableFailure(run_id.status())) {
        spdlog::error("nightly: run {} of {} could not be submitted, trying again later: {}",
                      s.name, s.owner, run_id.status().ToString());
        RetryLater();
        continue;
      }
      spdlog::error("nightly: run {} ({}) could not be submitted: {}", s.name, s.owner,
                    run_id.status().ToString());
      if (absl::Status st = store_.RecordSubmission(s.name, "-", nullptr, NowMs()); !st.ok()) {
        StoreFailed(StoreOp::kWrite, absl::StrCat("recording that run ", s.name, " was refused"),
                    st);
      }
      continue;
    }
    const v1::BisectState* recorded = nullptr;
    if (wanted && bisection.has_value() && bisection->Submitted(*run_id).ok()) {
      recorded = &bisection->state();
    }
    spdlog::info("nightly: recovered run {} of {} ({})", *run_id, s.owner, s.name);
    if (absl::Status st = store_.RecordSubmission(s.name, *run_id, recorded, NowMs()); !st.ok()) {
      StoreFailed(StoreOp::kWrite,
                  absl::StrCat("recording run ", *run_id, " (", s.name, ") of ", s.owner), st);
    }
  }
}

void Nightly::StartAwaitedRegressionBisects() {
  // A regression of a schedule that bisects, with neither a bisection nor a note: its
  // bisection could not be started (the store failed), or a crash came first.
  absl::StatusOr<std::vector<v1::Regression>> regressions = store_.ListRegressions({}, 0);
  if (!regressions.ok()) {
    StoreFailed(StoreOp::kRead, "listing the regressions", regressions.status());
    return;
  }
  for (const v1::Regression& r : *regressions) {
    if (r.schedule_id().empty() || !r.bisect_id().empty() || !r.note().empty()) continue;
    absl::StatusOr<v1::Schedule> schedule = store_.GetSchedule(r.schedule_id());
    if (absl::IsNotFound(schedule.status())) continue;  // removed: nobody asks for a bisection
    if (!schedule.ok()) {
      StoreFailed(StoreOp::kRead,
                  absl::StrCat("schedule ", r.schedule_id(), " of regression ", r.id()),
                  schedule.status());
      continue;
    }
    if (schedule->spec().on_regression().action() != v1::OnRegression::ACTION_BISECT) continue;
    absl::StatusOr<v1::Series> series = store_.GetSeries(r.series_id(), true);
    if (!series.ok()) {
      StoreFailed(StoreOp::kRead, absl::StrCat("series ", r.series_id(), " of regression ", r.id()),
                  series.status());
      continue;
    }
    auto point =
        std::find_if(series->points().begin(), series->points().end(),
                     [&](const v1::SeriesPoint& p) { return p.run_id() == r.first_bad_run(); });
    if (point == series->points().end()) {
      spdlog::warn("nightly: regression {}: series {} has no point of run {}; no bisection", r.id(),
                   r.series_id(), r.first_bad_run());
      continue;
    }
    spdlog::info("nightly: regression {}: starting its bisection (not started before)", r.id());
    StartRegressionBisect(r, *schedule, point->arm());
  }
}

void Nightly::QueueUnseenFinishedRuns() {
  // Runs that finished while nobody was watching, oldest first.
  v1::ListRunsRequest ended;
  ended.set_limit(std::min<uint32_t>(options_.recover_runs, 1000));
  for (v1::RunState state :
       {v1::RUN_STATE_SUCCEEDED, v1::RUN_STATE_FAILED, v1::RUN_STATE_CANCELLED}) {
    ended.add_states(state);
  }
  absl::StatusOr<v1::ListRunsResponse> runs = controller_.ListRuns(ended);
  if (!runs.ok()) {
    spdlog::error("nightly: listing the finished runs: {}; looked at again later",
                  runs.status().ToString());
    RetryLater();
    return;
  }
  std::vector<std::string> unseen;
  bool unknown = false;  // once a read failed, every later run is queued: handling asks again
  for (const v1::Run& run : runs->runs()) {
    if (!RunEnded(run.state())) continue;
    if (unknown) {
      unseen.push_back(run.id());
      continue;
    }
    absl::StatusOr<bool> seen = store_.RunSeen(run.id());
    if (!seen.ok()) {
      StoreFailed(StoreOp::kRead, absl::StrCat("run ", run.id(), ": was it handled?"),
                  seen.status());
      unknown = true;
      unseen.push_back(run.id());
    } else if (!*seen) {
      unseen.push_back(run.id());
    }
  }
  for (const std::string& run_id : unseen) {  // newest first: each goes before the last
    if (std::find(retry_runs_.begin(), retry_runs_.end(), run_id) == retry_runs_.end()) {
      retry_runs_.push_front(run_id);
    }
  }
}

// --- submitting once ----------------------------------------------------------------------

absl::StatusOr<std::optional<std::string>> Nightly::FindRunNamed(const std::string& name) {
  // The name is unique (nightly_submissions); the filter is a substring match, so compare
  // exactly.
  v1::ListRunsRequest named;
  named.set_limit(1000);
  named.set_name(name);
  absl::StatusOr<v1::ListRunsResponse> runs = controller_.ListRuns(named);
  if (!runs.ok()) {
    // Not knowing is not "not there": submitting now could start the run twice.
    return absl::UnavailableError(
        absl::StrCat("looking for run ", name, ": ", runs.status().message()));
  }
  for (const v1::Run& run : runs->runs()) {
    if (run.spec().name() == name) return std::optional<std::string>(run.id());
  }
  return std::optional<std::string>();
}

absl::StatusOr<std::string> Nightly::SubmitOnce(const store::Submission& submission) {
  absl::StatusOr<std::optional<std::string>> found = FindRunNamed(submission.name);
  if (!found.ok()) return found.status();
  if (found->has_value()) return **found;
  absl::StatusOr<v1::SubmitRunResponse> submitted =
      controller_.Submit(submission.spec_yaml, submission.name);
  if (!submitted.ok()) return submitted.status();
  return submitted->run_id();
}

}  // namespace tlbfleet::nightly
