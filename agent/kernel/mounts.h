#pragma once
// The pseudo file systems the agent needs: debugfs (the flush ceiling), securityfs (the
// lockdown mode) and tracefs (tracepoints). Many hosts boot without some of them mounted;
// the agent mounts what is missing at start and before each probe, so a fresh host reports
// the real obstacle (e.g. "kernel lockdown (integrity)") rather than "debugfs not mounted".

#include <string>
#include <string_view>
#include <vector>

#include "agent/kernel/sysroot.h"

namespace tlbfleet::agent {

inline constexpr char kDebugfsDir[] = "/sys/kernel/debug";
inline constexpr char kSecurityfsDir[] = "/sys/kernel/security";
inline constexpr char kTracefsDir[] = "/sys/kernel/tracing";

struct MountReport {
  std::vector<std::string> mounted;  // mount points this call mounted (real paths)
  std::vector<std::string> errors;   // "mount -t debugfs /sys/kernel/debug: Operation not ..."
};

// True if /proc/mounts (under the sysroot) lists a file system of type `fstype` at
// `abs_dir` (a path inside the sysroot, e.g. "/sys/kernel/debug").
bool IsMounted(const Sysroot& sysroot, std::string_view abs_dir, std::string_view fstype);

// Mounts `fstype` at `abs_dir` unless it is mounted there; real root only (a no-op for a
// fake sysroot). What it did goes to `report`.
void MountIfMissing(const Sysroot& sysroot, const char* fstype, const char* abs_dir,
                    MountReport& report);

// Mounts debugfs, securityfs and tracefs at their usual places when they are not mounted
// there. Only on the real root (sysroot.root() == ""): a fake sysroot is never touched.
// Never fails as a function: what could not be mounted (not root, a kernel without the file
// system) is in `errors`, and the probes then name the obstacle.
MountReport EnsureKernelMounts(const Sysroot& sysroot);

// Unmounts each of `report.mounted` (tests: undo only what they mounted themselves).
void UndoMounts(const MountReport& report);

}  // namespace tlbfleet::agent
