#pragma once
// What the nightly unit's .cc files (nightly.cc, nightly_bisects.cc, nightly_recovery.cc)
// share: who started a run it submitted (the owner recorded with its submission,
// store::Submission::owner: "schedule:<id>" or "bisect:<id>"), when a run has ended, and which
// failures are worth trying again.

#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/store/sqlite.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::nightly {

inline constexpr char kScheduleOwnerPrefix[] = "schedule:";
inline constexpr char kBisectOwnerPrefix[] = "bisect:";

inline std::string ScheduleOwner(const std::string& schedule_id) {
  return absl::StrCat(kScheduleOwnerPrefix, schedule_id);
}
inline std::string BisectOwner(const std::string& bisect_id) {
  return absl::StrCat(kBisectOwnerPrefix, bisect_id);
}

// The schedule's (the bisection's) id, or "" when `owner` is not one.
inline std::string ScheduleOfOwner(const std::string& owner) {
  return absl::StartsWith(owner, kScheduleOwnerPrefix)
             ? owner.substr(sizeof(kScheduleOwnerPrefix) - 1)
             : std::string();
}
inline std::string BisectOfOwner(const std::string& owner) {
  return absl::StartsWith(owner, kBisectOwnerPrefix) ? owner.substr(sizeof(kBisectOwnerPrefix) - 1)
                                                     : std::string();
}

inline bool RunEnded(v1::RunState state) {
  return state == v1::RUN_STATE_SUCCEEDED || state == v1::RUN_STATE_FAILED ||
         state == v1::RUN_STATE_CANCELLED;
}

// A failure that says nothing about the request: the storage (disk full, I/O error, busy) or
// the controller was not able to answer now. The same call may well succeed later, so the
// work is kept and redone rather than given up.
inline bool RetryableFailure(const absl::Status& status) {
  return store::IsStorageFailure(status) || absl::IsUnavailable(status) ||
         absl::IsResourceExhausted(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsAborted(status);
}

// Whether some builder agent has kernel source `source` with build config `config` ("": any).
// INVALID_ARGUMENT naming `<prefix>source` or `<prefix>config` (and what the builders have).
absl::Status CheckBuilderHas(const v1::ListHostsResponse& hosts, const std::string& source,
                             const std::string& config, const std::string& prefix);

}  // namespace tlbfleet::nightly
