#pragma once
// Runs one workload in a child process and collects its output.
//
// The child leads its own process group (setpgid(0, 0)) and gets SIGKILL when the thread
// that started it dies (PR_SET_PDEATHSIG; a kill -9 of the agent kills the workload). On
// timeout or cancellation the whole group is killed with kill(-pgid, SIGKILL); when the
// child exits on its own, stragglers left in its group are killed too, so nothing a
// workload forked outlives its job.
//
// Only async-signal-safe calls run between fork and exec; argv and envp are built before.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/scoped_fd.h"

namespace tlbfleet::agent {

// Wakes a running RunChild() from another thread. Thread-safe; one token per run.
class CancelToken {
 public:
  CancelToken();
  ~CancelToken();
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  // The first call's reason is kept; later calls only wake the runner again.
  void Cancel(std::string reason);
  bool cancelled() const { return cancelled_.load(); }
  std::string reason() const;
  int fd() const { return fd_.get(); }  // an eventfd, readable once cancelled

 private:
  ScopedFd fd_;
  std::atomic<bool> cancelled_{false};
  mutable absl::Mutex mu_;
  std::string reason_ ABSL_GUARDED_BY(mu_);
};

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is the program executed (a path, no $PATH search)
  std::vector<std::string> env;   // "K=V" entries; empty inherits the agent's environment
  std::chrono::milliseconds timeout{0};  // 0 = none
  size_t stderr_tail_bytes = 4096;       // how much of stderr to keep (the end of it)
  size_t max_line_bytes = 64 * 1024;     // longer stdout lines are cut (and marked truncated)
  // If set, called in the parent with the child's pid after fork and before the child
  // execs (the child waits for it): perf counters attach here with enable_on_exec.
  std::function<void(pid_t)> on_forked;
};

struct ChildResult {
  enum class Outcome { kExited, kSignaled, kTimedOut, kCancelled };
  Outcome outcome = Outcome::kExited;
  int exit_code = 0;                      // kExited
  int signal = 0;                         // kSignaled
  std::vector<std::string> stdout_lines;  // without the '\n'
  bool stdout_truncated = false;          // some line exceeded max_line_bytes
  std::string stderr_tail;
  double elapsed_seconds = 0;

  bool succeeded() const { return outcome == Outcome::kExited && exit_code == 0; }
  // "exited with status 2", "killed by signal 11 (Segmentation fault)", "timed out after 5 s",
  // "cancelled".
  std::string Describe() const;
};

// Starts spec.argv, reads its stdout lines and stderr tail until it ends, and reaps it.
// Errors (status not OK) only when the child could not be started (fork/exec failure,
// e.g. NOT_FOUND for a missing program); everything the child does is in the ChildResult.
// `cancel` may be null. Must not run on a thread that exits before this returns (the
// parent-death signal is tied to the forking thread).
absl::StatusOr<ChildResult> RunChild(const ChildSpec& spec, CancelToken* cancel);

}  // namespace tlbfleet::agent
