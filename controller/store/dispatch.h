#pragma once
// Leases, host slots and boots: which job an agent runs next, keeping leases alive, and
// taking them back from silent agents and from agents that lost or refused them. Functions run
// inside the caller's transaction (Store) and record the run events of what they change in
// `events`.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/store/internal.h"
#include "controller/store/sqlite.h"
#include "controller/store/store.h"

namespace tlbfleet::store::dispatch {

// See Store::Lease.
absl::StatusOr<LeaseResult> Lease(Database& db, EventBatch& events, const LeaseRequest& request);
absl::StatusOr<bool> Renew(Database& db, const std::string& lease_id, const std::string& agent_id,
                           int64_t now_ms, int64_t lease_ms);
absl::StatusOr<int64_t> ExtendAll(Database& db, int64_t until_ms);
absl::StatusOr<std::vector<ExpiredLease>> Expire(Database& db, EventBatch& events, int64_t now_ms,
                                                 int max_attempts);
absl::StatusOr<std::optional<std::string>> HeldBy(Database& db, const std::string& agent_id);
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> PeerReservations(Database& db);

// A leased job, as lease expiry and release need it.
struct HeldJob {
  int64_t job_id = 0;
  int64_t run_id = 0;
  std::string lease_id;
  std::string agent_id;
  int64_t attempts = 0;
};
// The leased jobs of `agent_id`.
absl::StatusOr<std::vector<HeldJob>> HeldJobs(Database& db, const std::string& agent_id);
// The leased job of `lease_id` if `agent_id` holds it.
absl::StatusOr<std::optional<HeldJob>> Held(Database& db, const std::string& lease_id,
                                            const std::string& agent_id);

struct Requeue {
  std::string why;            // the job event's reason (the attempt count is added)
  bool count_attempt = true;  // false: the attempt is given back (the job never started)
};
// Takes the lease back: discards the attempt's samples, re-queues the job (or, after
// `max_attempts`, fails it and its run) and records the event. The agent keeps its slot
// whatever happened to it: a slot's jobs never go to another agent.
absl::StatusOr<ExpiredLease> TakeBack(Database& db, EventBatch& events, const HeldJob& job,
                                      const Requeue& how, int64_t now_ms, int max_attempts);

}  // namespace tlbfleet::store::dispatch
