#include "controller/scheduler/host_lost.h"

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "controller/scheduler/boot_plan.h"
#include "controller/scheduler/run_spec_internal.h"

namespace tlbfleet::scheduler {

bool SlotsCanMove(const v1::RunSpec& spec) {
  const int names = spec.hosts().names_size();
  return names == 0 || static_cast<uint32_t>(names) > std::max<uint32_t>(spec.hosts().count(), 1);
}

v1::HostLostPolicy EffectiveHostLostPolicy(const v1::RunSpec& spec) {
  v1::HostLostPolicy policy;
  if (spec.has_on_host_lost() && !spec.on_host_lost().action().empty()) {
    policy = spec.on_host_lost();
  } else {
    policy.set_action(RunUsesBootEntries(spec) || !SlotsCanMove(spec) ? kHostLostFail
                                                                      : kHostLostRestart);
  }
  if (policy.after_seconds() == 0) policy.set_after_seconds(kDefaultHostLostAfterSeconds);
  return policy;
}

absl::StatusOr<uint32_t> ParseHostLostAfter(std::string_view text, std::string_view path_view) {
  const absl::string_view input(text.data(), text.size());
  const absl::string_view path(path_view.data(), path_view.size());
  int64_t seconds = 0;
  absl::Duration duration;
  if (absl::SimpleAtoi(input, &seconds)) {
    duration = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(input, &duration)) {
    return FieldError(
        path, absl::StrCat("expected a duration such as 30m, 2h or 90s, got ", Quote(input)));
  }
  if (duration < absl::Seconds(1) || duration > absl::Seconds(kMaxHostLostAfterSeconds)) {
    return FieldError(
        path, absl::StrCat("must be at least 1 s and at most 7 days (168h), got ", Quote(input)));
  }
  return static_cast<uint32_t>(absl::ToInt64Seconds(duration));
}

absl::Status CheckHostLostPolicy(const v1::RunSpec& spec) {
  if (!spec.has_on_host_lost()) return absl::OkStatus();
  const v1::HostLostPolicy& p = spec.on_host_lost();
  const std::vector<std::string> known = {kHostLostWait, kHostLostFail, kHostLostRestart};
  if (p.action().empty()) return FieldError("on_host_lost.action", "required");
  if (std::find(known.begin(), known.end(), p.action()) == known.end()) {
    return FieldError("on_host_lost.action",
                      absl::StrCat("unknown action ", Quote(p.action()),
                                   " (known: ", absl::StrJoin(known, ", "), ")"));
  }
  // A spec built from JSON says 0 for "absent": the default then applies.
  if (p.after_seconds() > kMaxHostLostAfterSeconds) {
    return FieldError("on_host_lost.after",
                      absl::StrCat("must be at most 7 days (168h), got ", p.after_seconds(), " s"));
  }
  if (p.action() == kHostLostRestart && !SlotsCanMove(spec)) {
    return FieldError(
        "on_host_lost.action",
        absl::StrCat("restart measures a lost host's slot again on another host, but hosts.names "
                     "pins the run's ",
                     std::max<uint32_t>(spec.hosts().count(), 1), " slot(s) to ",
                     spec.hosts().names_size(),
                     " host(s): there is no other eligible host (use "
                     "wait or fail, or name more hosts)"));
  }
  return absl::OkStatus();
}

std::string FormatSeconds(int64_t seconds) {
  if (seconds < 60) return absl::StrCat(seconds, " s");
  const int64_t minutes = seconds / 60;
  if (minutes < 60) {
    return seconds % 60 == 0 ? absl::StrCat(minutes, " min")
                             : absl::StrCat(minutes, " min ", seconds % 60, " s");
  }
  const int64_t hours = minutes / 60;
  return minutes % 60 == 0 ? absl::StrCat(hours, " h")
                           : absl::StrCat(hours, " h ", minutes % 60, " min");
}

}  // namespace tlbfleet::scheduler
