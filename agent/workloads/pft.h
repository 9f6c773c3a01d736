#pragma once
// pft: page-fault throughput (Christoph Lameter's pft, as mmtests runs it). Threads write
// one byte to every 4 KiB page of their share of one private anonymous mapping (THP off,
// so every page is a fault), after which the memory is freed. See docs/workloads/pft.md.

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace tlbfleet::workloads::pft {

struct Options {
  int threads = 1;
  size_t size_mb = 128;  // in total, split evenly between the threads
};

struct Result {
  uint64_t faults = 0;      // pages touched by all threads
  double wall_seconds = 0;  // from the threads' release until the last finished
  double user_seconds = 0;  // CPU time of all threads while faulting
  double system_seconds = 0;
};

// RESOURCE_EXHAUSTED if the memory cannot be mapped (or exceeds RAM) or a thread cannot
// start.
absl::StatusOr<Result> RunOnce(const Options& options);

}  // namespace tlbfleet::workloads::pft
