#pragma once
// Runs git, make, tar and gcc for the kernel builder: one program with an argv vector (never a
// shell), in a working directory, its output handed over line by line as it arrives.
//
// Why not agent/runner/child_process.h: RunChild collects a workload's stdout into a vector and
// keeps only the tail of stderr, while a kernel build's log (stdout and stderr interleaved, as a
// person reads it) must stream to the controller as it is written; and the runner's library
// will link this one (the job runner calls the builder), not the other way round. The
// process-group handling is the same: the child leads its own group, gets SIGKILL when the
// thread that started it dies (PR_SET_PDEATHSIG), and a cancellation or timeout kills the
// whole group (make -j and every compiler it started).

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tlbfleet::agent::builder {

// Called with each output line (without its '\n'), on the thread that called RunCommand.
using LineFn = std::function<void(std::string_view line)>;

struct Command {
  // argv[0] is a program name looked up on $PATH (as the shell would), or a path with a '/'.
  std::vector<std::string> argv;
  std::string cwd;                       // the child's working directory; "" = the agent's
  std::vector<std::string> env;          // "K=V": set in (or replacing in) the agent's environment
  bool merge_stderr = false;             // stderr into the same lines as stdout (a build log)
  std::chrono::milliseconds timeout{0};  // 0 = none; on expiry the group is killed
  // A descriptor that becomes readable when the command must stop (agent::CancelToken::fd()
  // is one); never read from here, so one descriptor can cancel a series of commands. -1 =
  // the command cannot be cancelled.
  int cancel_fd = -1;
};

struct CommandResult {
  int exit_code = 0;  // when it exited
  int signal = 0;     // when a signal ended it (including our SIGKILL)
  bool cancelled = false;
  bool timed_out = false;
  std::string stderr_tail;  // the last 4 KiB of stderr (empty with merge_stderr)

  bool ok() const { return !cancelled && !timed_out && signal == 0 && exit_code == 0; }
  // "exited with status 2", "killed by signal 9", "cancelled", "timed out".
  std::string Describe() const;
};

// `name` as execve needs it: itself when it holds a '/', else the first executable of that
// name in a $PATH directory. NOT_FOUND "<name>: not found on PATH".
absl::StatusOr<std::string> FindProgram(std::string_view name);

// Runs `command` to its end, handing each line of its stdout (and stderr when merged) to
// `on_line` (which may be empty). Not OK only when it could not be started (NOT_FOUND for a
// missing program, the errno of a failed chdir); what the program did is in the result. Lines
// longer than 64 KiB are cut there. Must not run on a thread that exits before it returns
// (the parent-death signal is tied to the forking thread).
absl::StatusOr<CommandResult> RunCommand(const Command& command, const LineFn& on_line);

// Runs `command` and returns its stdout lines. An exit other than 0 is an error: INTERNAL
// "<argv[0] argv[1]>: exited with status N: <stderr tail>".
absl::StatusOr<std::vector<std::string>> CommandOutput(const Command& command);

// The command as a person would type it, for logs: words with spaces are single-quoted.
std::string CommandLine(const std::vector<std::string>& argv);

}  // namespace tlbfleet::agent::builder
