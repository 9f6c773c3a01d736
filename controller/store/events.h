#pragma once
// The run_events table: what happened to each run (v1::RunEvent), each with the run's job
// counts and sample count right after it. Functions run inside the caller's transaction.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/store/internal.h"
#include "controller/store/sqlite.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::store::events {

// Stores `event` (run_id and time set by the caller; id, job counts and sample count filled
// in here from the run row as it stands) and appends it, as stored, to `batch`.
absl::Status Record(Database& db, EventBatch& batch, v1::RunEvent event);

// A RunStateChange event of run `run_id`.
v1::RunEvent StateChange(int64_t run_id, v1::RunState state, std::string reason, int64_t now_ms);

// A JobEvent for job `job_id` as its row stands (arm, sweep value, iteration, boot, and the
// lease and agent when set), with the agent's host name; the caller adds what only it knows
// (samples, elapsed time, reason).
absl::StatusOr<v1::RunEvent> ForJob(Database& db, int64_t job_id, v1::JobState state,
                                    int64_t now_ms);

// Events of `run_id` with an id above `after_id`, oldest first, at most `limit`.
absl::StatusOr<std::vector<v1::RunEvent>> Since(Database& db, int64_t run_id, uint64_t after_id,
                                                uint32_t limit);

}  // namespace tlbfleet::store::events
