#pragma once
// Small helpers shared by the workload implementations: schema builders, measurement
// builders, memory checks, a start gate for worker threads and forked children.
// Not part of the Workload interface; only workload .cc files include this.

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/workloads/workload.h"

namespace tlbfleet::workloads {

// A measurement of `spec` (name, unit and direction come from the spec).
Measurement Measure(const MetricSpec& spec, double value, std::string series = "");

// The aggregate (series "") value of `metric` in `result`, or `fallback` if absent.
double FindValue(const std::vector<Measurement>& result, std::string_view metric,
                 double fallback = 0);

// RESOURCE_EXHAUSTED naming `what` if `bytes` exceeds the host's physical memory: with
// overcommit, mmap itself rarely fails and the run would end in the OOM killer instead.
absl::Status CheckMemory(uint64_t bytes, std::string_view what);

// Seconds since `start`.
double SecondsSince(std::chrono::steady_clock::time_point start);

// Raises the soft RLIMIT_NOFILE to the hard limit (workloads with many sockets need it).
void RaiseFileLimit();

// Worker threads call Arrive() once they are ready to start, then block until Open(). The
// opener calls WaitAllArrived() first, so that nobody is timed before every worker exists.
class StartGate {
 public:
  explicit StartGate(int workers) : workers_(workers) {}
  void Arrive();          // counts in, then waits for Open()
  void WaitAllArrived();  // returns once `workers` have arrived
  void Open();

 private:
  const int workers_;
  std::atomic<int> arrived_{0};
  std::atomic<bool> open_{false};
};

// A thread with a small stack. rt-tests' hackbench gives its threads PTHREAD_STACK_MIN:
// hundreds of default 8 MiB stacks overflow glibc's 40 MiB stack cache, so exiting threads
// munmap their stacks (a TLB shootdown each) inside the timed part. Joined on destruction.
class SmallStackThread {
 public:
  // RESOURCE_EXHAUSTED if the thread cannot be created.
  static absl::StatusOr<std::unique_ptr<SmallStackThread>> Start(std::function<void()> body,
                                                                 size_t stack_bytes = 64 << 10);
  ~SmallStackThread();
  SmallStackThread(const SmallStackThread&) = delete;
  SmallStackThread& operator=(const SmallStackThread&) = delete;
  void Join();

 private:
  explicit SmallStackThread(std::function<void()> body) : body_(std::move(body)) {}
  static void* Trampoline(void* self);

  std::function<void()> body_;
  pthread_t thread_{};
  bool joinable_ = false;
};

// Forked children for process-mode workloads. Each child runs `body` and _exit()s with its
// return value (0 = success); it must not touch locks that other threads of the parent may
// hold (the agent's workload child is single-threaded, so in practice anything but logging).
// A child is killed if the thread that spawned it dies (PR_SET_PDEATHSIG).
// Children are started behind a pipe barrier: Start() returns once all have forked and
// reported ready; Go() releases them all at once.
class ChildGroup {
 public:
  ChildGroup() = default;
  ~ChildGroup();  // kills and reaps any child still running
  ChildGroup(const ChildGroup&) = delete;
  ChildGroup& operator=(const ChildGroup&) = delete;

  // Forks one child. In the child, `body` runs after the release by Go(). Errors (fork
  // failure) are RESOURCE_EXHAUSTED; already started children stay in the group.
  absl::Status Spawn(const std::function<int()>& body);
  // Waits until every spawned child is ready (blocked on the release).
  absl::Status WaitReady();
  // Releases all children.
  void Go();
  // Reaps all children; INTERNAL naming the first child that failed or died by a signal.
  absl::Status Wait();

 private:
  std::vector<pid_t> pids_;
  int ready_[2] = {-1, -1};
  int release_[2] = {-1, -1};
};

}  // namespace tlbfleet::workloads
