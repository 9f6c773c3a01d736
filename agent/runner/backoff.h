#pragma once
// Reconnect delays: `initial` doubling up to `max`, each multiplied by a jitter factor in
// [0.8, 1.2) (and capped at `max`) so a fleet that lost its controller does not come back in
// lock step. Not thread-safe.

#include <functional>

namespace tlbfleet::agent {

class Backoff {
 public:
  // `uniform01` returns values in [0, 1); the default draws from a random_device-seeded PRNG.
  Backoff(double initial_seconds, double max_seconds, std::function<double()> uniform01 = nullptr);

  double NextDelaySeconds();
  void Reset() { current_ = initial_; }

 private:
  double initial_;
  double max_;
  double current_;
  std::function<double()> uniform01_;
};

}  // namespace tlbfleet::agent
