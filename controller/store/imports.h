#pragma once
// Runs imported from other tools' result directories (mmtests, LKP; docs/formats.md#import):
// stored finished, with their samples, in one transaction. Functions run inside the caller's
// transaction (Store) and record the run events of what they change in `events`.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "controller/store/internal.h"
#include "controller/store/sqlite.h"
#include "controller/store/store.h"

namespace tlbfleet::store::imports {

// See Store::ImportRun.
absl::StatusOr<ImportedRunResult> Insert(Database& db, EventBatch& events,
                                         const ImportedRunRecord& record, int64_t now_ms);

}  // namespace tlbfleet::store::imports
