#pragma once
// What one job does with the flush ceiling, so that every sample states the ceiling it was
// really measured under:
//
//   Begin(spec)   spec "" (observe only): the host's ceiling lock, shared; the value read
//                 now is the one the job expects.
//                 spec "default" / N: refused while the host is degraded (ceiling_health.h)
//                 or cannot write the ceiling; then the lock, exclusive; journal, write, read
//                 back (ceiling_control.h). The value read back is the one the job expects.
//   (workload)    a watcher thread reads the ceiling every `poll` and keeps the first value
//                 that differs from the expected one.
//   End()         stops the watcher, reads the ceiling once more, restores the original
//                 (when the job set it), releases the lock, and says what the samples may
//                 claim: the observed value, or an error naming both values when it changed.
//                 A failed restore is an error too, and marks the host degraded.
//
// Marking the host degraded writes the marker (ceiling_health.h). When that write fails (the
// state directory's disk is full, say), the state is not lost: it is logged at error with the
// lease and the path, the job's error says so, and this process remembers it for this boot
// (ReadJobCeilingDegraded) as long as the ceiling journal it concerns is there, which stays
// until the ceiling is known good again (ceiling_control.h, DeclareCeilingKnownGood). An agent
// restarted meanwhile learns it again from that journal (RecoverCeiling), or does not start.
//
// Not thread-safe (the watcher is internal); one per job.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/kernel/ceiling_control.h"
#include "agent/kernel/ceiling_health.h"
#include "agent/kernel/ceiling_lock.h"
#include "agent/kernel/sysroot.h"

namespace tlbfleet::agent {

struct JobCeilingOptions {
  const Sysroot* sysroot = nullptr;  // required
  std::string journal;               // paths::CeilingJournalFile; required to set the ceiling
  std::string degraded_marker;       // paths::CeilingDegradedFile; "" = never degraded (tests)
  std::string boot_id;
  std::string ids;  // "run=… job=… lease=…" for log lines and the degraded reason
  absl::Duration poll = absl::Milliseconds(200);
};

// Whether this host's flush ceiling is degraded as this agent knows it: the marker at
// `marker`, else a degraded state of this boot whose marker could not be written, while the
// ceiling journal `journal` it concerns is still there. Whoever asks whether the host is
// degraded should ask this rather than read the marker alone.
std::optional<CeilingDegraded> ReadJobCeilingDegraded(const std::string& marker,
                                                      const std::string& journal,
                                                      const std::string& boot_id);

class JobCeiling {
 public:
  explicit JobCeiling(JobCeilingOptions options);
  ~JobCeiling();  // End() if Begin() succeeded and End() was not called
  JobCeiling(const JobCeiling&) = delete;
  JobCeiling& operator=(const JobCeiling&) = delete;

  // An error fails the job before its workload runs; whatever was changed is put back.
  absl::Status Begin(std::string_view spec);

  struct Outcome {
    bool applied = false;            // the job set the ceiling (its spec named one)
    std::optional<int64_t> ceiling;  // what the samples claim: set, or observed throughout
    bool observed = false;           // `ceiling` was read before, during and after the workload
    std::string error;               // non-empty: the job fails with this
    bool degraded = false;           // the restore failed and the host was marked degraded (on disk
                                     // or, when the marker could not be written, in memory)
  };
  Outcome End();

  std::optional<int64_t> original() const { return changer_.original(); }
  // The value the workload runs under (after a successful Begin(); unset when unreadable).
  std::optional<int64_t> expected() const { return expected_; }

 private:
  void Watch();
  void StopWatcher();
  // Marks the host degraded for `why`. "" when the marker was written; else what the job's
  // error adds (the state is then remembered in memory, and logged).
  std::string MarkDegraded(absl::string_view why);

  const JobCeilingOptions options_;
  CeilingChanger changer_;
  std::unique_ptr<CeilingLock> lock_;
  bool begun_ = false;
  bool ended_ = false;
  bool applied_ = false;
  std::optional<int64_t> expected_;  // the value the workload should run under
  absl::Time started_;
  std::thread watcher_;

  absl::Mutex mu_;
  absl::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<int64_t> seen_ ABSL_GUARDED_BY(mu_);  // first differing value (-1: unreadable)
  absl::Duration seen_at_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tlbfleet::agent
