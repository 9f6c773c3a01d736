#pragma once
// A run's policy for a lost host (`on_host_lost` in a run spec; docs/run-spec.md, "A lost
// host"): its default per design, its validation and how its bound reads.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::scheduler {

inline constexpr char kHostLostWait[] = "wait";
inline constexpr char kHostLostFail[] = "fail";
inline constexpr char kHostLostRestart[] = "restart";
inline constexpr uint32_t kDefaultHostLostAfterSeconds = 30 * 60;
inline constexpr uint32_t kMaxHostLostAfterSeconds = 7 * 24 * 3600;

// The policy in force: the spec's own (with `after` defaulting to 30 min), or its design's:
//   fail after 30 min when an arm names a boot entry (a host lost after rebooting into an
//     entry is most often that kernel not booting: another host would only repeat it) or when
//     hosts.names pins the run's slots to as many hosts as it has slots (no host to move to);
//   restart after 30 min otherwise (the answer still comes, from one machine per slot).
v1::HostLostPolicy EffectiveHostLostPolicy(const v1::RunSpec& spec);

// Whether the spec's slots could move to another host: hosts.names is empty or lists more
// hosts than the run has slots.
bool SlotsCanMove(const v1::RunSpec& spec);

// `after` as a run spec writes it: a duration ("30m", "2h", "90s", "1h30m") or whole seconds.
// INVALID_ARGUMENT naming `path` for anything else, 0, or more than 7 days.
absl::StatusOr<uint32_t> ParseHostLostAfter(std::string_view text, std::string_view path);

// INVALID_ARGUMENT naming the field (on_host_lost.action, on_host_lost.after) for an unknown
// action, a bound of 0 or above a week, or restart on a run pinned to named hosts with no other
// eligible host. OK when the spec sets no policy.
absl::Status CheckHostLostPolicy(const v1::RunSpec& spec);

// "30 min", "2 h", "90 s", "1 h 30 min": a bound for people.
std::string FormatSeconds(int64_t seconds);

}  // namespace tlbfleet::scheduler
