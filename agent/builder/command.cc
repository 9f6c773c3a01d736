#include "agent/builder/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/child_setup.h"
#include "common/files.h"
#include "common/scoped_fd.h"

extern char** environ;

namespace tlbfleet::agent::builder {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxLineBytes = 64 * 1024;
constexpr size_t kStderrTailBytes = 4096;
// After the program exited and its group was killed, only a process that left the group
// (setsid, as `git gc --auto` does when it detaches) can hold the pipes open: not waited for.
constexpr std::chrono::milliseconds kDrainAfterExit{2000};

// What the child reports through the report pipe when it cannot exec: the step and errno.
enum Stage : int { kChdir = 1, kExec = 2 };

// Splits a byte stream into lines for `on_line`, cutting over-long ones.
class LineSplitter {
 public:
  explicit LineSplitter(const LineFn& on_line) : on_line_(on_line) {}

  void Add(const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (data[i] == '\n') {
        Flush();
      } else if (partial_.size() < kMaxLineBytes) {
        partial_.push_back(data[i]);
      }
    }
  }
  void Finish() {
    if (!partial_.empty()) Flush();
  }

 private:
  void Flush() {
    if (on_line_) on_line_(partial_);
    partial_.clear();
  }

  const LineFn& on_line_;
  std::string partial_;
};

// The agent's environment with `overrides` ("K=V") replacing or adding entries.
std::vector<std::string> MergedEnvironment(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  auto key_of = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    bool replaced = std::any_of(overrides.begin(), overrides.end(),
                                [&](const std::string& o) { return key_of(o) == key_of(entry); });
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

// Between fork and exec: async-signal-safe calls only, everything allocated before the fork.
[[noreturn]] void ExecChild(pid_t parent, const char* cwd, int out_fd, int err_fd, int report_fd,
                            char** argv, char** envp) {
  PrepareChildAfterFork(parent, out_fd, err_fd);
  int report[2] = {kChdir, 0};
  if (cwd[0] == '\0' || ::chdir(cwd) == 0) {
    report[0] = kExec;
    ::execve(argv[0], argv, envp);
  }
  report[1] = errno;
  ssize_t ignored = ::write(report_fd, report, sizeof report);
  (void)ignored;
  ::_exit(127);
}

}  // namespace

std::string CommandResult::Describe() const {
  if (cancelled) return "cancelled";
  if (timed_out) return "timed out";
  if (signal != 0) return absl::StrCat("killed by signal ", signal, " (", ::strsignal(signal), ")");
  return absl::StrCat("exited with status ", exit_code);
}

absl::StatusOr<std::string> FindProgram(std::string_view name) {
  if (name.empty()) return absl::InvalidArgumentError("empty program name");
  if (name.find('/') != std::string_view::npos) return std::string(name);
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", std::string(name));
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return absl::NotFoundError(absl::StrCat(std::string(name), ": not found on PATH"));
}

std::string CommandLine(const std::vector<std::string>& argv) {
  return absl::StrJoin(argv, " ", [](std::string* out, const std::string& word) {
    const bool plain = !word.empty() && word.find_first_of(" \t'\"$\\") == std::string::npos;
    absl::StrAppend(out, plain ? word : absl::StrCat("'", word, "'"));
  });
}

absl::StatusOr<CommandResult> RunCommand(const Command& command, const LineFn& on_line) {
  if (command.argv.empty()) return absl::InvalidArgumentError("RunCommand: empty argv");
  absl::StatusOr<std::string> program = FindProgram(command.argv[0]);
  if (!program.ok()) return program.status();
  if (command.cancel_fd >= 0) {
    pollfd cancel = {command.cancel_fd, POLLIN, 0};
    if (::poll(&cancel, 1, 0) == 1) {
      CommandResult result;  // cancelled before it started: nothing to kill
      result.cancelled = true;
      return result;
    }
  }

  // Everything the child needs is built before the fork.
  std::vector<char*> argv;
  argv.push_back(program->data());
  for (size_t i = 1; i < command.argv.size(); ++i) {
    argv.push_back(const_cast<char*>(command.argv[i].c_str()));
  }
  argv.push_back(nullptr);
  std::vector<std::string> env = MergedEnvironment(command.env);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  ScopedFd out_read, out_write, err_read, err_write, report_read, report_write;
  auto open_pipe = [](ScopedFd& read_end, ScopedFd& write_end) {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) return false;
    read_end.reset(ends[0]);
    write_end.reset(ends[1]);
    return true;
  };
  if (!open_pipe(out_read, out_write) ||
      (!command.merge_stderr && !open_pipe(err_read, err_write)) ||
      !open_pipe(report_read, report_write)) {
    return ErrnoStatus(errno, "pipe2");
  }

  const pid_t parent = ::getpid();
  const Clock::time_point start = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ExecChild(parent, command.cwd.c_str(), out_write.get(),
              command.merge_stderr ? out_write.get() : err_write.get(), report_write.get(),
              argv.data(), envp.data());
  }
  const int fork_errno = errno;
  out_write.reset();
  err_write.reset();
  report_write.reset();
  if (pid < 0) return ErrnoStatus(fork_errno, "fork");
  ::setpgid(pid, pid);  // also from here, so kill(-pid) is right before the child ran

  // The report pipe closes on a successful exec, or carries the failed step and its errno.
  int report[2] = {0, 0};
  ssize_t n;
  do {
    n = ::read(report_read.get(), report, sizeof report);
  } while (n < 0 && errno == EINTR);
  report_read.reset();
  if (n == static_cast<ssize_t>(sizeof report)) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return report[0] == kChdir ? ErrnoStatus(report[1], absl::StrCat("chdir ", command.cwd))
                               : ErrnoStatus(report[1], absl::StrCat("exec ", *program));
  }

  CommandResult result;
  LineSplitter lines(on_line);
  // Via syscall(2): glibc 2.36's <sys/pidfd.h> lacks extern "C". Without pidfd (kernel < 5.3)
  // the exit is noticed by polling waitpid every 50 ms.
  ScopedFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  const bool has_deadline = command.timeout.count() > 0;
  const Clock::time_point deadline = start + command.timeout;
  bool killed = false;
  bool exited = false;
  bool reaped = false;
  int wait_status = 0;
  Clock::time_point drain_deadline{};

  while (out_read || err_read || !exited) {
    const Clock::time_point now = Clock::now();
    if (!exited && !killed && has_deadline && now >= deadline) {
      result.timed_out = true;
      ::kill(-pid, SIGKILL);
      killed = true;
    }
    if (exited && now >= drain_deadline) break;

    std::vector<pollfd> fds;
    if (out_read) fds.push_back({out_read.get(), POLLIN, 0});
    if (err_read) fds.push_back({err_read.get(), POLLIN, 0});
    if (pidfd && !exited) fds.push_back({pidfd.get(), POLLIN, 0});
    if (command.cancel_fd >= 0 && !killed && !exited) {
      fds.push_back({command.cancel_fd, POLLIN, 0});
    }
    Clock::time_point wake = Clock::time_point::max();
    if (has_deadline && !killed && !exited) wake = deadline;
    if (exited) wake = std::min(wake, drain_deadline);
    int timeout_ms = -1;
    if (wake != Clock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now);
      timeout_ms = static_cast<int>(std::max<int64_t>(left.count() + 1, 0));
    }
    if (!pidfd && !exited) timeout_ms = timeout_ms < 0 ? 50 : std::min(timeout_ms, 50);
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;

    char buf[16384];
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == command.cancel_fd) {
        if (!exited && !killed) {
          result.cancelled = true;
          ::kill(-pid, SIGKILL);
          killed = true;
        }
        continue;
      }
      if (p.fd == pidfd.get()) continue;
      const ssize_t got = ::read(p.fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      const bool is_out = p.fd == out_read.get();
      if (got <= 0) {
        (is_out ? out_read : err_read).reset();
      } else if (is_out) {
        lines.Add(buf, static_cast<size_t>(got));
      } else {
        result.stderr_tail.append(buf, static_cast<size_t>(got));
        if (result.stderr_tail.size() > 2 * kStderrTailBytes) {
          result.stderr_tail.erase(0, result.stderr_tail.size() - kStderrTailBytes);
        }
      }
    }
    if (!exited) {
      bool gone = false;
      if (pidfd) {
        for (const pollfd& p : fds) gone |= (p.fd == pidfd.get() && p.revents != 0);
      } else if (::waitpid(pid, &wait_status, WNOHANG) == pid) {
        gone = reaped = true;
      }
      if (gone) {
        exited = true;
        // The leader is a zombie until reaped, so its group id still names only its group.
        if (!reaped) ::kill(-pid, SIGKILL);
        drain_deadline = Clock::now() + kDrainAfterExit;
      }
    }
  }
  out_read.reset();
  err_read.reset();
  if (!reaped) {
    while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  lines.Finish();
  if (result.stderr_tail.size() > kStderrTailBytes) {
    result.stderr_tail.erase(0, result.stderr_tail.size() - kStderrTailBytes);
  }
  if (WIFSIGNALED(wait_status)) {
    result.signal = WTERMSIG(wait_status);
  } else {
    result.exit_code = WEXITSTATUS(wait_status);
  }
  return result;
}

absl::StatusOr<std::vector<std::string>> CommandOutput(const Command& command) {
  std::vector<std::string> lines;
  absl::StatusOr<CommandResult> result =
      RunCommand(command, [&lines](std::string_view line) { lines.emplace_back(line); });
  if (!result.ok()) return result.status();
  if (!result->ok()) {
    std::string tail = Trim(result->stderr_tail);
    return absl::InternalError(absl::StrCat(CommandLine(command.argv), ": ", result->Describe(),
                                            tail.empty() ? "" : ": ", tail));
  }
  return lines;
}

}  // namespace tlbfleet::agent::builder
