#include "agent/kernel/ceiling.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/files.h"
#include "common/scoped_fd.h"

namespace tlbfleet::agent {
namespace {

constexpr char kDebugfsX86Dir[] = "/sys/kernel/debug/x86";

bool DebugfsMounted(const Sysroot& sysroot) {
  absl::StatusOr<std::string> mounts = sysroot.Read("/proc/mounts");
  if (!mounts.ok()) return false;
  for (absl::string_view line : absl::StrSplit(*mounts, '\n')) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() >= 3 && fields[2] == "debugfs") return true;
  }
  return false;
}

// True if /proc/filesystems is readable and does not list debugfs.
bool KernelLacksDebugfs(const Sysroot& sysroot) {
  absl::StatusOr<std::string> fs = sysroot.Read("/proc/filesystems");
  if (!fs.ok()) return false;
  for (absl::string_view line : absl::StrSplit(*fs, '\n')) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (!fields.empty() && fields.back() == "debugfs") return false;
  }
  return true;
}

// Why opening the ceiling file failed with `err`, in the words an operator acts on.
std::string FailureReason(const Sysroot& sysroot, int err, const std::string& lockdown) {
  switch (err) {
    case ENOENT:
      if (!sysroot.IsDirectory(kDebugfsX86Dir) && !DebugfsMounted(sysroot)) {
        // The agent mounts debugfs itself (mounts.h); only root can.
        if (sysroot.root().empty() && ::geteuid() != 0) return "not root";
        if (KernelLacksDebugfs(sysroot)) return "no debugfs (kernel built without DEBUG_FS)";
        return "debugfs not mounted";
      }
      return "file absent (kernel older than 3.17 or not x86)";
    case EPERM:
      if (lockdown == "integrity" || lockdown == "confidentiality") {
        return absl::StrCat("kernel lockdown (", lockdown, ")");
      }
      if (lockdown.empty()) {
        return "operation not permitted (EPERM; lockdown mode unknown: securityfs not mounted "
               "at /sys/kernel/security)";
      }
      return "operation not permitted (EPERM)";
    case EACCES:
      return "not root";
    default:
      return absl::StrCat(std::strerror(err), " (errno ", err, ")");
  }
}

absl::StatusOr<int64_t> ParseCeilingText(const std::string& text, const std::string& path) {
  int64_t value = 0;
  std::string trimmed = Trim(text);
  if (!absl::SimpleAtoi(trimmed, &value)) {
    return absl::DataLossError(absl::StrCat(path, ": not an integer: '", trimmed, "'"));
  }
  return value;
}

}  // namespace

std::string ReadLockdownMode(const Sysroot& sysroot) {
  absl::StatusOr<std::string> text = sysroot.Read(kLockdownPath);
  if (!text.ok()) return "";
  size_t open = text->find('[');
  size_t close = text->find(']', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return "";
  return text->substr(open + 1, close - open - 1);
}

v1::CeilingInfo ProbeCeiling(const Sysroot& sysroot) {
  v1::CeilingInfo info;
  std::string lockdown = ReadLockdownMode(sysroot);
  info.set_lockdown(lockdown);

  int read_err = 0;
  absl::StatusOr<std::string> text = sysroot.Read(kCeilingPath, &read_err);
  if (text.ok()) {
    info.set_readable(true);
    absl::StatusOr<int64_t> value = ParseCeilingText(*text, sysroot.Path(kCeilingPath));
    if (value.ok()) {
      info.set_has_value(true);
      info.set_value(*value);
    }
  }

  // Opening for writing without writing changes nothing, in debugfs or elsewhere.
  int write_err = 0;
  ScopedFd probe(sysroot.OpenFd(kCeilingPath, O_WRONLY));
  if (probe) {
    info.set_writable(true);
  } else {
    write_err = -probe.release();
  }

  if (!info.readable()) {
    info.set_reason(FailureReason(sysroot, read_err, lockdown));
  } else if (!info.writable()) {
    info.set_reason(FailureReason(sysroot, write_err, lockdown));
  } else if (!info.has_value()) {
    info.set_reason(absl::StrCat("unparseable value: '", Trim(*text), "'"));
  }
  return info;
}

absl::StatusOr<int64_t> ReadCeiling(const Sysroot& sysroot) {
  absl::StatusOr<std::string> text = sysroot.Read(kCeilingPath);
  if (!text.ok()) return text.status();
  return ParseCeilingText(*text, sysroot.Path(kCeilingPath));
}

absl::StatusOr<int64_t> WriteCeiling(const Sysroot& sysroot, int64_t value) {
  std::string path = sysroot.Path(kCeilingPath);
  if (int err = sysroot.WriteText(kCeilingPath, absl::StrCat(value, "\n")); err != 0) {
    return ErrnoStatus(err, absl::StrCat("write ", value, " to ", path));
  }
  absl::StatusOr<int64_t> back = ReadCeiling(sysroot);
  if (!back.ok()) return back.status();
  if (*back != value) {
    return absl::FailedPreconditionError(
        absl::StrCat("wrote ", value, " to ", path, " but it reads back ", *back));
  }
  return *back;
}

absl::StatusOr<CeilingSpec> ParseCeilingSpec(std::string_view spec) {
  if (spec == "default") return CeilingSpec{true, 0};
  std::string text(spec);
  auto invalid = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid ceiling '", text, "': want \"default\" or a page count in [0, 2147483647]"));
  };
  if (text.empty() || text[0] < '0' || text[0] > '9') return invalid();
  errno = 0;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text.c_str(), &end, 0);
  if (errno != 0 || end == nullptr || *end != '\0' ||
      value > static_cast<unsigned long long>(kMaxCeiling)) {
    return invalid();
  }
  return CeilingSpec{false, static_cast<int64_t>(value)};
}

}  // namespace tlbfleet::agent
