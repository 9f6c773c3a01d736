#pragma once
// Monitors observe the kernel while a job's workload runs and report what they saw as
// ordinary samples (metric, series, value, unit, better), so the controller and the store
// need nothing new. A run spec lists them by name (RunSpec.monitors, JobAssignment.monitors):
//
//   flush_profile  tlb:tlb_flush tracepoint histogram, private tracefs instance (flush_profile.h)
//   interrupts     per-CPU delta of the TLB shootdown row of /proc/interrupts (proc_monitors.h)
//   vmstat         deltas of /proc/vmstat counters (proc_monitors.h)
//   perf           dTLB/iTLB load misses, instructions, cycles of the workload (perf_monitor.h)
//
// The metric names are listed in docs/agent.md.

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/kernel/sysroot.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::agent {

// What a monitor hands back: measurement fields only (the runner adds the provenance).
struct MonitorOutput {
  std::vector<v1::Sample> samples;
  std::vector<std::string> notes;  // e.g. "perf: dTLB-load-misses not supported here"
};

// Lifecycle, on the job's thread: Start() before the workload is forked, OnChildForked()
// in the parent between fork and the workload's exec, Stop() after the workload ended
// (whatever the outcome). Not thread-safe.
class Monitor {
 public:
  virtual ~Monitor() = default;
  virtual std::string_view name() const = 0;
  // An error means the monitor cannot observe anything on this host; the job fails with it
  // (the user asked for this data). Partial support is a note from Stop(), not an error.
  virtual absl::Status Start() = 0;
  virtual void OnChildForked(pid_t pid) {}
  virtual absl::Status Stop(MonitorOutput* out) = 0;
};

// INVALID_ARGUMENT for a name not in MonitorNames(). `sysroot` must outlive the monitor.
absl::StatusOr<std::unique_ptr<Monitor>> CreateMonitor(std::string_view name,
                                                       const Sysroot& sysroot);
std::vector<std::string> MonitorNames();

// A sample with only the measurement fields set.
v1::Sample MonitorSample(std::string metric, std::string series, double value, std::string unit,
                         v1::Better better = v1::BETTER_LOWER);

}  // namespace tlbfleet::agent
