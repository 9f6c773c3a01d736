#pragma once
// Monitors that diff /proc files across the workload (read through the sysroot).
//
//   interrupts  metric tlb_shootdown_interrupts (unit "interrupts", lower is better):
//               series "cpu<n>" per CPU and "total", the delta of the "TLB:" row of
//               /proc/interrupts (the x86 TLB shootdown IPIs each CPU received).
//   vmstat      metric "vmstat_<name>" (unit "count", lower is better) for every
//               /proc/vmstat counter that changed, and always for nr_tlb_* (kernels built
//               with CONFIG_DEBUG_TLBFLUSH have them); series "".

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/kernel/monitor.h"

namespace tlbfleet::agent {

inline constexpr char kInterruptsMonitor[] = "interrupts";
inline constexpr char kVmstatMonitor[] = "vmstat";

// The per-CPU counts of the "TLB:" row of /proc/interrupts text (one per CPU column of the
// header). NOT_FOUND if there is no such row (not x86, or a kernel without it).
absl::StatusOr<std::vector<uint64_t>> ParseTlbInterrupts(std::string_view text);

// name -> value of /proc/vmstat text. Lines that do not parse are skipped.
std::map<std::string, int64_t> ParseVmstat(std::string_view text);

std::vector<v1::Sample> InterruptDeltaSamples(const std::vector<uint64_t>& before,
                                              const std::vector<uint64_t>& after);
std::vector<v1::Sample> VmstatDeltaSamples(const std::map<std::string, int64_t>& before,
                                           const std::map<std::string, int64_t>& after);

std::unique_ptr<Monitor> NewInterruptsMonitor(const Sysroot& sysroot);
std::unique_ptr<Monitor> NewVmstatMonitor(const Sysroot& sysroot);

}  // namespace tlbfleet::agent
