#pragma once
// hackbench's schema: groups of senders and receivers over pipes or sockets (rt-tests).

#include <cstdint>
#include <memory>

#include "catalogue/schema.h"

namespace tlbfleet::catalogue::hackbench {

inline const MetricSpec kTime = {"time", "s", Better::kLower,
                                 "from the release of all tasks until the last has finished"};
// Limits no host exceeds, checked at submit (CheckCombination): the kernel's PID_MAX_LIMIT on
// 64-bit, and its default fs.nr_open (the most descriptors one process may have unless an
// administrator raised it).
inline constexpr int64_t kMaxTasks = int64_t{4} << 20;
inline constexpr int64_t kMaxDescriptors = int64_t{1} << 20;

std::unique_ptr<WorkloadSchema> NewSchema();

}  // namespace tlbfleet::catalogue::hackbench
