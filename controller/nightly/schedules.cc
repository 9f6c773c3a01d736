#include "controller/nightly/schedules.h"

#include <algorithm>
#include <tuple>

namespace tlbfleet::nightly {

std::vector<DueRun> TakeDue(std::vector<ScheduleState>* schedules, absl::Time now) {
  std::vector<DueRun> due;
  for (ScheduleState& s : *schedules) {
    if (s.paused) continue;
    if (s.last_handled == absl::InfinitePast()) {
      s.last_handled = now;  // never handled: starts now, as a new schedule does
      continue;
    }
    const FireDecision d = DecideFire(s.cron, s.last_handled, now);
    if (!d.fire) continue;
    due.push_back(DueRun{s.id, d.slot, d.skipped});
    s.last_handled = d.slot;
  }
  std::sort(due.begin(), due.end(), [](const DueRun& a, const DueRun& b) {
    return std::tie(a.slot, a.schedule_id) < std::tie(b.slot, b.schedule_id);
  });
  return due;
}

absl::Time NextWakeUp(const std::vector<ScheduleState>& schedules, absl::Time now) {
  absl::Time next = absl::InfiniteFuture();
  for (const ScheduleState& s : schedules) {
    if (s.paused) continue;
    const absl::Time from = s.last_handled == absl::InfinitePast() ? now : s.last_handled;
    next = std::min(next, s.cron.NextAfter(from));
  }
  // A slot that has already passed (the caller has not taken it yet) is due at once.
  return next < now ? now : next;
}

void Pause(ScheduleState* schedule) { schedule->paused = true; }

void Resume(ScheduleState* schedule, absl::Time now) {
  schedule->paused = false;
  schedule->last_handled = now;
}

}  // namespace tlbfleet::nightly
