#pragma once
// tlbflush's schema: Alex Shi's TLB range-flush benchmark (readers' accesses against a flushing
// main thread), and the recorded flush-size distributions it can replay.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "catalogue/schema.h"

namespace tlbfleet::catalogue::tlbflush {

inline const MetricSpec kCost = {"cost_ns", "ns/access", Better::kLower,
                                 "readers' time per memory access while the flushes run (the "
                                 "classic 'cost Wns/time')"};
inline const MetricSpec kAccessRate = {"accesses_per_thread_ms", "accesses/thread/ms",
                                       Better::kHigher,
                                       "memory accesses per reader thread per millisecond"};
inline const MetricSpec kFlushNs = {"flush_ns", "ns/flush", Better::kLower,
                                    "main thread's time per flush operation (munmap, mprotect or "
                                    "madvise of `entries` pages)"};
inline const MetricSpec kFlushMs = {"flush_ms", "ms", Better::kLower,
                                    "time to flush every piece (the classic 'munmap use Xms')"};

// A recorded distribution of flush sizes to replay instead of one fixed `entries` (seed mail
// 000: "a trace-driven benchmark"). Written "size:weight,size:weight,..." where a size is a
// page count or an inclusive range "65-128" (drawn uniformly within it) and a weight any
// positive number (percentages, counts): e.g. Dave Hansen's 2014 table as "1:56.92,2:13.78,
// 3:8.26,...". `tlbfleet profile RUN --flush-sizes` writes one from a stored flush profile.
struct FlushSize {
  int64_t lo = 1;  // pages, inclusive
  int64_t hi = 1;
  double weight = 1;
};
using FlushSizes = std::vector<FlushSize>;

inline constexpr int64_t kMaxFlushSizePages = int64_t{1} << 20;
inline constexpr size_t kMaxFlushSizeEntries = 4096;

// INVALID_ARGUMENT with what is wrong (without the parameter name). A full flush ("-1",
// "GLOBAL") is refused: it is the ceiling's decision, not a size a program asks for.
absl::StatusOr<FlushSizes> ParseFlushSizes(std::string_view text);
// Canonical spelling: entries sorted by size, weights in %g.
std::string FormatFlushSizes(const FlushSizes& sizes);

std::unique_ptr<WorkloadSchema> NewSchema();

}  // namespace tlbfleet::catalogue::tlbflush
