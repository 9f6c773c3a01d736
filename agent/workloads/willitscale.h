#pragma once
// willitscale: will-it-scale's TLB flush tests (tests/tlb_flush1.c, tlb_flush2.c,
// tlb_flush3.c and the harness of main.c), written natively. `tasks` copies of the test run as
// processes or as threads of one process; each writes a page, drops it with MADV_DONTNEED,
// checks what a re-read sees and counts one operation, page after page of its own mapping.
// A sampler reads every task's counter once a period (will-it-scale: once a second), throws
// the warm-up samples away and averages the rest. In thread mode every MADV_DONTNEED must
// also flush the TLBs of the CPUs running the other threads of the one mm.
// See docs/workloads/willitscale.md.

#include <sched.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/workloads/workload.h"

namespace tlbfleet::workloads::willitscale {

enum class Testcase { kFlush1, kFlush2, kFlush3 };
enum class Mode { kProcess, kThread };

// One run's settings; the defaults are the schema's defaults.
struct Options {
  Testcase test = Testcase::kFlush2;
  Mode mode = Mode::kProcess;
  int tasks = 1;
  int duration = 5;  // measured samples
  int warmup = 6;    // samples thrown away first
  bool no_affinity = false;
  bool smt = false;
  // will-it-scale samples once a second; tests shorten it.
  std::chrono::milliseconds sample_period{1000};
  // Where tlb_flush1 and tlb_flush3 create (and unlink) their 128 MiB file, as will-it-scale
  // does: on tmpfs the shared mapping's pages are RAM, on a disk file system page cache.
  std::string tmp_dir = "/tmp";
  // The CPU topology (cpuN/topology/{physical_package_id,core_id}); a seam for tests.
  std::string sysfs_cpu = "/sys/devices/system/cpu";
};

// `params` must have been resolved against the willitscale schema.
Options OptionsFromParams(const Params& params);

// Where each task may run: task i is bound to entry i % size(). hwloc's order, as
// will-it-scale uses it: cores (all their hardware threads) ordered by their first CPU, or with
// `smt` every hardware thread, core by core. Only CPUs in `allowed`; a CPU whose topology
// cannot be read counts as a core of its own.
std::vector<std::vector<int>> Placement(const std::string& sysfs_cpu, const cpu_set_t& allowed,
                                        bool smt);

struct TaskIdentity {
  pid_t pid = 0;  // getpid() of the task
  pid_t tid = 0;  // gettid() of the task
  int cpu = -1;   // sched_getcpu() when it started counting
};

struct Result {
  // Per measured sample: operations of all tasks per second (the sample's count divided by
  // its measured length, will-it-scale's per-second "total:").
  std::vector<double> sample_ops_per_sec;
  // Per task: the mean of its per-sample rates (they add up to ops_per_sec).
  std::vector<double> task_ops_per_sec;
  double ops_per_sec = 0;  // mean of sample_ops_per_sec (will-it-scale's "average:")
  uint64_t ops = 0;        // operations counted by every task until the last sample
  std::vector<TaskIdentity> tasks;
};

// Runs the test: starts the tasks behind one release, samples warmup + duration periods,
// stops them. INTERNAL naming the task when a task cannot set up its mapping or a page reads
// back other than the test expects (will-it-scale asserts); RESOURCE_EXHAUSTED when a task
// cannot be started or the files would not fit in RAM.
absl::StatusOr<Result> RunOnce(const Options& options);

}  // namespace tlbfleet::workloads::willitscale
