#pragma once
// The agent's state directory, one helper per path:
//
//   <state-dir>/
//     lock                     flock(2)ed by the one agent using the directory; its pid
//     agent-id                 persistent agent id (32 hex digits), created once
//     ceiling-journal          the flush ceiling this boot started with, while changed
//                              (agent/kernel/ceiling_control.h)
//     ceiling-degraded         present while the agent does not know the ceiling holds this
//                              boot's value (agent/kernel/ceiling_health.h)
//     spool/
//       <lease_id>.pb          v1::SpooledJob of a finished job, until the controller acks it
//       corrupt/
//         <lease_id>.pb.<time> spool files that failed to parse, kept for a human to look at
//
// Lease ids come from the controller and become file names, so only ids made of
// [A-Za-z0-9._-] (not starting with '.') are accepted: see ValidLeaseId().

#include <string>
#include <string_view>

namespace tlbfleet::agent::paths {

std::string LockFile(std::string_view state_dir);
std::string AgentIdFile(std::string_view state_dir);
std::string CeilingJournalFile(std::string_view state_dir);
std::string CeilingDegradedFile(std::string_view state_dir);
std::string SpoolDir(std::string_view state_dir);
std::string SpoolFile(std::string_view state_dir, std::string_view lease_id);
std::string CorruptSpoolDir(std::string_view state_dir);

inline constexpr char kSpoolSuffix[] = ".pb";

// True if `lease_id` is safe as a file name: 1..200 chars of [A-Za-z0-9._-], no leading '.'.
bool ValidLeaseId(std::string_view lease_id);

}  // namespace tlbfleet::agent::paths
