#pragma once
// Cron schedules for nightly runs (pure; UTC only, no time zones, no seconds).
//
// Five fields, as in crontab(5): minute (0-59), hour (0-23), day of month (1-31), month (1-12
// or JAN-DEC), day of week (0-7 or SUN-SAT; 0 and 7 are Sunday). Each field is a
// comma-separated list of `*`, `N`, `N-M`, with an optional `/STEP` (`*/15`, `1-30/5`, and
// `N/STEP` meaning N to the field's maximum). Names are case-insensitive and may be range ends
// (`MON-FRI`). Macros: @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly.
// As in Vixie cron, when both day fields are restricted (neither starts with `*`), a day
// matches if either matches; otherwise both must.
//
// Parse() refuses what cannot be meant: a field out of range, a backwards range, a step of 0,
// a wrong field count, and schedules that never fire (`0 0 30 2 *`), naming the field.

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace tlbfleet::nightly {

class CronSchedule {
 public:
  static absl::StatusOr<CronSchedule> Parse(std::string_view text);

  // The first fire time strictly after `t`, at a whole minute, UTC.
  absl::Time NextAfter(absl::Time t) const;

  // Whether the schedule fires at this minute (UTC).
  bool Matches(absl::CivilMinute minute) const;

  // The schedule as written (trimmed).
  const std::string& text() const { return text_; }

 private:
  CronSchedule() = default;
  bool DayMatches(absl::CivilDay day) const;

  std::string text_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_of_month_;  // bit 0 unused
  std::bitset<13> months_;         // bit 0 unused
  std::bitset<7> days_of_week_;    // 0 = Sunday
  // The day fields began with `*`: see the header comment on how the two combine.
  bool any_day_of_month_ = true;
  bool any_day_of_week_ = true;
};

// What a schedule should do at `now`, given the latest slot it already handled (or, for a
// new or resumed schedule, the time it was created or resumed).
struct FireDecision {
  bool fire = false;
  // The slot to run now: the latest one due. Slots missed while the controller was down run
  // once, as this one, not once each.
  absl::Time slot = absl::InfinitePast();
  // Slots due before `slot` that are skipped (folded into this run); counted up to
  // kMaxCounted.
  int64_t skipped = 0;
  absl::Time next = absl::InfiniteFuture();  // the first slot after `now`
  static constexpr int64_t kMaxCounted = 100000;
};

FireDecision DecideFire(const CronSchedule& schedule, absl::Time last_handled, absl::Time now);

}  // namespace tlbfleet::nightly
