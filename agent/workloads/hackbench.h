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
#include "catalogue/workloads/hackbench.h"

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

// Limits no host exceeds, checked at submit (the catalogue's CheckCombination).
using catalogue::hackbench::kMaxDescriptors;
using catalogue::hackbench::kMaxTasks;

// This host's limits (0 = unknown): min(kernel.pid_max, kernel.threads-max) and the hard
// RLIMIT_NOFILE.
struct HostLimits {
  int64_t max_tasks = 0;
  int64_t max_fds = 0;
};
HostLimits ReadHostLimits();
// RESOURCE_EXHAUSTED naming groups, fds, their product and the limit it exceeds.
absl::Status CheckHostLimits(const Options& options, const HostLimits& host);

// Runs one iteration and returns its time in seconds. RESOURCE_EXHAUSTED if CheckHostLimits
// refuses or the file descriptors, threads or processes cannot be created; INTERNAL if a
// task fails.
absl::StatusOr<double> RunOnce(const Options& options);

}  // namespace tlbfleet::workloads::hackbench
