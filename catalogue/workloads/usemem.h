#pragma once
// usemem's schema: processes map sparse files and read them (page cache and reclaim).

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "catalogue/schema.h"

namespace tlbfleet::catalogue::usemem {

inline const MetricSpec kMbPerSec = {"mb_per_sec", "MB/s", Better::kHigher,
                                     "MiB read by all processes per second of wall time"};
inline const MetricSpec kElapsed = {"elapsed_seconds", "s", Better::kLower,
                                    "from the release of the processes until the last was reaped"};

// "2x_ram", "0.5x_ram": a positive multiple of RAM up to kMaxRamFactor; "" = size_mb.
// Returns the factor (0 for ""), or INVALID_ARGUMENT saying what is expected.
absl::StatusOr<double> ParseRamFactor(std::string_view text);
inline constexpr double kMaxRamFactor = 64;

std::unique_ptr<WorkloadSchema> NewSchema();

}  // namespace tlbfleet::catalogue::usemem
