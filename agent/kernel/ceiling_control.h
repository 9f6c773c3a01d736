#pragma once
// Changing the flush ceiling so that it always comes back. Before the first write in a boot
// the value the boot started with is journaled in the state dir (temp file, fsync, rename,
// directory fsync); it is written back after every job, on SIGTERM/SIGINT (the job ends
// through the same path), and at the next agent start if the agent died mid-job in the same
// boot. A journal from an earlier boot is discarded: a reboot reset the tunable.
//
//   <state-dir>/ceiling-journal    "boot_id <boot_id>\noriginal <pages>\n"
//
// The journal is removed once the original value is verifiably back.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/kernel/sysroot.h"

namespace tlbfleet::agent {

struct CeilingJournal {
  std::string boot_id;
  int64_t original = 0;  // pages: what the ceiling was before this boot's first write
};

std::string FormatCeilingJournal(const CeilingJournal& journal);
// INVALID_ARGUMENT (the reason in the message) unless both lines are there and well formed.
absl::StatusOr<CeilingJournal> ParseCeilingJournal(std::string_view text);

// NOT_FOUND if there is no journal; DATA_LOSS if it does not parse.
absl::StatusOr<CeilingJournal> ReadCeilingJournal(const std::string& path);
// Crash-safe (WriteFileAtomic): afterwards the journal is on disk, or the call failed.
absl::Status WriteCeilingJournal(const std::string& path, const CeilingJournal& journal);
// Unlinks the journal and fsyncs its directory; OK if it was not there.
absl::Status RemoveCeilingJournal(const std::string& path);

// What the start-up recovery found and did.
struct CeilingRecovery {
  enum class Outcome {
    kNoJournal,      // first start, or every earlier change was undone
    kRestored,       // same boot: the agent died mid-job; the original value is back
    kEarlierBoot,    // discarded (or, if corrupt, moved aside): the reboot reset the ceiling
    kCorrupt,        // unreadable journal of this (or an unknown) boot, moved aside to
                     // <path>.corrupt; nothing written: the host is degraded (ceiling_health.h)
    kRestoreFailed,  // same boot, but the write failed or the host's ceiling lock is held;
                     // the journal is kept: the host is degraded
  };
  Outcome outcome = Outcome::kNoJournal;
  CeilingJournal journal;  // when one was read
  std::string detail;      // one line for the log
};
const char* CeilingRecoveryName(CeilingRecovery::Outcome outcome);

// Call once at agent start, before any job. `boot_id` is the current
// /proc/sys/kernel/random/boot_id.
CeilingRecovery RecoverCeiling(const Sysroot& sysroot, const std::string& journal_path,
                               const std::string& boot_id);

// One job's change of the ceiling. Not thread-safe; one per job. The destructor restores.
class CeilingChanger {
 public:
  CeilingChanger(const Sysroot& sysroot, std::string journal_path, std::string boot_id);
  ~CeilingChanger();
  CeilingChanger(const CeilingChanger&) = delete;
  CeilingChanger& operator=(const CeilingChanger&) = delete;

  // Sets the ceiling named by `spec` ("default" = the value this boot started with: the
  // journal's if this boot has one, else the current value; or a page count) and returns the
  // value read back. Fails before touching anything if the spec is invalid, the host cannot
  // write the ceiling (FAILED_PRECONDITION with the probe's reason) or the journal cannot be
  // written, and with DATA_LOSS when a journal exists but does not parse (the boot's value is
  // unknown: the caller marks the host degraded). A write the kernel rejects, or a value
  // that reads back different, fails with the kernel's answer, and Restore() (or the
  // destructor) puts the original back. The caller holds the host's ceiling lock.
  absl::StatusOr<int64_t> Apply(std::string_view spec);

  // Writes the original value back, verifies it and removes the journal. OK when there is
  // nothing to restore. On failure the journal stays, for the next job or start.
  absl::Status Restore();

  std::optional<int64_t> applied() const { return applied_; }
  std::optional<int64_t> original() const { return original_; }

 private:
  const Sysroot& sysroot_;
  const std::string journal_path_;
  const std::string boot_id_;
  std::optional<int64_t> original_;  // set once the journal holds it: Restore() has work
  std::optional<int64_t> applied_;
};

}  // namespace tlbfleet::agent
