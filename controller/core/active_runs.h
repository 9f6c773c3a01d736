// What dispatch knows of the active runs.

#ifndef TLBFLEET_CONTROLLER_CORE_ACTIVE_RUNS_H_
#define TLBFLEET_CONTROLLER_CORE_ACTIVE_RUNS_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "controller/store/store.h"

namespace tlbfleet::core {

// A snapshot of the store's active runs (Store::ActiveRuns), brought up to date run by run:
// every run event names the run it changed, and only the runs marked stale since the last
// Current() are read again. A submission, a lease or a completion so costs a read of its
// run, not of every active run (with 10,000 runs queued, each event re-read all of them).
// The whole list is read at the start, after MarkAllStale(), after a failed read, and once
// a minute (kFullReadEveryMs) in case a change came without an event.
class ActiveRunSnapshot {
 public:
  static constexpr int64_t kFullReadEveryMs = 60'000;

  // Thread-safe (the store's event sink calls it from its callback thread). "" marks all.
  void MarkStale(const std::string& run_id);
  void MarkAllStale();

  // The active runs in id order, after reading those marked stale. Calls must not overlap
  // (the controller makes them under its mutex); the reference is valid until the next.
  const std::vector<store::ActiveRun>& Current(store::Store& store, int64_t now_ms);

  // Reads of the store so far, whole-list and per-run (tests).
  int full_reads() const { return full_reads_; }
  int partial_reads() const { return partial_reads_; }

 private:
  absl::Mutex stale_mu_;
  bool all_stale_ ABSL_GUARDED_BY(stale_mu_) = true;
  std::set<std::string> stale_ ABSL_GUARDED_BY(stale_mu_);

  std::vector<store::ActiveRun> runs_;
  int64_t last_full_read_ms_ = 0;
  int full_reads_ = 0;
  int partial_reads_ = 0;
};

}  // namespace tlbfleet::core

#endif  // TLBFLEET_CONTROLLER_CORE_ACTIVE_RUNS_H_
