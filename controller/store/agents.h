#pragma once
// Agents: their hosts, what a returning agent holds, and the reboots the controller asked of
// them. Functions run inside the caller's transaction (Store) and record the run events of
// what they change in `events`.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/store/internal.h"
#include "controller/store/sqlite.h"
#include "controller/store/store.h"

namespace tlbfleet::store::agents {

// See Store::RegisterHost.
absl::Status Register(Database& db, const std::string& agent_id, const v1::HostInfo& info,
                      const std::string& principal, int64_t now_ms);
// The lease part of Store::RegisterAgent.
absl::StatusOr<Reconciled> Reconcile(Database& db, EventBatch& events, const std::string& agent_id,
                                     const AgentReport& report, int64_t now_ms, int64_t lease_ms,
                                     int max_attempts);
absl::StatusOr<std::vector<StoredHost>> List(Database& db);

absl::Status SaveReboot(Database& db, const RebootRecord& record);
absl::Status DeleteReboot(Database& db, const std::string& agent_id);
absl::StatusOr<std::vector<RebootRecord>> Reboots(Database& db);

}  // namespace tlbfleet::store::agents
