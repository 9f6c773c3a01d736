#include "agent/workloads/hackbench.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/workloads/workload_util.h"
#include "catalogue/workloads/hackbench.h"
#include "common/files.h"

namespace tlbfleet::workloads {
namespace hackbench {
namespace {

// One receiver's channel: the sender side writes to out, the receiver reads from in.
struct Channel {
  int in = -1;
  int out = -1;
};

void CloseChannels(std::vector<Channel>& channels) {
  for (Channel& c : channels) {
    if (c.in >= 0) ::close(c.in);
    if (c.out >= 0) ::close(c.out);
  }
  channels.clear();
}

absl::StatusOr<Channel> MakeChannel(bool pipes) {
  int fds[2];
  const int rc =
      pipes ? ::pipe2(fds, O_CLOEXEC) : ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
  if (rc != 0) {
    return ErrnoStatus(errno, pipes ? "hackbench: pipe" : "hackbench: socketpair");
  }
  return Channel{fds[0], fds[1]};
}

// Returns false on an I/O error (or EOF before all data arrived).
// `data` is allocated before the tasks are released, so that no allocation is timed (a
// thread's first malloc may create a whole glibc arena).
bool Send(const std::vector<int>& outs, int64_t loops, std::vector<char>& data) {
  const size_t datasize = data.size();
  for (int64_t i = 0; i < loops; ++i) {
    for (int fd : outs) {
      for (size_t done = 0; done < datasize;) {
        const ssize_t n = ::write(fd, data.data() + done, datasize - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
      }
    }
  }
  return true;
}

bool Receive(int in, int64_t packets, std::vector<char>& data) {
  const size_t datasize = data.size();
  for (int64_t i = 0; i < packets; ++i) {
    for (size_t done = 0; done < datasize;) {
      const ssize_t n = ::read(in, data.data() + done, datasize - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
  }
  return true;
}

absl::StatusOr<double> RunThreads(const Options& o) {
  const int tasks = o.groups * o.fds * 2;
  std::vector<Channel> channels;  // all groups; threads share the parent's descriptors
  for (int i = 0; i < o.groups * o.fds; ++i) {
    absl::StatusOr<Channel> c = MakeChannel(o.pipes);
    if (!c.ok()) {
      CloseChannels(channels);
      return c.status();
    }
    channels.push_back(*c);
  }
  StartGate gate(tasks);
  std::atomic<bool> abort{false};
  std::atomic<bool> failed{false};
  std::vector<std::unique_ptr<SmallStackThread>> workers;
  workers.reserve(tasks);
  absl::Status status;
  for (int g = 0; g < o.groups && status.ok(); ++g) {
    std::vector<int> outs;
    outs.reserve(o.fds);
    for (int i = 0; i < o.fds; ++i) outs.push_back(channels[g * o.fds + i].out);
    for (int i = 0; i < 2 * o.fds && status.ok(); ++i) {
      std::function<void()> body;
      if (i < o.fds) {
        const int in = channels[g * o.fds + i].in;
        body = [&, in] {
          std::vector<char> data(o.datasize);
          gate.Arrive();
          if (!abort && !Receive(in, o.loops * o.fds, data)) failed = true;
        };
      } else {
        body = [&, outs] {
          std::vector<char> data(o.datasize, 's');
          gate.Arrive();
          if (!abort && !Send(outs, o.loops, data)) failed = true;
        };
      }
      absl::StatusOr<std::unique_ptr<SmallStackThread>> thread =
          SmallStackThread::Start(std::move(body));
      if (thread.ok()) {
        workers.push_back(std::move(*thread));
      } else {
        status = absl::ResourceExhaustedError(absl::StrCat("hackbench: thread ", workers.size() + 1,
                                                           " of ", tasks, ": ",
                                                           thread.status().message()));
      }
    }
  }
  if (!status.ok()) {
    abort = true;
    gate.Open();
  } else {
    gate.WaitAllArrived();
  }
  const auto start = std::chrono::steady_clock::now();
  gate.Open();
  for (std::unique_ptr<SmallStackThread>& t : workers) t->Join();
  const double seconds = SecondsSince(start);
  CloseChannels(channels);
  if (!status.ok()) return status;
  if (failed) return absl::InternalError("hackbench: a task failed to send or receive");
  return seconds;
}

absl::StatusOr<double> RunProcesses(const Options& o) {
  ChildGroup children;
  // Each child gets its own copy of this when it forks.
  std::vector<char> data(o.datasize, 's');
  for (int g = 0; g < o.groups; ++g) {
    // Only this group's descriptors are open while its tasks fork, as in rt-tests.
    std::vector<Channel> channels;
    absl::Status status;
    for (int i = 0; i < o.fds && status.ok(); ++i) {
      absl::StatusOr<Channel> c = MakeChannel(o.pipes);
      if (c.ok()) {
        channels.push_back(*c);
      } else {
        status = c.status();
      }
    }
    std::vector<int> outs;
    outs.reserve(channels.size());
    for (const Channel& c : channels) outs.push_back(c.out);
    for (int i = 0; i < o.fds && status.ok(); ++i) {
      const int in = channels[i].in;
      status = children.Spawn([&, in] { return Receive(in, o.loops * o.fds, data) ? 0 : 1; });
    }
    for (int i = 0; i < o.fds && status.ok(); ++i) {
      status = children.Spawn([&] { return Send(outs, o.loops, data) ? 0 : 1; });
    }
    CloseChannels(channels);
    if (!status.ok()) return status;  // ~ChildGroup kills the children already started
  }
  if (absl::Status s = children.WaitReady(); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  children.Go();
  absl::Status s = children.Wait();
  const double seconds = SecondsSince(start);
  if (!s.ok()) return absl::InternalError(absl::StrCat("hackbench: ", s.message()));
  return seconds;
}

}  // namespace

Options OptionsFromParams(const Params& params) {
  Options o;
  o.groups = static_cast<int>(params.Int("groups"));
  o.fds = static_cast<int>(params.Int("fds"));
  o.loops = params.Int("loops");
  o.datasize = static_cast<size_t>(params.Int("datasize"));
  o.pipes = params.Str("ipc") == "pipe";
  o.threads = params.Str("mode") == "threads";
  return o;
}

absl::Status CheckHostLimits(const Options& o, const HostLimits& host) {
  const int64_t tasks = int64_t{2} * o.groups * o.fds;
  const std::string what =
      absl::StrCat("hackbench: groups=", o.groups, " x fds=", o.fds, " x 2 = ", tasks, " tasks");
  if (host.max_tasks > 0 && tasks > host.max_tasks) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " but this host allows ", host.max_tasks,
        " (the smaller of kernel.pid_max and kernel.threads-max, shared with everything "
        "else running); use fewer groups or fds"));
  }
  // Threads share one descriptor table: two descriptors per sender/receiver pair.
  if (o.threads && host.max_fds > 0 && tasks + 16 > host.max_fds) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, " need ", tasks,
                     " descriptors in one process in thread mode but RLIMIT_NOFILE "
                     "allows ",
                     host.max_fds, "; use process mode, fewer groups or fds, or a higher limit"));
  }
  return absl::OkStatus();
}

HostLimits ReadHostLimits() {
  HostLimits h;
  auto read = [](const char* path) -> int64_t {
    absl::StatusOr<std::string> text = ReadFile(path);
    int64_t v = 0;
    return text.ok() && absl::SimpleAtoi(Trim(*text), &v) ? v : 0;
  };
  const int64_t pid_max = read("/proc/sys/kernel/pid_max");
  const int64_t threads_max = read("/proc/sys/kernel/threads-max");
  h.max_tasks = pid_max > 0 && threads_max > 0 ? std::min(pid_max, threads_max)
                                               : std::max(pid_max, threads_max);
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_max != RLIM_INFINITY) {
    h.max_fds = static_cast<int64_t>(limit.rlim_max);
  }
  return h;
}

absl::StatusOr<double> RunOnce(const Options& options) {
  if (absl::Status s = CheckHostLimits(options, ReadHostLimits()); !s.ok()) return s;
  RaiseFileLimit();
  return options.threads ? RunThreads(options) : RunProcesses(options);
}

}  // namespace hackbench

// --- The registered workload -------------------------------------------------------------

namespace {

using catalogue::hackbench::kTime;

class Hackbench : public Workload {
 public:
  Hackbench() : Workload("hackbench") {}

  absl::StatusOr<std::vector<Measurement>> Run(const Params& params) const override {
    absl::StatusOr<double> seconds = hackbench::RunOnce(hackbench::OptionsFromParams(params));
    if (!seconds.ok()) return seconds.status();
    return std::vector<Measurement>{Measure(kTime, *seconds)};
  }

  std::string ClassicOutput(const Params& params,
                            const std::vector<Measurement>& result) const override {
    // rt-tests hackbench prints whole milliseconds, truncated.
    const auto ms = static_cast<uint64_t>(FindValue(result, kTime.name) * 1000);
    const int64_t groups = params.Int("groups");
    const int64_t fds = params.Int("fds");
    char time[64];
    std::snprintf(time, sizeof time, "Time: %llu.%03llu\n",
                  static_cast<unsigned long long>(ms / 1000),
                  static_cast<unsigned long long>(ms % 1000));
    return absl::StrCat("Running in ", params.Str("mode") == "threads" ? "threaded" : "process",
                        " mode with ", groups, " groups using ", 2 * fds,
                        " file descriptors each (== ", groups * 2 * fds, " tasks)\n",
                        "Each sender will pass ", params.Int("loops"), " messages of ",
                        params.Int("datasize"), " bytes\n", time);
  }
};

}  // namespace

REGISTER_WORKLOAD(Hackbench);

}  // namespace tlbfleet::workloads
