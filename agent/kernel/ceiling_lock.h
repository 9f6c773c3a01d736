#pragma once
// A host-wide lock around the flush ceiling, so that two agents (or an agent and an operator's
// `tlbfleet-agent ceiling-known-good`) on one host never interleave their changes: flock(2)
// on /run/tlbfleet-ceiling.lock (through the sysroot). /run is a tmpfs: the file, like the
// tunable, does not survive a reboot, and a crashed holder's lock is released by the kernel.
//
// A job that sets the ceiling holds it exclusively from before its first write until its
// restore is verified; a job that only observes the ceiling holds it shared while its
// workload runs. Neither waits: a held lock fails the job at once, naming the holder (two
// measurements on one host at once would disturb each other anyway).
//
// The holder writes one line into the file ("pid 123 journal /var/lib/a/ceiling-journal")
// and truncates it on release, so a line found by the next exclusive holder means the
// previous one died mid-change: if its journal still exists (from this boot), that agent has
// not yet put the original value back, and nobody else may assume the current value is it.
//
// Thread-compatible; the lock is released by the destructor (or by the process dying).

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "agent/kernel/sysroot.h"
#include "common/scoped_fd.h"

namespace tlbfleet::agent {

inline constexpr char kCeilingLockPath[] = "/run/tlbfleet-ceiling.lock";

class CeilingLock {
 public:
  enum class Mode { kShared, kExclusive };

  // Never blocks. UNAVAILABLE when another holder conflicts ("the host's ceiling lock
  // /run/tlbfleet-ceiling.lock is held by pid 4242 (journal /var/lib/b/ceiling-journal)");
  // FAILED_PRECONDITION for an exclusive lock when a dead holder left the ceiling changed
  // (its journal of `boot_id` still exists, and it is not `journal_path`); other errors
  // when the file cannot be opened. `journal_path` identifies this holder; an empty
  // `boot_id` skips the dead-holder check (an operator overriding it).
  static absl::StatusOr<std::unique_ptr<CeilingLock>> Acquire(const Sysroot& sysroot, Mode mode,
                                                              std::string_view journal_path,
                                                              std::string_view boot_id);
  ~CeilingLock();
  CeilingLock(const CeilingLock&) = delete;
  CeilingLock& operator=(const CeilingLock&) = delete;

  Mode mode() const { return mode_; }

 private:
  CeilingLock(ScopedFd fd, Mode mode) : fd_(std::move(fd)), mode_(mode) {}
  ScopedFd fd_;  // its close releases the flock
  Mode mode_;
};

// "pid <pid> journal <path>\n": what an exclusive holder writes into the lock file.
std::string FormatCeilingLockHolder(int pid, std::string_view journal_path);
// The journal path named by a holder line; "" if the text is not one.
std::string CeilingLockHolderJournal(std::string_view text);

}  // namespace tlbfleet::agent
