#include "agent/kernel/mounts.h"

#include <sys/mount.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tlbfleet::agent {

bool IsMounted(const Sysroot& sysroot, std::string_view abs_dir, std::string_view fstype) {
  absl::StatusOr<std::string> mounts = sysroot.Read("/proc/mounts");
  if (!mounts.ok()) return false;
  const std::string want_dir = sysroot.Path(abs_dir);
  for (absl::string_view line : absl::StrSplit(*mounts, '\n')) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() >= 3 && fields[1] == want_dir &&
        fields[2] == absl::string_view(fstype.data(), fstype.size())) {
      return true;
    }
  }
  return false;
}

void MountIfMissing(const Sysroot& sysroot, const char* fstype, const char* abs_dir,
                    MountReport& report) {
  if (!sysroot.root().empty() || IsMounted(sysroot, abs_dir, fstype)) return;
  if (::mount("none", abs_dir, fstype, 0, nullptr) == 0) {
    report.mounted.push_back(abs_dir);
  } else {
    int err = errno;
    report.errors.push_back(
        absl::StrCat("mount -t ", fstype, " none ", abs_dir, ": ", std::strerror(err)));
  }
}

MountReport EnsureKernelMounts(const Sysroot& sysroot) {
  MountReport report;
  // securityfs first: it tells the ceiling probe why debugfs refuses the ceiling.
  MountIfMissing(sysroot, "securityfs", kSecurityfsDir, report);
  MountIfMissing(sysroot, "debugfs", kDebugfsDir, report);
  MountIfMissing(sysroot, "tracefs", kTracefsDir, report);
  return report;
}

void UndoMounts(const MountReport& report) {
  // Reverse order: nothing else nests, but it is the order that always works.
  for (auto it = report.mounted.rbegin(); it != report.mounted.rend(); ++it) {
    ::umount2(it->c_str(), MNT_DETACH);
  }
}

}  // namespace tlbfleet::agent
