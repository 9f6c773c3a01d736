#pragma once
// One agent per state directory. Two agents on one directory would share an agent id, a
// spool and a ceiling journal: each would resend (and delete) the other's results and
// restore the other's ceiling. The first agent holds an exclusive flock(2) on
// <state-dir>/lock for as long as it runs (the kernel drops it when the process dies, even by
// kill -9); a second one is refused at start.

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "common/scoped_fd.h"

namespace tlbfleet::agent {

class StateDirLock {
 public:
  // Creates the directory if needed, then takes the lock and writes this process's pid into
  // the lock file. INVALID_ARGUMENT naming --state-dir when the directory cannot be created
  // or written (read-only file system, permissions); FAILED_PRECONDITION naming the other
  // agent's pid when it is locked.
  static absl::StatusOr<StateDirLock> Acquire(const std::string& state_dir);

  // Movable; the lock is released when the last owner is destroyed (its descriptor closes).

 private:
  explicit StateDirLock(ScopedFd fd) : fd_(std::move(fd)) {}
  ScopedFd fd_;
};

}  // namespace tlbfleet::agent
