#pragma once
// The time seam for `wait`: tests advance a fake clock instead of sleeping.

#include <chrono>

namespace tlbfleet::cli {

class Clock {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;
  virtual TimePoint Now() = 0;
  virtual void SleepFor(Duration d) = 0;

  // The process-wide steady clock. Thread-safe; never destroyed.
  static Clock& Real();
};

}  // namespace tlbfleet::cli
