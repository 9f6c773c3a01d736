#include "agent/runner/state_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "agent/runner/paths.h"

namespace tlbfleet::agent {

absl::StatusOr<StateDirLock> StateDirLock::Acquire(const std::string& state_dir) {
  std::error_code ec;
  std::filesystem::create_directories(state_dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("--state-dir ", state_dir, ": cannot create it: ", ec.message()));
  }
  const std::string path = paths::LockFile(state_dir);
  ScopedFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd) {
    return absl::InvalidArgumentError(
        absl::StrCat("--state-dir ", state_dir, ": not writable (", std::strerror(errno),
                     "); the agent keeps its id, spool and ceiling journal there"));
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char pid[32] = {};
    const ssize_t n = ::pread(fd.get(), pid, sizeof pid - 1, 0);
    if (err == EWOULDBLOCK) {
      std::string holder = n > 0 ? std::string(absl::StripAsciiWhitespace(pid)) : "";
      return absl::FailedPreconditionError(
          absl::StrCat("--state-dir ", state_dir, " is in use by another tlbfleet-agent",
                       holder.empty() ? "" : absl::StrCat(" (pid ", holder, ")"),
                       "; one agent per state directory"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("--state-dir ", state_dir, ": cannot lock ", path, ": ", std::strerror(err)));
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd.get(), 0) != 0 || ::pwrite(fd.get(), pid.data(), pid.size(), 0) < 0) {
    const int err = errno;
    return absl::InvalidArgumentError(
        absl::StrCat("--state-dir ", state_dir, ": not writable (", std::strerror(err), ")"));
  }
  return StateDirLock(std::move(fd));
}

}  // namespace tlbfleet::agent
