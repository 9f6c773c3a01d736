#pragma once
// netperf's schema: TCP/UDP stream and request/response tests against a loopback server of the
// workload's own, a running netserver, or another agent's (server: peer).

#include <memory>

#include "catalogue/schema.h"

namespace tlbfleet::catalogue::netperf {

inline const MetricSpec kMbit = {"mbit_per_sec", "Mbit/s", Better::kHigher,
                                 "stream tests: bytes the server received x 8 / 10^6 / elapsed"};
inline const MetricSpec kTrans = {"trans_per_sec", "trans/s", Better::kHigher,
                                  "rr tests: request/response transactions per second"};

// The `server` value the controller replaces with another agent's netserver.
inline constexpr char kPeer[] = "peer";

std::unique_ptr<WorkloadSchema> NewSchema();

}  // namespace tlbfleet::catalogue::netperf
