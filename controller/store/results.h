#pragma once
// Samples and job completions. Functions run inside the caller's transaction (Store) and
// record the run events of what they change in `events`.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/store/internal.h"
#include "controller/store/sqlite.h"
#include "controller/store/store.h"

namespace tlbfleet::store::results {

// See Store::IngestSamples. Keeps the run's sample count; renews the lease until
// `renew_until_ms` when it is above 0.
absl::StatusOr<IngestResult> Ingest(Database& db, const std::string& agent_id,
                                    const v1::SampleBatch& batch, int64_t renew_until_ms = 0);
// See Store::CompleteJob.
absl::StatusOr<CompletionResult> Complete(Database& db, EventBatch& events,
                                          const std::string& agent_id,
                                          const v1::JobComplete& complete, int64_t now_ms,
                                          int max_attempts);
absl::StatusOr<std::vector<v1::Sample>> Samples(Database& db, int64_t run_id);

}  // namespace tlbfleet::store::results
