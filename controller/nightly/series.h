#pragma once
// The history nightly runs build: one series per (host class, benchmark, configuration, sweep
// value, metric), one point per finished run that measured it. A point is an arm's estimate
// with its interval, and where it came from. The configuration is the arm's parameters and
// ceiling (series_upkeep.h), not its name: two runs that measure the same thing under other
// arm names share a series, two that measure different things never do.
//
// The host class is the CPU microarchitecture plus the boot entry the arm asked for. The
// entry is a *name* ("distro-latest", "lab-6.12"): what it boots may change from one night to
// the next (a kernel update), and that change is exactly what the series is there to catch,
// so the kernel release is provenance, not part of the key.

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/time/time.h"
#include "controller/stats/summary.h"

namespace tlbfleet::nightly {

struct SeriesKey {
  std::string microarch;   // CpuInfo.microarch, e.g. "IvyBridge" ("unknown" in the lab)
  std::string boot_entry;  // "" when the arm names none (the host's default boot)
  std::string config;      // "ceiling=33 loops=20000": the arm's parameters, sorted
  std::string benchmark;
  std::string param;  // "threads=4", or "" without a sweep
  std::string metric;

  // "IvyBridge/distro-latest/mmap=always/ebizzy/threads=4/records_per_sec" (empty parts "-").
  std::string ToString() const;
  friend bool operator<(const SeriesKey& a, const SeriesKey& b) {
    return std::tie(a.microarch, a.boot_entry, a.config, a.benchmark, a.param, a.metric) <
           std::tie(b.microarch, b.boot_entry, b.config, b.benchmark, b.param, b.metric);
  }
  friend bool operator==(const SeriesKey& a, const SeriesKey& b) { return !(a < b) && !(b < a); }
};

// Where a point came from.
struct Provenance {
  std::string run_id;
  std::string arm;  // the arm of the run that measured it
  std::string boot_entry;
  std::string kernel_release;
  std::string commit;  // kernels built from source: the commit measured
  std::vector<std::string> boot_ids;
  std::string schedule_id;  // "" for a run submitted by hand
};

struct HistoryPoint {
  absl::Time finished;  // when its run finished; points are in this order
  double estimate = 0;  // the arm's mean of boot means
  double low = 0, high = 0;
  double confidence = 0.95;  // of [low, high]
  Provenance provenance;
};

struct Series {
  SeriesKey key;
  stats::Direction direction = stats::Direction::kHigherIsBetter;
  std::vector<HistoryPoint> points;  // oldest first
};

}  // namespace tlbfleet::nightly
