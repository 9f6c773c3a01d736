#pragma once
// A run's host slots as machines: who holds a slot, and work measured again because its
// machine was lost or its boot was cut short. A slot is bound to one agent (and the machine
// it reported) for the whole run; its jobs never go to another agent. When a lost host's slot
// is restarted, or a boot of it ended before its jobs were done, the finished jobs of that
// work are *abandoned* — they stay 'succeeded' with their samples, marked with the reason
// (jobs.abandoned), left out of every comparison — and queued copies measure it again, in the
// original order. Each such piece of work is one row of abandoned_work. Functions run inside
// the caller's transaction (Store) and record the run events of what they change.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "controller/store/internal.h"
#include "controller/store/sqlite.h"
#include "controller/store/store.h"

namespace tlbfleet::store::slots {

struct Binding {
  int64_t slot = 0;
  std::string agent_id;
  std::string machine_id;  // "" for slots bound before the machine was recorded
  std::string hostname;
};
// Who holds `slot` of `run_id`; nullopt when nobody does.
absl::StatusOr<std::optional<Binding>> BindingOf(Database& db, int64_t run_id, int64_t slot);

// Boot index `boot_index` of `slot` began on boot `old_boot`, which ended before its jobs were
// done (a crash, a watchdog, an operator's reboot), and the slot's host is now on `new_boot`:
// the index's finished jobs are abandoned and queued again, so that the whole boot index is
// measured on one boot. Nothing happens when none of its jobs had finished.
absl::Status RepeatBoot(Database& db, EventBatch& events, int64_t run_id, const v1::RunSpec& spec,
                        int64_t slot, int64_t boot_index, const std::string& old_boot,
                        const std::string& new_boot, int64_t now_ms);

// See Store::RestartSlot.
absl::StatusOr<SlotRestart> Restart(Database& db, EventBatch& events, int64_t run_id, int64_t slot,
                                    const std::string& agent_id, const std::string& reason,
                                    int64_t now_ms);

// See Store::SlotProgress.
absl::StatusOr<SlotProgress> Progress(Database& db, int64_t run_id, int64_t slot);

// Fills run->abandoned from abandoned_work.
absl::Status LoadAbandoned(Database& db, int64_t run_id, v1::Run* run);

// What a finished run's stop reason adds when its design was not met as planned (work
// measured again), e.g. "; not as planned: slot 0 restarted after vm1 (agent 0d60fd02) was
// lost"; "" when it went as planned.
absl::StatusOr<std::string> DesignNote(Database& db, int64_t run_id);

}  // namespace tlbfleet::store::slots
