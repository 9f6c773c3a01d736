#pragma once
// pipetest's schema: two processes ping-pong a byte over pipes (perf bench sched pipe).

#include <memory>

#include "catalogue/schema.h"

namespace tlbfleet::catalogue::pipetest {

inline const MetricSpec kUsecsPerOp = {"usecs_per_op", "us/op", Better::kLower,
                                       "microseconds per round trip (perf's usecs/op)"};
inline const MetricSpec kOpsPerSec = {"ops_per_sec", "ops/s", Better::kHigher,
                                      "round trips per second (perf's ops/sec)"};

std::unique_ptr<WorkloadSchema> NewSchema();

}  // namespace tlbfleet::catalogue::pipetest
