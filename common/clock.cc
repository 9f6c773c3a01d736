#include "common/clock.h"

#include <chrono>

namespace tlbfleet {

namespace {

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  void SleepFor(absl::Duration d) override { absl::SleepFor(d); }
};

class SteadyClock final : public Clock {
 public:
  SteadyClock() : wall_start_(absl::Now()), steady_start_(std::chrono::steady_clock::now()) {}
  absl::Time Now() const override {
    return wall_start_ + absl::FromChrono(std::chrono::steady_clock::now() - steady_start_);
  }
  void SleepFor(absl::Duration d) override { absl::SleepFor(d); }

 private:
  const absl::Time wall_start_;
  const std::chrono::steady_clock::time_point steady_start_;
};

}  // namespace

Clock& Clock::Real() {
  static RealClock* clock = new RealClock();
  return *clock;
}

Clock& Clock::Steady() {
  static SteadyClock* clock = new SteadyClock();
  return *clock;
}

}  // namespace tlbfleet
