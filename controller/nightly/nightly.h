#pragma once
// The nightly unit: schedules that start runs, the history their results build, regressions,
// and bisections over boot entries. It sits beside the controller's core, not inside it: a
// FleetObserver (OnRunFinished) that calls the core's facade (Submit, GetRun, GetResults,
// ListRuns, ListHosts, CancelRun) like any client, with tables of its own
// (store/nightly_store.h). The transports call its user operations, as they call the core's.
//
// One worker thread does the work: it fires the schedules that are due on the injected clock
// (nightly/clock.h; slots missed while the controller was down run once), appends the points
// of every finished run to its series, looks for change points and asks the calibrated
// comparison (bisect/calibrated.h) what they are, records regressions (and starts a bisection
// when the schedule says so), and moves bisections on as their runs finish. On start it
// recovers: runs submitted but not recorded (found by their unique name, or submitted then),
// runs that finished while it was down, bisections that were waiting.
//
// Thread-safe. The user operations may be called from any thread; the work they share with
// the worker (bisection states) is serialised by one mutex.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "controller/bisect/bisection.h"
#include "controller/core/controller.h"
#include "controller/nightly/clock.h"
#include "controller/nightly/regression.h"
#include "controller/nightly/series_label.h"
#include "controller/store/nightly_store.h"
#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::nightly {

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
};

class Nightly : public core::FleetObserver {
 public:
  Nightly(core::Controller& controller, store::NightlyStore& store, NightlyOptions options = {});
  ~Nightly() override;
  Nightly(const Nightly&) = delete;
  Nightly& operator=(const Nightly&) = delete;

  // Starts the worker, which recovers first. Register the Nightly with
  // Controller::AddObserver before the controller's Start().
  void Start();
  void Stop();

  // --- schedules ---
  // INVALID_ARGUMENT naming the field (specs.h); ALREADY_EXISTS for a name in use.
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
  // entry (one no known host that the run selects has), a bad run spec. Submits the first
  // measurement at once.
  absl::StatusOr<v1::BisectState> StartBisect(const std::string& yaml, const std::string& source);
  absl::StatusOr<v1::GetBisectResponse> GetBisect(const std::string& id);
  absl::StatusOr<v1::ListBisectsResponse> ListBisects(uint32_t limit);
  // Stops a running bisection and cancels its pending run.
  absl::StatusOr<v1::BisectState> CancelBisect(const std::string& id);

  // FleetObserver: queues the run for the worker.
  void OnRunFinished(const v1::Run& run) override;

  // --- for tests (no Start()) ---
  // Recovers (the first time), then handles queued runs and due schedules on this thread.
  void RunPendingForTest();

 private:
  void Loop();
  void Recover() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Queued runs, then due schedules. Returns when the clock should be looked at next.
  absl::Time Pass() ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  void FireDueSchedules(absl::Time now, absl::Time* next_wakeup)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  void HandleFinishedRun(const std::string& run_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  void DetectChanges(const std::string& series_id, const v1::Schedule* schedule)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // `arm`: the arm of the schedule's run whose series regressed.
  void StartRegressionBisect(v1::Regression regression, const v1::Schedule& schedule,
                             const std::string& arm) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);

  // The run of `submission` (recorded already): found by its unique name among the latest
  // runs (a crash after submitting it), else submitted now.
  absl::StatusOr<std::string> SubmitOnce(const store::Submission& submission);
  absl::StatusOr<v1::BisectState> CreateBisect(v1::BisectSpec spec)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Submits the measurement the bisection wants, or handles its pending run if that ended.
  void AdvanceBisect(v1::BisectState state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  void BisectRunFinished(v1::BisectState state, const v1::Run& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  void SaveBisect(const v1::BisectState& state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(work_mu_);
  // Checks the entries against the hosts the controller knows.
  absl::Status CheckEntriesKnown(const v1::BisectSpec& spec);

  int64_t NowMs() const;

  core::Controller& controller_;
  store::NightlyStore& store_;
  const NightlyOptions options_;
  const bisect::StepComparator comparator_;
  const CalibratedComparison series_comparison_;

  absl::Mutex work_mu_;  // the worker's passes and the user operations that change bisections
  bool recovered_ ABSL_GUARDED_BY(work_mu_) = false;

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
