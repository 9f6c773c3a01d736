#pragma once
// The nightly unit: schedules that start runs, the history their results build, regressions,
// and bisections over boot entries or commits. It sits beside the controller's core, not inside it:
// a FleetObserver (OnRunFinished) that calls the core's facade (Submit, GetRun, GetResults,
// ListRuns, ListHosts, CancelRun) like any client, with tables of its own
// (store/nightly_store.h). The transports call its user operations, as they call the core's.
//
// One worker thread does the work: it fires the schedules that are due on the injected clock
// (common/clock.h; slots missed while the controller was down run once), appends the points
// of every finished run to its series, looks for change points and asks the calibrated
// comparison (bisect/calibrated.h) what they are, records regressions (and starts a bisection
// when the schedule says so), and moves bisections on as their runs finish. On start it
// recovers: runs submitted but not recorded (found by their unique name, or submitted then),
// runs that finished while it was down, bisections that were waiting.
//
// A store call that fails is never taken for an answer ("no owner", "nothing there"): the
// failure is logged at error with the ids, counted (StoreErrors), and the unit of work it
// belonged to is redone later: a finished run stays queued until its handling was stored, a
// slot stays due until it was taken, and the recovery above runs again, which records what
// was submitted but not recorded and moves on what waits. The store's writes are idempotent
// (store/nightly_store.h), so a redo records nothing twice. While the store keeps failing,
// the redo backs off (NightlyOptions::retry_min .. retry_max). A user operation's failure is
// returned to the caller.
//
// Thread-safe. The user operations may be called from any thread; the work they share with
// the worker (bisection states) is serialised by one mutex.

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "controller/bisect/bisection.h"
#include "controller/core/observer.h"
#include "controller/core/run_service.h"
#include "controller/nightly/regression.h"
#include "controller/nightly/series_label.h"
#include "controller/store/nightly_store.h"
#include "controller/store/sqlite.h"
#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::nightly {

class AnyBisection;

struct NightlyOptions {
  const Clock* clock = &Clock::Real();  // schedules' time; not owned
  // The longest the worker sleeps before looking at the clock again (a clock that is a file
  // in a test moves without telling anyone).
  absl::Duration poll = absl::Seconds(1);
  // Change detection for series no schedule (or a schedule without `detect`) configures.
  RegressionOptions regression;
  // Finished runs looked at on start (newest first) for ones that finished while it was down
  // (at most 1000: one page of ListRuns).
  uint32_t recover_runs = 200;
  // After a store call failed, the work it belonged to waits this long before it is redone,
  // doubling with every pass that fails again, up to retry_max: a full disk is neither
  // hammered nor the log flooded. A pass that succeeds starts again from retry_min.
  absl::Duration retry_min = absl::Seconds(1);
  absl::Duration retry_max = absl::Minutes(1);
};

// Store calls of the nightly unit that failed since it started, each also logged at error:
// what tlbfleet_nightly_store_errors_total{op} shows.
struct NightlyStoreErrors {
  uint64_t reads = 0;
  uint64_t writes = 0;
};

class Nightly : public core::FleetObserver {
 public:
  Nightly(core::RunService& controller, store::NightlyStore& store, NightlyOptions options = {});
  ~Nightly() override;
  Nightly(const Nightly&) = delete;
  Nightly& operator=(const Nightly&) = delete;

  // Starts the worker, which recovers first. Register the Nightly with
  // Controller::AddObserver before the controller's Start().
  void Start();
  void Stop();

  // --- schedules ---
  // INVALID_ARGUMENT naming the field (specs.h); ALREADY_EXISTS for a name in use. A schedule
  // that follows a kernel branch is checked with a builder: an unknown source or config, a
  // branch that does not exist are INVALID_ARGUMENT; FAILED_PRECONDITION when no builder can
  // answer now.
  absl::StatusOr<v1::Schedule> AddSchedule(const std::string& yaml, const std::string& source);
  absl::StatusOr<v1::ListSchedulesResponse> ListSchedules();
  absl::StatusOr<v1::Schedule> PauseSchedule(const std::string& id);
  absl::StatusOr<v1::Schedule> ResumeSchedule(const std::string& id);
  absl::StatusOr<v1::Schedule> RemoveSchedule(const std::string& id);

  // --- history ---
  absl::StatusOr<v1::ListSeriesResponse> ListSeries(const v1::ListSeriesRequest& request);
  absl::StatusOr<v1::ListRegressionsResponse> ListRegressions(
      const v1::ListRegressionsRequest& request);
  // Sets the status (open, acknowledged, fixed). INVALID_ARGUMENT for UNSPECIFIED.
  absl::StatusOr<v1::Regression> UpdateRegression(const v1::UpdateRegressionRequest& request);

  // --- bisections ---
  // INVALID_ARGUMENT naming the field: good and bad the same or out of order, an unknown
  // entry (one no known host that the run selects has), a bad run spec; over commits, an
  // unknown source or config, a revision that does not resolve, good not an ancestor of bad
  // (ResolveCommits; FAILED_PRECONDITION when no builder can say). Submits the first measurement at
  // once.
  absl::StatusOr<v1::BisectState> StartBisect(const std::string& yaml, const std::string& source);
  absl::StatusOr<v1::GetBisectResponse> GetBisect(const std::string& id);
  absl::StatusOr<v1::ListBisectsResponse> ListBisects(uint32_t limit);
  // Stops a running bisection and cancels its pending run.
  absl::StatusOr<v1::BisectState> CancelBisect(const std::string& id);

  // FleetObserver: queues the run for the worker.
  void OnRunFinished(const v1::Run& run) override;

  NightlyStoreErrors StoreErrors() const;

  // --- for tests (no Start()) ---
  // Recovers (the first time), then handles queued runs and due schedules on this thread.
  void RunPendingForTest();

 private:
  enum class StoreOp { kRead, kWrite };

  void Loop();
  // Start-up recovery, run again after a failure: records runs submitted but not recorded,
  // moves on waiting bisections, starts the bisections regressions wait for, and queues the
  // latest finished runs not handled yet. Every step is a redo that records nothing twice.
  void Recover() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  void ResolvePendingSubmissions() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  void StartAwaitedRegressionBisects() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  void QueueUnseenFinishedRuns() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Queued runs, then due schedules. Returns when the clock should be looked at next.
  absl::Time Pass() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  void FireDueSchedules(absl::Time now, absl::Time* next_wakeup)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // OK once the run's handling is stored (or there is none to do); an error (logged) when it
  // must be handled again later.
  absl::Status HandleFinishedRun(const std::string& run_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // The submission that started `run` (nullopt: a run submitted by hand). UNAVAILABLE while
  // the run's submission is known by its name but its run id is not recorded yet.
  absl::StatusOr<std::optional<store::Submission>> SubmissionOf(const v1::Run& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // An error when a finding could not be read or recorded: the series is searched again.
  absl::Status DetectChanges(const std::string& series_id, const v1::Schedule* schedule)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  void RecheckSeries() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // `arm`: the arm of the schedule's run whose series regressed. A regression whose bisection
  // could not be started for want of the store keeps no note: StartAwaitedRegressionBisects
  // tries again.
  void StartRegressionBisect(const v1::Regression& regression, const v1::Schedule& schedule,
                             const std::string& arm) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // The same for a schedule that follows a branch: a bisection over the commits between the
  // last good and the first bad night's.
  void StartRegressionCommitBisect(const v1::Regression& regression, const v1::Schedule& schedule,
                                   const std::string& arm) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // A builder's answer for the head of `kernel.branch` (fetched first when `fetch`).
  // INVALID_ARGUMENT naming kernel.source, kernel.config or kernel.branch; FAILED_PRECONDITION
  // when no builder could answer now.
  absl::StatusOr<v1::GitAnswer> ResolveBranchHead(const v1::KernelBranch& kernel, bool fetch);

  // The run named `name` among the latest runs (a crash or a failed write after submitting it).
  // An error when the runs cannot be listed: then nobody can say it was not submitted.
  absl::StatusOr<std::optional<std::string>> FindRunNamed(const std::string& name);
  // The run of `submission` (recorded already): found by its unique name, else submitted now.
  absl::StatusOr<std::string> SubmitOnce(const store::Submission& submission);
  absl::StatusOr<v1::BisectState> CreateBisect(v1::BisectSpec spec)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Submits the measurement the bisection wants, or handles its pending run if that ended.
  // Failures are logged and left to the next recovery.
  void AdvanceBisect(const v1::BisectState& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // An error when the step's result could not be stored: the run is handled again later.
  absl::Status BisectRunFinished(v1::BisectState state, const v1::Run& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Checks the entries against the hosts the controller knows.
  absl::Status CheckEntriesKnown(const v1::BisectSpec& spec);
  // A bisection over commits: checks its source and config against the builders the
  // controller knows and asks one (RunService::QueryGit) for good's and bad's full hashes and
  // good..bad, filling spec.good, spec.bad and spec.commits.range. INVALID_ARGUMENT naming
  // commits.source, .config, .good or .bad for a wrong question; FAILED_PRECONDITION when no
  // builder can answer now (none connected, it failed or did not answer in time).
  absl::Status ResolveCommits(v1::BisectSpec* spec);
  // Stores a bisection's new state (with its regression's note once it ended) and logs its
  // end; an error (counted, retried later) when the store failed.
  absl::Status StoreBisectProgress(const v1::BisectState& now, std::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Before the revert check's first run: asks a builder whether the culprit's revert applies
  // onto bad. True when it does (submit the run); false when the check was skipped (stored,
  // with the reason) or no builder could answer (asked again later).
  bool CheckRevertApplies(AnyBisection& b, const bisect::NextAction& next)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // A commit bisection's run that failed because a kernel it measures did not build or did
  // not boot: the tested commit is skipped (git bisect skip; good's or bad's stops the bisection),
  // the revert check is skipped. nullopt when the failure is not that (RunFailed then).
  std::optional<absl::Status> SkipUntestable(AnyBisection& b, const v1::Run& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);

  // Logs at error that `what` (with its ids) failed in the store, counts it, and has the work
  // redone later (RetryLater).
  void StoreFailed(StoreOp op, std::string_view what, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // The recovery runs again at the next retry pass, which waits out the backoff.
  void RetryLater() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // A user operation's result, with a storage failure counted (it is returned to the caller).
  template <typename T>
  T Counted(StoreOp op, T result) {
    if (!result.ok() && store::IsStorageFailure(result.status())) Count(op);
    return result;
  }
  void Count(StoreOp op);

  int64_t NowMs() const;

  core::RunService& controller_;
  store::NightlyStore& store_;
  const NightlyOptions options_;
  const bisect::StepComparator comparator_;
  const CalibratedComparison series_comparison_;

  absl::Mutex work_mu_;  // the worker's passes and the user operations that change bisections
  bool recovered_ ABSL_GUARDED_BY(work_mu_) = false;
  // Work to redo after a failure, and when.
  std::deque<std::string> retry_runs_ ABSL_GUARDED_BY(work_mu_);  // finished runs, oldest first
  std::map<std::string, std::string> recheck_series_ ABSL_GUARDED_BY(work_mu_);  // -> schedule
  bool recover_again_ ABSL_GUARDED_BY(work_mu_) = false;
  bool failed_in_pass_ ABSL_GUARDED_BY(work_mu_) = false;
  absl::Time retry_at_ ABSL_GUARDED_BY(work_mu_) = absl::InfinitePast();
  absl::Duration retry_delay_ ABSL_GUARDED_BY(work_mu_);

  std::atomic<uint64_t> store_read_errors_{0};
  std::atomic<uint64_t> store_write_errors_{0};

  absl::Mutex mu_;
  std::deque<std::string> finished_ ABSL_GUARDED_BY(mu_);  // run ids, in order
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  std::thread worker_;
};

// Open regressions counted per series, keyed by SeriesLabel (series_label.h): what the controller's
// tlbfleet_nightly_regressions_open gauge shows.
absl::StatusOr<std::map<std::string, int>> OpenRegressionsBySeries(Nightly& nightly);

}  // namespace tlbfleet::nightly
