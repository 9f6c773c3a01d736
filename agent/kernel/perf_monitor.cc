#include "agent/kernel/perf_monitor.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/scoped_fd.h"

namespace tlbfleet::agent {
namespace {

struct Counter {
  const char* perf_name;  // as perf(1) spells it, for notes
  const char* metric;
  const char* unit;
  uint32_t type;
  uint64_t config;
};

constexpr uint64_t CacheConfig(uint64_t cache) {
  return cache | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
}

const Counter kCounters[] = {
    {"dTLB-load-misses", "perf_dtlb_load_misses", "misses", PERF_TYPE_HW_CACHE,
     CacheConfig(PERF_COUNT_HW_CACHE_DTLB)},
    {"iTLB-load-misses", "perf_itlb_load_misses", "misses", PERF_TYPE_HW_CACHE,
     CacheConfig(PERF_COUNT_HW_CACHE_ITLB)},
    {"instructions", "perf_instructions", "instructions", PERF_TYPE_HARDWARE,
     PERF_COUNT_HW_INSTRUCTIONS},
    {"cycles", "perf_cycles", "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
};

class PerfMonitor : public Monitor {
 public:
  std::string_view name() const override { return kPerfMonitor; }
  absl::Status Start() override { return absl::OkStatus(); }

  void OnChildForked(pid_t pid) override {
    for (const Counter& c : kCounters) {
      perf_event_attr attr;
      std::memset(&attr, 0, sizeof attr);
      attr.size = sizeof attr;
      attr.type = c.type;
      attr.config = c.config;
      attr.disabled = 1;
      attr.enable_on_exec = 1;
      attr.inherit = 1;
      attr.exclude_hv = 1;
      attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
      int fd = static_cast<int>(
          ::syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC));
      if (fd < 0) {
        int err = errno;
        notes_.push_back(
            absl::StrCat("perf: ", c.perf_name, " not supported (", std::strerror(err), ")"));
      }
      fds_.emplace_back(fd);
    }
  }

  absl::Status Stop(MonitorOutput* out) override {
    for (size_t i = 0; i < fds_.size() && i < std::size(kCounters); ++i) {
      if (!fds_[i]) continue;
      uint64_t v[3] = {0, 0, 0};  // value, time enabled, time running
      if (::read(fds_[i].get(), v, sizeof v) != static_cast<ssize_t>(sizeof v)) {
        notes_.push_back(
            absl::StrCat("perf: cannot read ", kCounters[i].perf_name, ": ", std::strerror(errno)));
        continue;
      }
      if (v[2] == 0) {
        notes_.push_back(absl::StrCat("perf: ", kCounters[i].perf_name,
                                      " never ran (not counted by this CPU or VM)"));
        continue;
      }
      // Scaled as perf stat does when counters were multiplexed.
      double value = static_cast<double>(v[0]);
      if (v[2] < v[1]) value = value * static_cast<double>(v[1]) / static_cast<double>(v[2]);
      out->samples.push_back(MonitorSample(kCounters[i].metric, "", value, kCounters[i].unit));
    }
    if (fds_.empty()) notes_.push_back("perf: the workload never started; nothing counted");
    for (std::string& n : notes_) out->notes.push_back(std::move(n));
    notes_.clear();
    fds_.clear();  // closes the counters
    return absl::OkStatus();
  }

 private:
  std::vector<ScopedFd> fds_;  // one per counter of kCounters; invalid: not supported
  std::vector<std::string> notes_;
};

}  // namespace

std::unique_ptr<Monitor> NewPerfMonitor(const Sysroot&) { return std::make_unique<PerfMonitor>(); }

}  // namespace tlbfleet::agent
