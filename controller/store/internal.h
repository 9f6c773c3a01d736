#pragma once
// Helpers shared by the store's units (runs, dispatch, results, events). Not for use outside
// controller/store.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::store {

// Run events recorded by one transaction, in id order; the Store hands them to its sink
// after COMMIT.
using EventBatch = std::vector<v1::RunEvent>;

namespace internal {

v1::RunState RunStateFromText(std::string_view state);
// jobs.state ('queued', 'leased', ...) as a JobState; 'leased' is RUNNING.
v1::JobState JobStateFromText(std::string_view state);
std::string LeaseId(int64_t job_id, int64_t attempt);

}  // namespace internal
}  // namespace tlbfleet::store
