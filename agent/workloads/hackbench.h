#pragma once
// hackbench (rt-tests 2.x; also `perf bench sched messaging`), written natively. Each group
// has `fds` receivers and `fds` senders; every sender sends `loops` messages of `datasize`
// bytes to every receiver of its group, over pipes or Unix stream sockets, with the tasks
// as threads or processes. The time is from the release of all tasks until the last one has
// finished: scheduler wake-up latency and IPC throughput. See docs/workloads/hackbench.md.

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "agent/workloads/workload.h"

namespace tlbfleet::workloads::hackbench {

// One run's settings; the defaults are the schema's (and rt-tests hackbench's) defaults.
struct Options {
  int groups = 10;
  int fds = 20;
  int64_t loops = 100;
  size_t datasize = 100;
  bool pipes = false;    // pipes instead of socketpair(AF_UNIX, SOCK_STREAM)
  bool threads = false;  // threads instead of processes
};

// `params` must have been resolved against the hackbench schema.
Options OptionsFromParams(const Params& params);

// Runs one iteration and returns its time in seconds. RESOURCE_EXHAUSTED if the file
// descriptors, threads or processes cannot be created; INTERNAL if a task fails.
absl::StatusOr<double> RunOnce(const Options& options);

}  // namespace tlbfleet::workloads::hackbench
