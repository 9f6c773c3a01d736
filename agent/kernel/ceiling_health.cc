#include "agent/kernel/ceiling_health.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "agent/kernel/ceiling.h"
#include "agent/kernel/ceiling_control.h"
#include "agent/kernel/ceiling_lock.h"
#include "common/files.h"

namespace tlbfleet::agent {

absl::Status MarkCeilingDegraded(const std::string& path, const std::string& boot_id,
                                 std::string_view reason) {
  std::string line = absl::StrReplaceAll(absl::string_view(reason.data(), reason.size()),
                                         {{"\n", " "}, {"\r", " "}});
  return WriteFileAtomic(path, absl::StrCat("boot_id ", boot_id, "\nreason ", line, "\n"));
}

std::optional<CeilingDegraded> ReadCeilingDegraded(const std::string& path,
                                                   const std::string& boot_id) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (absl::IsNotFound(text.status())) return std::nullopt;
  if (!text.ok()) {
    return CeilingDegraded{boot_id,
                           absl::StrCat("cannot read ", path, ": ", text.status().message())};
  }
  CeilingDegraded d;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (absl::ConsumePrefix(&line, "boot_id ")) d.boot_id = std::string(line);
    if (absl::ConsumePrefix(&line, "reason ")) d.reason = std::string(line);
  }
  if (d.boot_id.empty() || d.reason.empty()) {
    return CeilingDegraded{boot_id, absl::StrCat(path, " does not parse")};
  }
  if (d.boot_id != boot_id) {
    (void)ClearCeilingDegraded(path);  // the reboot reset the tunable
    return std::nullopt;
  }
  return d;
}

absl::Status ClearCeilingDegraded(const std::string& path) {
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoStatus(errno, absl::StrCat("unlink ", path));
  }
  // The unlink is done; a directory that cannot be synced only risks the marker coming back
  // after a crash, which the boot_id check above then clears again.
  (void)FsyncDirectory(DirName(path));
  return absl::OkStatus();
}

void ApplyCeilingHealth(const std::optional<CeilingDegraded>& degraded, v1::HostInfo& host) {
  if (!degraded.has_value()) return;
  host.set_ceiling_degraded(true);
  host.set_ceiling_degraded_reason(degraded->reason);
  v1::CeilingInfo* c = host.mutable_ceiling();
  std::string probe_reason = c->reason();
  c->set_writable(false);
  c->set_reason(
      absl::StrCat("degraded: ", degraded->reason, probe_reason.empty() ? "" : "; ", probe_reason));
}

absl::Status DeclareCeilingKnownGood(const Sysroot& sysroot, const std::string& journal_path,
                                     const std::string& degraded_path, int64_t value) {
  if (value < 0 || value > kMaxCeiling) {
    return absl::InvalidArgumentError(
        absl::StrCat("--value ", value, ": want a page count in [0, ", kMaxCeiling, "]"));
  }
  v1::CeilingInfo probe = ProbeCeiling(sysroot);
  if (!probe.readable() || !probe.writable()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the flush ceiling is not writable on this host: ", probe.reason()));
  }
  // No boot_id: a dead holder's journal is exactly what the operator overrides (a live
  // holder still refuses).
  absl::StatusOr<std::unique_ptr<CeilingLock>> lock =
      CeilingLock::Acquire(sysroot, CeilingLock::Mode::kExclusive, journal_path, "");
  if (!lock.ok()) return lock.status();
  absl::StatusOr<int64_t> back = WriteCeiling(sysroot, value);
  if (!back.ok()) {
    return absl::Status(back.status().code(), absl::StrCat("cannot set the flush ceiling to ",
                                                           value, ": ", back.status().message()));
  }
  if (absl::Status s = RemoveCeilingJournal(journal_path); !s.ok()) return s;
  return ClearCeilingDegraded(degraded_path);
}

}  // namespace tlbfleet::agent
