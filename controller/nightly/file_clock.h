#pragma once
// A clock that reads the time from a file, for tests of a whole controller process
// (tlbfleet-controller --nightly-clock-file): the test writes the next night's time (seconds
// since the epoch, UTC; a fraction allowed) and the scheduler acts as if it were that time.
// Until the file holds a time, and when it cannot be read, the last time read stands (at
// first the epoch: nothing is due). Thread-safe.

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace tlbfleet::nightly {

class FileClock final : public Clock {
 public:
  explicit FileClock(std::string path) : path_(std::move(path)) {}
  absl::Time Now() const override;
  // Really sleeps (absl::SleepFor): only the test that writes the file moves this clock, so a
  // sleep cannot advance it as FakeClock's does, and a caller that sleeps to wait for the
  // file to change must not spin.
  void SleepFor(absl::Duration d) override;

 private:
  const std::string path_;
  mutable absl::Mutex mu_;
  mutable absl::Time last_ ABSL_GUARDED_BY(mu_) = absl::UnixEpoch();
};

}  // namespace tlbfleet::nightly
