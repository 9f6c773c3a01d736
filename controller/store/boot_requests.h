#pragma once
// Reboots into a boot entry, for runs whose arms name boot entries (scheduler/boot_plan.h).
// Every boot index of such a run runs on a boot the controller asked for: when a slot's next
// boot index is due, the controller records the request (which index, which entry, from which
// boot) and asks the host to reboot into the entry; the first new boot of the host then
// claims the index. The request is durable, so a controller restarted while the host reboots
// still recognises the boot. Functions run inside the caller's transaction (Store).

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "controller/store/sqlite.h"

namespace tlbfleet::store::boot_requests {

// True, and the request is consumed, when the slot's pending request is for `boot_index`,
// was made from another boot than `boot_id`, and this boot is the entry asked for (its agent
// says `boot_entry`), or `entry_failed`: the agent's check of the entry it selected failed, so
// the job will fail naming both (see LeaseRequest).
absl::StatusOr<bool> Claim(Database& db, int64_t run_id, int64_t slot, int64_t boot_index,
                           const std::string& boot_id, const std::string& boot_entry,
                           bool entry_failed);

// Records that the slot's host, on `boot_id`, is to reboot into `boot_entry` for `boot_index`.
absl::Status Record(Database& db, int64_t run_id, int64_t slot, int64_t boot_index,
                    const std::string& boot_entry, const std::string& boot_id);

// The boot entry of boot index `boot_index` of the slot: that of its first job.
// Times the slot's host came back from the reboot asked for on a boot that was not the entry.
absl::StatusOr<int64_t> Misses(Database& db, int64_t run_id, int64_t slot);
inline constexpr int64_t kMaxEntryMisses = 3;

absl::StatusOr<std::string> EntryOf(Database& db, int64_t run_id, int64_t slot, int64_t boot_index);

}  // namespace tlbfleet::store::boot_requests
