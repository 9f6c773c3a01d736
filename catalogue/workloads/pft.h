#pragma once
// pft's schema: page-fault throughput of threads faulting in private anonymous memory.

#include <memory>

#include "catalogue/schema.h"

namespace tlbfleet::catalogue::pft {

inline const MetricSpec kFaultsPerSec = {"faults_per_sec", "faults/s", Better::kHigher,
                                         "page faults of all threads per second of wall time"};
inline const MetricSpec kFaultsPerCpu = {
    "faults_per_cpu", "faults/cpu-s", Better::kHigher,
    "page faults per second of CPU time (user + system) of the faulting threads: the rate of "
    "one CPU"};
inline const MetricSpec kWall = {"wall_seconds", "s", Better::kLower,
                                 "wall time of the fault loop"};
inline const MetricSpec kSystem = {"system_seconds", "s", Better::kLower,
                                   "system CPU time of all threads in the fault loop"};
inline const MetricSpec kUser = {"user_seconds", "s", Better::kLower,
                                 "user CPU time of all threads in the fault loop"};

std::unique_ptr<WorkloadSchema> NewSchema();

}  // namespace tlbfleet::catalogue::pft
