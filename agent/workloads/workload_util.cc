#include "agent/workloads/workload_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/files.h"

namespace tlbfleet::workloads {

Measurement Measure(const MetricSpec& spec, double value, std::string series) {
  Measurement m;
  m.metric = spec.name;
  m.series = std::move(series);
  m.value = value;
  m.unit = spec.unit;
  m.better = spec.better;
  return m;
}

double FindValue(const std::vector<Measurement>& result, std::string_view metric, double fallback) {
  for (const Measurement& m : result) {
    if (m.metric == metric && m.series.empty()) return m.value;
  }
  return fallback;
}

absl::Status CheckMemory(uint64_t bytes, std::string_view what) {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return absl::OkStatus();
  const uint64_t have = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  if (bytes > have) {
    return absl::ResourceExhaustedError(absl::StrCat(std::string(what), " needs ", bytes >> 20,
                                                     " MiB but the host has ", have >> 20,
                                                     " MiB of RAM"));
  }
  return absl::OkStatus();
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void RaiseFileLimit() {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// --- StartGate ---------------------------------------------------------------------------

void StartGate::Arrive() {
  arrived_.fetch_add(1);
  arrived_.notify_all();
  open_.wait(false);
}

void StartGate::WaitAllArrived() {
  for (int n = arrived_.load(); n < workers_; n = arrived_.load()) arrived_.wait(n);
}

void StartGate::Open() {
  open_.store(true);
  open_.notify_all();
}

// --- SmallStackThread ------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<SmallStackThread>> SmallStackThread::Start(
    std::function<void()> body, size_t stack_bytes) {
  std::unique_ptr<SmallStackThread> thread(new SmallStackThread(std::move(body)));
  pthread_attr_t attr;
  ::pthread_attr_init(&attr);
  ::pthread_attr_setstacksize(&attr, std::max<size_t>(stack_bytes, PTHREAD_STACK_MIN));
  const int err = ::pthread_create(&thread->thread_, &attr, &Trampoline, thread.get());
  ::pthread_attr_destroy(&attr);
  if (err != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create a thread: ", std::strerror(err)));
  }
  thread->joinable_ = true;
  return thread;
}

void* SmallStackThread::Trampoline(void* self) {
  static_cast<SmallStackThread*>(self)->body_();
  return nullptr;
}

void SmallStackThread::Join() {
  if (joinable_) ::pthread_join(thread_, nullptr);
  joinable_ = false;
}

SmallStackThread::~SmallStackThread() { Join(); }

// --- ChildGroup --------------------------------------------------------------------------

namespace {

void CloseFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

ChildGroup::~ChildGroup() {
  for (pid_t pid : pids_) ::kill(pid, SIGKILL);
  for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
  CloseFd(ready_[0]);
  CloseFd(ready_[1]);
  CloseFd(release_[0]);
  CloseFd(release_[1]);
}

absl::Status ChildGroup::Spawn(const std::function<int()>& body) {
  if (ready_[0] < 0 && (::pipe2(ready_, O_CLOEXEC) != 0 || ::pipe2(release_, O_CLOEXEC) != 0)) {
    return ErrnoStatus(errno, "creating the start pipes");
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot fork child ", pids_.size() + 1, ": ", std::strerror(errno)));
  }
  if (pid == 0) {
    // A child must not outlive a workload process that died (the agent kills the whole
    // process group on a timeout; a standalone tlbfleet-bench may die alone).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(121);
    ::close(ready_[0]);
    ::close(release_[1]);
    char byte = 1;
    if (::write(ready_[1], &byte, 1) != 1) ::_exit(120);
    // EOF (the parent closed the write end) is the release.
    while (::read(release_[0], &byte, 1) < 0 && errno == EINTR) {
    }
    ::close(ready_[1]);
    ::close(release_[0]);
    ::_exit(body());
  }
  pids_.push_back(pid);
  return absl::OkStatus();
}

absl::Status ChildGroup::WaitReady() {
  CloseFd(ready_[1]);
  size_t ready = 0;
  char buf[256];
  while (ready < pids_.size()) {
    const ssize_t n = ::read(ready_[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::InternalError("a child exited before it was ready");
    ready += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

void ChildGroup::Go() { CloseFd(release_[1]); }

absl::Status ChildGroup::Wait() {
  absl::Status first;
  while (!pids_.empty()) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;  // ECHILD: nothing left to reap
    }
    auto it = std::find(pids_.begin(), pids_.end(), pid);
    if (it == pids_.end()) continue;  // not one of ours
    pids_.erase(it);
    absl::Status s;
    if (WIFSIGNALED(status)) {
      s = absl::InternalError(absl::StrCat("child ", pid, " died by signal ", WTERMSIG(status)));
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
      s = absl::InternalError(
          absl::StrCat("child ", pid, " failed with exit status ", WEXITSTATUS(status)));
    }
    if (!s.ok() && first.ok()) {
      // The others may be blocked on the one that failed: stop them.
      first = s;
      for (pid_t other : pids_) ::kill(other, SIGKILL);
    }
  }
  pids_.clear();
  return first;
}

}  // namespace tlbfleet::workloads
