#pragma once
// Runs and their jobs: creating, reading, cancelling, failing and finishing runs, and
// growing adaptive runs. Functions run inside the caller's transaction (Store) and record
// the run events of what they change in `events`.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/scheduler/expand.h"
#include "controller/store/internal.h"
#include "controller/store/sqlite.h"
#include "controller/store/store.h"

namespace tlbfleet::store::runs {

// The runs row of a new run (queued, plan = the spec's iterations and boots); its id. The
// caller records the run's first event once its jobs are in (Submitted).
absl::StatusOr<int64_t> Insert(Database& db, const v1::RunSpec& spec, const std::string& spec_yaml,
                               int64_t now_ms, bool expand_on_bind);
// Stores `jobs` as queued jobs of `run_id`; `slot` >= 0 overrides the plans' slot numbers
// (a deferred run's slot expansion).
absl::Status InsertJobs(Database& db, int64_t run_id, const v1::RunSpec& spec,
                        const std::vector<scheduler::JobPlan>& jobs, int64_t slot);

// The plan of a stored job (its assignment) in `slot`, for copies of it (adaptive growth,
// work measured again).
scheduler::JobPlan PlanFromAssignment(const v1::JobAssignment& a, uint32_t slot);

// The "queued" event of a run just stored.
absl::Status Submitted(Database& db, EventBatch& events, int64_t run_id, int64_t now_ms);

// NOT_FOUND for an unknown run; DATA_LOSS when its spec does not parse.
absl::StatusOr<v1::Run> Load(Database& db, int64_t run_id);
absl::StatusOr<std::vector<v1::Run>> List(Database& db, uint32_t limit);
absl::StatusOr<std::vector<ActiveRun>> Active(Database& db);
// Those of `run_ids` that are still active, in id order (a dispatch snapshot's update).
absl::StatusOr<std::vector<ActiveRun>> ActiveAmong(Database& db,
                                                   const std::vector<int64_t>& run_ids);

// queued -> running, with its event; no change in any other state.
absl::Status MarkRunning(Database& db, EventBatch& events, int64_t run_id, int64_t now_ms);
// A queued or running run -> failed with `error`, its queued jobs cancelled. No change (and
// no event) for a run that already ended.
absl::Status Fail(Database& db, EventBatch& events, int64_t run_id, const std::string& error,
                  int64_t now_ms);
// (agent_id, lease_id) of the leases that were running; see Store::CancelRun.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Cancel(Database& db,
                                                                        EventBatch& events,
                                                                        int64_t run_id,
                                                                        int64_t now_ms);
// Ends a run whose jobs have all ended (succeeded, or failed when any failed), filling in
// `result`. An adaptive run whose jobs all succeeded waits for a decision instead
// (result->awaiting_decision).
absl::Status FinishIfDone(Database& db, EventBatch& events, int64_t run_id, int64_t now_ms,
                          CompletionResult* result);

absl::StatusOr<std::vector<ActiveRun>> AwaitingDecision(Database& db);
absl::Status Extend(Database& db, EventBatch& events, int64_t run_id, const RunExtension& extension,
                    int64_t now_ms);
absl::Status FinishAdaptive(Database& db, EventBatch& events, int64_t run_id,
                            const std::string& reason, int64_t now_ms,
                            const std::vector<v1::AdaptiveRow>& rows);

absl::StatusOr<StoreCounts> Counts(Database& db);

}  // namespace tlbfleet::store::runs
