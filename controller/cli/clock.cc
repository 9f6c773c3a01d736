#include "controller/cli/clock.h"

#include <thread>

namespace tlbfleet::cli {

namespace {

class RealClock final : public Clock {
 public:
  TimePoint Now() override { return std::chrono::steady_clock::now(); }
  void SleepFor(Duration d) override { std::this_thread::sleep_for(d); }
};

}  // namespace

Clock& Clock::Real() {
  static RealClock* clock = new RealClock();
  return *clock;
}

}  // namespace tlbfleet::cli
