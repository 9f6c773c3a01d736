#pragma once
// Whether the agent knows that the flush ceiling holds the value this boot started with.
// When a restore fails (the kernel refused the write, or it reads back another value) or the
// ceiling journal is unreadable, the agent no longer knows what the boot's value was, and a
// later `ceiling: default` arm would measure whatever was left behind. The host is then
// *degraded*: it takes no job that sets the ceiling until the state is known good again,
// which happens only through
//   - a reboot (the kernel starts from its built-in value; the marker is keyed by boot_id), or
//   - an operator naming the good value: `tlbfleet-agent ceiling-known-good --value N`
//     (DeclareCeilingKnownGood), which writes it, verifies it and clears the marker.
//
//   <state-dir>/ceiling-degraded   "boot_id <boot_id>\nreason <one line>\n"
//
// The state is visible in HostInfo (ceiling_degraded, ceiling_degraded_reason; and
// ceiling.writable=false with the reason, so the controller's existing host matching sends
// no ceiling job there) and so in `tlbfleet hosts`.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "agent/kernel/sysroot.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::agent {

struct CeilingDegraded {
  std::string boot_id;
  std::string reason;
};

// Crash-safe (WriteFileAtomic). `reason` is flattened to one line.
absl::Status MarkCeilingDegraded(const std::string& path, const std::string& boot_id,
                                 std::string_view reason);

// The marker of this boot, or nullopt when there is none. A marker of another boot is removed
// (the reboot reset the tunable). One that does not parse counts as degraded: better to
// refuse ceiling jobs than to guess.
std::optional<CeilingDegraded> ReadCeilingDegraded(const std::string& path,
                                                   const std::string& boot_id);

// Unlinks the marker and fsyncs its directory; OK if it was not there.
absl::Status ClearCeilingDegraded(const std::string& path);

// Records `degraded` in `host`: ceiling_degraded and its reason, and ceiling.writable=false
// with reason "degraded: <reason>" (the probe's own reason, if any, is kept after it).
void ApplyCeilingHealth(const std::optional<CeilingDegraded>& degraded, v1::HostInfo& host);

// The operator's word that `value` is the good value of this boot: under the host's exclusive
// ceiling lock, writes it, reads it back, then removes the journal and the marker. Fails
// (and changes neither file) when the lock is held, the host cannot write the ceiling, or the
// kernel does not hold `value` afterwards.
absl::Status DeclareCeilingKnownGood(const Sysroot& sysroot, const std::string& journal_path,
                                     const std::string& degraded_path, int64_t value);

}  // namespace tlbfleet::agent
