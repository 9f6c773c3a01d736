#include "agent/kernel/reboot.h"

#include <sys/reboot.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tlbfleet::agent {

absl::Status StartReboot(const std::string& command) {
  if (command.empty()) return absl::FailedPreconditionError("no reboot command configured");
  // Whatever the command does, results spooled on disk must be there after the boot.
  ::sync();
  if (command == kRebootSyscall) {
    if (::reboot(RB_AUTOBOOT) != 0) {
      const int err = errno;
      return absl::PermissionDeniedError(absl::StrCat("reboot(2): ", std::strerror(err)));
    }
    return absl::OkStatus();
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    return absl::InternalError(absl::StrCat("fork for the reboot command: ", std::strerror(err)));
  }
  if (pid == 0) {
    // The agent blocks SIGTERM/SIGINT for its signal thread; a shell must not inherit that.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      const int err = errno;
      return absl::InternalError(
          absl::StrCat("waiting for the reboot command: ", std::strerror(err)));
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  if (WIFEXITED(status)) {
    return absl::FailedPreconditionError(
        absl::StrCat("reboot command \"", command, "\" exited with status ", WEXITSTATUS(status)));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("reboot command \"", command, "\" was killed by signal ", WTERMSIG(status)));
}

}  // namespace tlbfleet::agent
