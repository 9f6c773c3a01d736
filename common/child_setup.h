#pragma once
// What every child the agent starts does between fork and exec (the workloads' runner,
// agent/runner/child_process.h, and the kernel builder's commands, agent/builder/command.h),
// in one place so the two cannot drift apart.

#include <sys/types.h>

namespace tlbfleet {

// In the child, right after fork: a process group of its own (so a kill of the group reaches
// everything it starts), SIGKILL when the parent dies, stdin from /dev/null, stdout and
// stderr on `out_fd` and `err_fd`, SIGPIPE at its default and no signal blocked (the agent
// blocks SIGTERM/SIGINT in every thread and gRPC ignores SIGPIPE; exec keeps both), and every
// descriptor above 2 close-on-exec, so nothing another agent thread opened without O_CLOEXEC
// leaks into the child (CLOEXEC rather than close keeps a report pipe open until exec
// succeeds). `_exit(127)`s when the parent died before PR_SET_PDEATHSIG took effect.
// Async-signal-safe: no allocation, no lock.
void PrepareChildAfterFork(pid_t parent, int out_fd, int err_fd);

}  // namespace tlbfleet
