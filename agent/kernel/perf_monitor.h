#pragma once
// The perf monitor: hardware counters of the workload process tree, opened with
// perf_event_open(2) on the forked child before its exec (enable_on_exec, inherit), so they
// count the workload and everything it forks, and nothing of the agent.
//
//   metric perf_dtlb_load_misses  (unit "misses")        PERF_COUNT_HW_CACHE_DTLB read miss
//   metric perf_itlb_load_misses  (unit "misses")        PERF_COUNT_HW_CACHE_ITLB read miss
//   metric perf_instructions      (unit "instructions")  PERF_COUNT_HW_INSTRUCTIONS
//   metric perf_cycles            (unit "cycles")        PERF_COUNT_HW_CPU_CYCLES
// all series "", lower is better. A counter the CPU or kernel does not support (common in
// VMs) is a note "perf: dTLB-load-misses not supported (...)", never a job failure.

#include <memory>

#include "agent/kernel/monitor.h"

namespace tlbfleet::agent {

inline constexpr char kPerfMonitor[] = "perf";

std::unique_ptr<Monitor> NewPerfMonitor(const Sysroot& sysroot);

}  // namespace tlbfleet::agent
