#pragma once
// ebizzy's schema: threads copy random memory chunks into fresh buffers and search them.

#include <memory>

#include "catalogue/schema.h"

namespace tlbfleet::catalogue::ebizzy {

inline constexpr char kRecordsPerSec[] = "records_per_sec";

std::unique_ptr<WorkloadSchema> NewSchema();

}  // namespace tlbfleet::catalogue::ebizzy
