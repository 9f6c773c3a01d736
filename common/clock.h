#pragma once
// The one time seam (wall-clock time and sleeping) for every part of tlbfleet: the controller's
// core (leases, reboot deadlines), auth (session expiry), the nightly scheduler (cron slots) and
// the CLI (`wait`). Production code takes a `Clock&` and defaults to Clock::Real(); tests pass a
// FakeClock and step it, so a month of nights or a lease expiry runs in milliseconds and no test
// sleeps to wait for time to pass.

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tlbfleet {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
  // Blocks the caller for `d`. A fake clock advances itself instead and returns at once.
  virtual void SleepFor(absl::Duration d) = 0;

  // Milliseconds since the Unix epoch: what the store keeps.
  int64_t NowMillis() const { return absl::ToUnixMillis(Now()); }

  // absl::Now() and absl::SleepFor(). Thread-safe; never destroyed.
  static Clock& Real();
  // A clock that never steps: the wall time when first used plus the monotonic time elapsed
  // since (std::chrono::steady_clock), so a deadline in one process holds when NTP or an
  // operator sets the system clock. For timeouts and polls (the CLI's `wait`), not for times
  // stored or compared with another process's. Thread-safe; never destroyed.
  static Clock& Steady();
};

// A clock that moves only when told (Set, Advance) or when a caller "sleeps" on it.
// Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'800'000'000)) : now_(start) {}
  absl::Time Now() const override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void SleepFor(absl::Duration d) override { Advance(d); }
  void Set(absl::Time t) {
    absl::MutexLock lock(&mu_);
    now_ = t;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tlbfleet
