#include "controller/core/active_runs.h"

#include <algorithm>
#include <utility>

#include "spdlog/spdlog.h"

namespace tlbfleet::core {
namespace {

// Run ids are decimal row ids without leading zeros: shorter is smaller.
bool RunIdLess(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

}  // namespace

void ActiveRunSnapshot::MarkStale(const std::string& run_id) {
  absl::MutexLock lock(&stale_mu_);
  if (run_id.empty()) {
    all_stale_ = true;
  } else if (!all_stale_) {
    stale_.insert(run_id);
  }
}

void ActiveRunSnapshot::MarkAllStale() { MarkStale(""); }

const std::vector<store::ActiveRun>& ActiveRunSnapshot::Current(store::Store& store,
                                                                int64_t now_ms) {
  bool all = false;
  std::set<std::string> stale;
  {
    absl::MutexLock lock(&stale_mu_);
    all = all_stale_ || now_ms - last_full_read_ms_ >= kFullReadEveryMs;
    all_stale_ = false;
    stale.swap(stale_);
  }
  if (all) {
    ++full_reads_;
    absl::StatusOr<std::vector<store::ActiveRun>> runs = store.ActiveRuns();
    if (!runs.ok()) {
      spdlog::error("dispatch: listing runs failed: {}", runs.status().ToString());
      MarkAllStale();
      return runs_;
    }
    runs_ = *std::move(runs);
    last_full_read_ms_ = now_ms;
    return runs_;
  }
  if (stale.empty()) return runs_;
  ++partial_reads_;
  absl::StatusOr<std::vector<store::ActiveRun>> fresh =
      store.ActiveRunsAmong(std::vector<std::string>(stale.begin(), stale.end()));
  if (!fresh.ok()) {
    spdlog::error("dispatch: reading {} run(s) failed: {}", stale.size(),
                  fresh.status().ToString());
    absl::MutexLock lock(&stale_mu_);
    stale_.insert(stale.begin(), stale.end());
    return runs_;
  }
  // The stale runs' old entries go; those still active come back in id order.
  runs_.erase(std::remove_if(runs_.begin(), runs_.end(),
                             [&stale](const store::ActiveRun& r) { return stale.count(r.run_id); }),
              runs_.end());
  for (store::ActiveRun& run : *fresh) {
    auto at = std::lower_bound(
        runs_.begin(), runs_.end(), run.run_id,
        [](const store::ActiveRun& r, const std::string& id) { return RunIdLess(r.run_id, id); });
    runs_.insert(at, std::move(run));
  }
  return runs_;
}

}  // namespace tlbfleet::core
