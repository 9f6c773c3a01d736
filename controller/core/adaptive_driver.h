#pragma once
// The adaptive driver: decides, for each adaptive run whose plan so far is done, whether to
// grow it (more iterations or another boot) or to stop it (docs/statistics.md#adaptive-runs).
// A decision compares the run's samples (a bootstrap: milliseconds to seconds), so it runs on
// the driver's own worker thread, never on the ticker or on gRPC callback threads.
//
// A decision whose write fails (ExtendRun, FinishAdaptiveRun) is kept and only its write is
// retried, with exponential backoff (1 s doubling to 60 s); after kMaxWriteFailures failures
// the run fails with the error. Nothing is recomputed unless the run's plan changed meanwhile.
//
// stop: verdict runs: each look's rows are stored with the run (Run.adaptive_rows) and passed
// back to the next look, so a decided row keeps its verdict across looks and restarts, and
// the run grows only in the (sweep value, arm) that report::StillMeasured names
// (docs/statistics.md#rows-that-stop-on-their-own).
// Thread-safe.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "controller/report/adaptive.h"
#include "controller/report/sequential.h"
#include "controller/store/store.h"

namespace tlbfleet::core {

class AdaptiveDriver {
 public:
  // Called (on the deciding thread, with no lock of the driver held) after a run was
  // extended: it has new queued jobs to dispatch.
  using Extended = std::function<void(const std::string& run_id)>;

  static constexpr int kMaxWriteFailures = 5;

  // `clock` is not owned and must outlive the driver.
  AdaptiveDriver(store::Store& store, const Clock& clock, Extended on_extended);
  ~AdaptiveDriver();

  // Starts the worker thread, which decides once at once (runs left waiting by a restart)
  // and then whenever woken, a retry is due, or every few seconds as a safety net.
  void Start();
  void Stop();
  // Some run may await a decision (a completion said so). Never blocks.
  void Wake();

  // One pass over the runs awaiting a decision, on the caller's thread. The worker calls it;
  // tests without Start() call it directly.
  void DecideOnce();

 private:
  // A decision taken whose write failed: kept to retry the write, not the bootstrap.
  struct Unwritten {
    report::AdaptiveDecision decision;
    std::optional<std::set<report::SweepArm>> measured;
    report::AdaptivePlan plan;  // the plan it was taken for
    int failures = 0;
    int64_t retry_at_ms = 0;
  };
  void Decide(const store::ActiveRun& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(decide_mu_);
  absl::Status Write(const std::string& run_id, const report::AdaptiveDecision& decision,
                     const std::optional<std::set<report::SweepArm>>& measured, uint32_t rounds);
  void Loop();

  store::Store& store_;
  const Clock& clock_;
  const Extended on_extended_;

  absl::Mutex decide_mu_;  // one pass at a time
  std::map<std::string, Unwritten> unwritten_ ABSL_GUARDED_BY(decide_mu_);
  std::vector<std::string> extended_ ABSL_GUARDED_BY(decide_mu_);

  absl::Mutex mu_;
  bool woken_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread worker_;
};

}  // namespace tlbfleet::core
