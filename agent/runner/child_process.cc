#include "agent/runner/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/child_setup.h"
#include "common/files.h"
#include "common/scoped_fd.h"

extern char** environ;

namespace tlbfleet::agent {
namespace {

using Clock = std::chrono::steady_clock;

// How long to keep reading after the child exited and its group was killed: only a process
// that left the group (setsid) can still hold the pipes open, and it is not waited for.
constexpr std::chrono::milliseconds kDrainAfterExit{2000};
constexpr size_t kMaxStdoutBytes = 64 << 20;

// Splits stdout into lines as it arrives, bounding line length and total size.
class LineCollector {
 public:
  LineCollector(const ChildSpec& spec, ChildResult& result) : spec_(spec), result_(result) {}

  void Add(const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (data[i] == '\n') {
        Flush();
        continue;
      }
      if (partial_.size() < spec_.max_line_bytes) {
        partial_.push_back(data[i]);
      } else {
        result_.stdout_truncated = true;
      }
    }
  }

  void Flush() {
    if (total_ + partial_.size() > kMaxStdoutBytes) {
      result_.stdout_truncated = true;
    } else {
      total_ += partial_.size();
      result_.stdout_lines.push_back(std::move(partial_));
    }
    partial_.clear();
  }

  void Finish() {
    if (!partial_.empty()) Flush();
  }

 private:
  const ChildSpec& spec_;
  ChildResult& result_;
  std::string partial_;
  size_t total_ = 0;
};

void AppendTail(std::string& tail, const char* data, size_t n, size_t keep) {
  tail.append(data, n);
  if (tail.size() > 2 * keep) tail.erase(0, tail.size() - keep);
}

// Runs in the child between fork and exec: async-signal-safe calls only, no allocation.
[[noreturn]] void ExecChild(pid_t parent, int out_fd, int err_fd, int report_fd, int go_read,
                            int go_write, char** argv, char** envp) {
  PrepareChildAfterFork(parent, out_fd, err_fd);
  if (go_read >= 0) {
    // Wait until the parent is done with us (ChildSpec::on_forked): it closes its end.
    ::close(go_write);
    char byte;
    while (::read(go_read, &byte, 1) < 0 && errno == EINTR) {
    }
  }
  ::execve(argv[0], argv, envp);
  int err = errno;
  ssize_t ignored = ::write(report_fd, &err, sizeof err);
  (void)ignored;
  ::_exit(127);
}

}  // namespace

CancelToken::CancelToken() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

CancelToken::~CancelToken() = default;

void CancelToken::Cancel(std::string reason) {
  {
    absl::MutexLock lock(&mu_);
    if (!cancelled_.load()) reason_ = std::move(reason);
    cancelled_.store(true);
  }
  uint64_t one = 1;
  ssize_t ignored = ::write(fd_.get(), &one, sizeof one);
  (void)ignored;
}

std::string CancelToken::reason() const {
  absl::MutexLock lock(&mu_);
  return reason_;
}

std::string ChildResult::Describe() const {
  switch (outcome) {
    case Outcome::kExited:
      return absl::StrCat("exited with status ", exit_code);
    case Outcome::kSignaled:
      return absl::StrCat("killed by signal ", signal, " (", ::strsignal(signal), ")");
    case Outcome::kTimedOut:
      return "timed out";
    case Outcome::kCancelled:
      return "cancelled";
  }
  return "unknown outcome";
}

absl::StatusOr<ChildResult> RunChild(const ChildSpec& spec, CancelToken* cancel) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("RunChild: empty argv");

  // Everything the child needs is built here, before fork.
  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  if (spec.env.empty()) {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) envp.push_back(*e);
  } else {
    for (const std::string& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  }
  envp.push_back(nullptr);

  ScopedFd out_read, out_write, err_read, err_write, report_read, report_write, go_read, go_write;
  auto open_pipe = [](ScopedFd& read_end, ScopedFd& write_end) {
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) return false;
    read_end.reset(ends[0]);
    write_end.reset(ends[1]);
    return true;
  };
  if (!open_pipe(out_read, out_write) || !open_pipe(err_read, err_write) ||
      !open_pipe(report_read, report_write) || (spec.on_forked && !open_pipe(go_read, go_write))) {
    return ErrnoStatus(errno, "pipe2");
  }

  const pid_t parent = ::getpid();
  const Clock::time_point start = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ExecChild(parent, out_write.get(), err_write.get(), report_write.get(), go_read.get(),
              go_write.get(), argv.data(), envp.data());
  }
  int fork_err = errno;
  out_write.reset();
  err_write.reset();
  report_write.reset();
  go_read.reset();
  if (pid > 0 && spec.on_forked) spec.on_forked(pid);
  go_write.reset();  // releases the child into exec
  if (pid < 0) return ErrnoStatus(fork_err, "fork");
  // Also from the parent, so kill(-pid) is right even if we get there before the child ran.
  ::setpgid(pid, pid);

  // The report pipe closes on a successful exec, or carries exec's errno.
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(report_read.get(), &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  report_read.reset();
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return ErrnoStatus(exec_errno, absl::StrCat("exec ", spec.argv[0]));
  }

  ChildResult result;
  LineCollector lines(spec, result);
  // Without pidfd (kernel < 5.3) exit is noticed by polling waitpid every 50 ms.
  // Via syscall(2): glibc 2.36's <sys/pidfd.h> lacks extern "C".
  ScopedFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  const bool has_deadline = spec.timeout.count() > 0;
  const Clock::time_point deadline = start + spec.timeout;
  bool killed = false;  // we sent SIGKILL to the group
  bool exited = false;  // the child is a zombie (or reaped)
  bool reaped = false;
  int wait_status = 0;
  Clock::time_point drain_deadline{};
  auto kill_group = [&] {
    ::kill(-pid, SIGKILL);
    killed = true;
  };

  while (out_read || err_read || !exited) {
    Clock::time_point now = Clock::now();
    if (!exited && !killed) {
      if (cancel != nullptr && cancel->cancelled()) {
        result.outcome = ChildResult::Outcome::kCancelled;
        kill_group();
      } else if (has_deadline && now >= deadline) {
        result.outcome = ChildResult::Outcome::kTimedOut;
        kill_group();
      }
    }
    if (exited && now >= drain_deadline) break;

    std::vector<pollfd> fds;
    if (out_read) fds.push_back({out_read.get(), POLLIN, 0});
    if (err_read) fds.push_back({err_read.get(), POLLIN, 0});
    if (pidfd && !exited) fds.push_back({pidfd.get(), POLLIN, 0});
    if (cancel != nullptr && !killed) fds.push_back({cancel->fd(), POLLIN, 0});

    auto wait_until = Clock::time_point::max();
    if (has_deadline && !killed && !exited) wait_until = deadline;
    if (exited) wait_until = std::min(wait_until, drain_deadline);
    int timeout_ms = -1;
    if (wait_until != Clock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(wait_until - now);
      timeout_ms = static_cast<int>(std::max<int64_t>(left.count() + 1, 0));
    }
    if (!pidfd && !exited) timeout_ms = timeout_ms < 0 ? 50 : std::min(timeout_ms, 50);

    int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) break;

    char buf[16384];
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == out_read.get() || p.fd == err_read.get()) {
        ssize_t got = ::read(p.fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          (p.fd == out_read.get() ? out_read : err_read).reset();
          continue;
        }
        if (p.fd == out_read.get()) {
          lines.Add(buf, static_cast<size_t>(got));
        } else {
          AppendTail(result.stderr_tail, buf, static_cast<size_t>(got), spec.stderr_tail_bytes);
        }
      }
    }
    if (!exited) {
      bool gone = false;
      if (pidfd) {
        for (const pollfd& p : fds) gone |= (p.fd == pidfd.get() && p.revents != 0);
      } else {
        pid_t w = ::waitpid(pid, &wait_status, WNOHANG);
        if (w == pid) gone = reaped = true;
      }
      if (gone) {
        exited = true;
        // Stragglers in the group would keep the pipes open and the machine busy.
        if (!reaped) ::kill(-pid, SIGKILL);
        drain_deadline = Clock::now() + kDrainAfterExit;
      }
    }
  }
  out_read.reset();
  err_read.reset();
  pidfd.reset();
  if (!reaped) {
    while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  lines.Finish();
  result.elapsed_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (result.stderr_tail.size() > spec.stderr_tail_bytes) {
    result.stderr_tail.erase(0, result.stderr_tail.size() - spec.stderr_tail_bytes);
  }
  if (result.outcome == ChildResult::Outcome::kExited) {
    if (WIFSIGNALED(wait_status)) {
      result.outcome = ChildResult::Outcome::kSignaled;
      result.signal = WTERMSIG(wait_status);
    } else {
      result.exit_code = WEXITSTATUS(wait_status);
    }
  }
  return result;
}

}  // namespace tlbfleet::agent
