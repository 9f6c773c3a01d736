#pragma once
// pipetest: two processes ping-pong one byte over a pair of pipes, `loops` round trips, like
// `perf bench sched pipe` (and Ingo Molnar's pipe-test-1m that mmtests runs): the cost of a
// wake-up and a context switch. See docs/workloads/pipetest.md.

#include <cstdint>

#include "absl/status/statusor.h"

namespace tlbfleet::workloads::pipetest {

// Runs `loops` round trips between this process and a forked child and returns the elapsed
// seconds, from the release of the child (both sides ready) until the child is reaped.
// RESOURCE_EXHAUSTED if the pipes or the child cannot be created; INTERNAL on I/O errors.
absl::StatusOr<double> RunOnce(int64_t loops);

}  // namespace tlbfleet::workloads::pipetest
