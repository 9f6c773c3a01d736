#include "agent/workloads/willitscale.h"

#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/workloads/workload_util.h"
#include "catalogue/workloads/willitscale.h"
#include "common/files.h"

namespace tlbfleet::workloads {
namespace willitscale {
namespace {

// tlb_flush1 and tlb_flush3 map a 128 MiB file, tlb_flush2 1 MiB of anonymous memory.
constexpr size_t kFileBytes = size_t{128} << 20;
constexpr size_t kAnonBytes = size_t{1} << 20;
// will-it-scale's MAX_CACHELINE_SIZE: one counter per 256 bytes, so that the sampler's reads
// and the tasks' writes never share a cache line with another task's counter.
constexpr size_t kSlotBytes = 256;

// One task's counter and report, in memory shared by all tasks and the sampler (MAP_SHARED,
// so that forked tasks write where the sampler reads). Written by the task, read by the sampler.
struct alignas(kSlotBytes) Slot {
  std::atomic<uint64_t> ops{0};
  std::atomic<int> failed{0};
  pid_t pid = 0;
  pid_t tid = 0;
  int cpu = -1;
  char error[160] = {};
};
static_assert(sizeof(Slot) == kSlotBytes);

struct alignas(kSlotBytes) Control {
  std::atomic<bool> stop{false};
};

// The shared area: the control line, then one slot per task. Unmapped on destruction.
class SharedArea {
 public:
  ~SharedArea() {
    if (base_ != nullptr) ::munmap(base_, bytes_);
  }
  absl::Status Map(int tasks) {
    bytes_ = kSlotBytes * (static_cast<size_t>(tasks) + 1);
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return ErrnoStatus(errno, "willitscale: mapping the counters");
    base_ = p;
    control_ = new (base_) Control();
    slots_ = reinterpret_cast<Slot*>(static_cast<char*>(base_) + kSlotBytes);
    for (int i = 0; i < tasks; ++i) new (&slots_[i]) Slot();
    return absl::OkStatus();
  }
  Control& control() { return *control_; }
  Slot& slot(int i) { return slots_[i]; }

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
  Control* control_ = nullptr;
  Slot* slots_ = nullptr;
};

// Records a task's failure for the sampler; returns the task's exit status.
int Fail(Slot& slot, const std::string& what) {
  std::snprintf(slot.error, sizeof slot.error, "%s", what.c_str());
  slot.failed.store(1, std::memory_order_release);
  return 1;
}

// The test itself: the loop of tests/tlb_flush{1,2,3}.c, counting one operation per page,
// until the sampler says stop. Runs in the task (a forked child or a thread).
int TestLoop(const Options& options, Slot& slot, const std::atomic<bool>& stop) {
  const size_t page = static_cast<size_t>(::getpagesize());
  const bool file_backed = options.test != Testcase::kFlush2;
  const size_t bytes = file_backed ? kFileBytes : kAnonBytes;
  int fd = -1;
  if (file_backed) {
    std::string path = options.tmp_dir + "/willitscale.XXXXXX";
    fd = ::mkstemp(path.data());
    if (fd < 0)
      return Fail(slot, absl::StrCat("mkstemp in ", options.tmp_dir, ": ", strerror(errno)));
    ::unlink(path.c_str());
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      const int err = errno;
      ::close(fd);
      return Fail(slot, absl::StrCat("ftruncate of the 128 MiB file: ", strerror(err)));
    }
  }
  const int flags = options.test == Testcase::kFlush2   ? MAP_PRIVATE | MAP_ANONYMOUS
                    : options.test == Testcase::kFlush1 ? MAP_PRIVATE
                                                        : MAP_SHARED;
  // A private page dropped by MADV_DONTNEED comes back from the file (a hole: zero) or as a
  // new zero page; a shared page comes back from the page cache with what was written.
  const char expected = options.test == Testcase::kFlush3 ? 1 : 0;
  uint64_t ops = 0;
  int status = 0;
  while (status == 0 && !stop.load(std::memory_order_relaxed)) {
    char* addr = static_cast<char*>(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, fd, 0));
    if (addr == MAP_FAILED) {
      status = Fail(slot, absl::StrCat("mmap: ", strerror(errno)));
      break;
    }
    for (size_t offset = 0; offset < bytes; offset += page) {
      volatile char* p = addr + offset;
      *p = 1;
      if (::madvise(addr + offset, page, MADV_DONTNEED) != 0) {
        status = Fail(slot, absl::StrCat("madvise(MADV_DONTNEED): ", strerror(errno)));
        break;
      }
      if (*p != expected) {
        status = Fail(slot, absl::StrCat("the page at offset ", offset, " read ", int{*p},
                                         " after MADV_DONTNEED, expected ", int{expected}));
        break;
      }
      // Single writer: a plain store, no locked increment (will-it-scale's (*iteration)++).
      slot.ops.store(++ops, std::memory_order_relaxed);
      if (stop.load(std::memory_order_relaxed)) break;
    }
    ::munmap(addr, bytes);
  }
  if (fd >= 0) ::close(fd);
  return status;
}

// A task: binds itself, says who it is, then runs the test.
int Task(const Options& options, const std::vector<int>* cpus, Slot& slot,
         const std::atomic<bool>& stop) {
  if (cpus != nullptr) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : *cpus) CPU_SET(cpu, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0) {
      return Fail(slot, absl::StrCat("sched_setaffinity: ", strerror(errno)));
    }
  }
  slot.pid = ::getpid();
  slot.tid = ::gettid();
  slot.cpu = ::sched_getcpu();
  return TestLoop(options, slot, stop);
}

bool ReadInt(const std::string& path, int64_t* out) {
  absl::StatusOr<std::string> text = ReadFile(path);
  return text.ok() && absl::SimpleAtoi(Trim(*text), out);
}

}  // namespace

Options OptionsFromParams(const Params& params) {
  Options o;
  const std::string& test = params.Str("test");
  o.test = test == "tlb_flush1"   ? Testcase::kFlush1
           : test == "tlb_flush3" ? Testcase::kFlush3
                                  : Testcase::kFlush2;
  o.mode = params.Str("mode") == "thread" ? Mode::kThread : Mode::kProcess;
  o.tasks = static_cast<int>(params.Int("tasks"));
  o.duration = static_cast<int>(params.Int("duration"));
  o.warmup = static_cast<int>(params.Int("warmup"));
  o.no_affinity = params.Bool("no_affinity");
  o.smt = params.Bool("smt");
  return o;
}

std::vector<std::vector<int>> Placement(const std::string& sysfs_cpu, const cpu_set_t& allowed,
                                        bool smt) {
  // Cores by (package, core id), in the order of their first CPU.
  std::vector<std::vector<int>> cores;
  std::map<std::pair<int64_t, int64_t>, size_t> index;
  int64_t lone = -1;  // cores of CPUs without topology: a key of their own
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    const std::string dir = absl::StrCat(sysfs_cpu, "/cpu", cpu, "/topology/");
    int64_t package = 0;
    int64_t core = 0;
    std::pair<int64_t, int64_t> key = {lone--, 0};
    if (ReadInt(dir + "physical_package_id", &package) && ReadInt(dir + "core_id", &core)) {
      key = {package, core};
    }
    auto [it, added] = index.emplace(key, cores.size());
    if (added) cores.emplace_back();
    cores[it->second].push_back(cpu);
  }
  if (!smt) return cores;
  std::vector<std::vector<int>> threads;
  for (const std::vector<int>& core : cores) {
    for (int cpu : core) threads.push_back({cpu});
  }
  return threads;
}

absl::StatusOr<Result> RunOnce(const Options& options) {
  const int n = options.tasks;
  if (options.test == Testcase::kFlush3) {
    // Every task's shared file ends up wholly in the page cache (RAM on tmpfs).
    if (absl::Status s = CheckMemory(uint64_t{kFileBytes} * n, "willitscale tlb_flush3"); !s.ok()) {
      return s;
    }
  }
  std::vector<std::vector<int>> placement;
  if (!options.no_affinity) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
      return ErrnoStatus(errno, "willitscale: sched_getaffinity");
    }
    placement = Placement(options.sysfs_cpu, allowed, options.smt);
    if (placement.empty()) return absl::InternalError("willitscale: no CPU to bind tasks to");
  }
  auto cpus_of = [&](int i) {
    return placement.empty() ? nullptr : &placement[static_cast<size_t>(i) % placement.size()];
  };

  SharedArea area;
  if (absl::Status s = area.Map(n); !s.ok()) return s;
  const std::atomic<bool>& stop = area.control().stop;

  // Tasks: forked children (one mm each) or threads of this process (one mm).
  ChildGroup children;
  StartGate gate(n);
  std::vector<std::thread> threads;
  auto stop_tasks = [&]() -> absl::Status {
    area.control().stop.store(true);
    if (options.mode == Mode::kThread) {
      gate.Open();
      for (std::thread& t : threads) t.join();
      return absl::OkStatus();
    }
    children.Go();
    return children.Wait();
  };
  for (int i = 0; i < n; ++i) {
    Slot& slot = area.slot(i);
    const std::vector<int>* cpus = cpus_of(i);
    if (options.mode == Mode::kProcess) {
      absl::Status s = children.Spawn(
          [&options, cpus, &slot, &stop] { return Task(options, cpus, slot, stop); });
      if (!s.ok()) {
        (void)stop_tasks();  // the spawn failure is the error to report
        return s;
      }
    } else {
      try {
        threads.emplace_back([&options, cpus, &slot, &stop, &gate] {
          gate.Arrive();
          Task(options, cpus, slot, stop);
        });
      } catch (const std::system_error& e) {
        (void)stop_tasks();  // the thread failure is the error to report
        return absl::ResourceExhaustedError(
            absl::StrCat("willitscale: cannot start thread ", i, " of ", n, ": ", e.what()));
      }
    }
  }
  if (options.mode == Mode::kProcess) {
    if (absl::Status s = children.WaitReady(); !s.ok()) {
      (void)stop_tasks();  // WaitReady's error says more than the reaping would
      return s;
    }
    children.Go();
  } else {
    gate.WaitAllArrived();
    gate.Open();
  }

  // The sampler, will-it-scale's main loop: one read of every counter per period. Periods
  // are measured, not assumed, so that a late wake-up does not inflate a sample.
  Result result;
  result.task_ops_per_sec.assign(n, 0);
  std::vector<uint64_t> prev(n, 0);
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  // Per task, the sum of its per-second rates over the measured samples: averaged like the
  // total, so that the tasks' figures add up to it.
  std::vector<double> task_rate_sums(n, 0);
  absl::Status failure;
  for (int sample = 1; sample <= options.warmup + options.duration && failure.ok(); ++sample) {
    std::this_thread::sleep_until(start + sample * options.sample_period);
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last).count();
    last = now;
    uint64_t total = 0;
    for (int i = 0; i < n; ++i) {
      Slot& slot = area.slot(i);
      if (slot.failed.load(std::memory_order_acquire) != 0) {
        failure = absl::InternalError(absl::StrCat(
            "willitscale ", catalogue::willitscale::TestNames()[static_cast<int>(options.test)],
            ": task ", i, ": ", slot.error));
        break;
      }
      const uint64_t v = slot.ops.load(std::memory_order_relaxed);
      const uint64_t diff = v - prev[i];
      prev[i] = v;
      total += diff;
      if (sample > options.warmup) task_rate_sums[i] += static_cast<double>(diff) / seconds;
    }
    if (failure.ok() && sample > options.warmup) {
      result.sample_ops_per_sec.push_back(static_cast<double>(total) / seconds);
    }
  }
  absl::Status stopped = stop_tasks();
  if (!failure.ok()) return failure;
  if (!stopped.ok()) return absl::InternalError(absl::StrCat("willitscale: ", stopped.message()));
  for (int i = 0; i < n; ++i) {
    const Slot& slot = area.slot(i);
    result.ops += prev[i];
    result.task_ops_per_sec[i] = task_rate_sums[i] / options.duration;
    result.tasks.push_back({slot.pid, slot.tid, slot.cpu});
  }
  double sum = 0;
  for (double v : result.sample_ops_per_sec) sum += v;
  result.ops_per_sec = sum / static_cast<double>(result.sample_ops_per_sec.size());
  return result;
}

}  // namespace willitscale

// --- The registered workload -------------------------------------------------------------

namespace {

// Qualified, not `using`: pipetest.cc declares its own kOpsPerSec in this namespace, and a
// unity build puts both files in one translation unit.
namespace wis_catalogue = catalogue::willitscale;

class WillItScale : public Workload {
 public:
  WillItScale() : Workload(catalogue::willitscale::kName) {}

  absl::StatusOr<std::vector<Measurement>> Run(const Params& params) const override {
    absl::StatusOr<willitscale::Result> r =
        willitscale::RunOnce(willitscale::OptionsFromParams(params));
    if (!r.ok()) return r.status();
    std::vector<Measurement> out = {
        Measure(wis_catalogue::kOpsPerSec, r->ops_per_sec),
        Measure(wis_catalogue::kOpsPerSecPerTask,
                r->ops_per_sec / static_cast<double>(r->task_ops_per_sec.size())),
    };
    for (size_t i = 0; i < r->task_ops_per_sec.size(); ++i) {
      out.push_back(
          Measure(wis_catalogue::kOpsPerSec, r->task_ops_per_sec[i], absl::StrCat("task", i)));
    }
    return out;
  }

  std::string ClassicOutput(const Params& params,
                            const std::vector<Measurement>& result) const override {
    // The two lines runtest.py (and LKP's copy of it) read from a will-it-scale binary; the
    // per-second lines in between are not kept.
    return absl::StrCat(
        "testcase:", std::string(catalogue::willitscale::TestDescription(params.Str("test"))),
        "\naverage:", static_cast<uint64_t>(FindValue(result, wis_catalogue::kOpsPerSec.name)),
        "\n");
  }
};

}  // namespace

REGISTER_WORKLOAD(WillItScale);

}  // namespace tlbfleet::workloads
