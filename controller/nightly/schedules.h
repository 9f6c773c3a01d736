#pragma once
// Which schedules are due (pure). The controller keeps, per schedule, the latest slot it has
// handled; it must store the new value in the same transaction that records the run it
// starts, so that a crash between the two can neither lose a night nor run it twice.
//
// A controller that was down for several slots runs each schedule once on start, for the
// latest slot missed, and says how many it skipped. A paused schedule is never due; resuming
// it does not run the slots that passed while it was paused.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "controller/nightly/cron.h"

namespace tlbfleet::nightly {

struct ScheduleState {
  std::string id;
  CronSchedule cron;
  bool paused = false;
  // The latest slot handled; for a new or resumed schedule, when it was created or resumed.
  // InfinitePast: never set; TakeDue() then starts the schedule at `now`.
  absl::Time last_handled = absl::InfinitePast();
};

struct DueRun {
  std::string schedule_id;
  absl::Time slot;
  int64_t skipped = 0;  // earlier slots folded into this run (missed while down)
};

// The runs due at `now`, at most one per schedule, ordered by slot then id. Advances
// `last_handled` of each schedule that fires to the slot it fires for.
std::vector<DueRun> TakeDue(std::vector<ScheduleState>* schedules, absl::Time now);

// The earliest slot after `now` of any schedule that is not paused; InfiniteFuture if none.
absl::Time NextWakeUp(const std::vector<ScheduleState>& schedules, absl::Time now);

void Pause(ScheduleState* schedule);
// Slots between the pause and `now` are not run: the schedule starts afresh from `now`.
void Resume(ScheduleState* schedule, absl::Time now);

}  // namespace tlbfleet::nightly
