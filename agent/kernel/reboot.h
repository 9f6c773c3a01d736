#pragma once
// Rebooting the host when the controller asks for a fresh boot. The command comes from the
// agent's own configuration (tlbfleet-agent --reboot-command), never from the controller.

#include <string>

#include "absl/status/status.h"

namespace tlbfleet::agent {

// The --reboot-command value that reboots through reboot(2) itself, after sync(2): for
// hosts (and microVM guests) without an init system to ask.
inline constexpr char kRebootSyscall[] = "syscall";

// Syncs file systems, then reboots with `command`: kRebootSyscall, or a shell command line
// run with /bin/sh -c (e.g. "systemctl reboot"). Returns OK once the reboot is under way
// (for reboot(2) it does not return at all on the real root; in a child PID namespace it
// ends the namespace). Errors say why: a failed reboot(2) (EPERM without CAP_SYS_BOOT),
// a command that could not start or exited with a non-zero status.
absl::Status StartReboot(const std::string& command);

}  // namespace tlbfleet::agent
