#include "agent/runner/backoff.h"

#include <algorithm>
#include <memory>
#include <random>

namespace tlbfleet::agent {

Backoff::Backoff(double initial_seconds, double max_seconds, std::function<double()> uniform01)
    : initial_(initial_seconds),
      max_(std::max(max_seconds, initial_seconds)),
      current_(initial_seconds),
      uniform01_(std::move(uniform01)) {
  if (!uniform01_) {
    auto rng = std::make_shared<std::mt19937_64>(std::random_device{}());
    uniform01_ = [rng] { return std::uniform_real_distribution<double>(0.0, 1.0)(*rng); };
  }
}

double Backoff::NextDelaySeconds() {
  double delay = std::min(current_ * (0.8 + 0.4 * uniform01_()), max_);
  current_ = std::min(current_ * 2, max_);
  return delay;
}

}  // namespace tlbfleet::agent
