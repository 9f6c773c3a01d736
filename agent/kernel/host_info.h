#pragma once
// What the agent tells the controller about its host (v1::HostInfo), read through a Sysroot.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/kernel/cpuid.h"
#include "agent/kernel/sysroot.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::agent {

// The first processor's identity from /proc/cpuinfo text, plus the processor count.
struct CpuInfoText {
  v1::CpuInfo cpu;  // microarch filled in from vendor/family/model/stepping
  uint32_t logical_cpus = 0;
};

// INVALID_ARGUMENT if there is no processor entry or the first one lacks vendor_id,
// cpu family or model.
absl::StatusOr<CpuInfoText> ParseCpuInfo(std::string_view text);

// The `btime` line of /proc/stat: when this boot started, in seconds since the epoch;
// nullopt when the text has none.
std::optional<int64_t> ParseBootTime(std::string_view proc_stat);

// Reads hostname, machine-id, kernel release, cmdline, boot_id, the CPU and the ceiling state.
// Fails (with the path in the message) if a file every Linux host has cannot be read:
// /proc/cpuinfo, /proc/sys/kernel/{hostname,osrelease,random/boot_id}, /proc/cmdline.
// /etc/machine-id is optional (minimal containers lack it): missing means "".
// With `cpuid` (the real instruction when the sysroot is the real root; null for a fake
// tree), the microarchitecture comes from the CPUID signature and the TLB sizes, PCID and
// INVPCID are filled in (cpuid.h).
absl::StatusOr<v1::HostInfo> CollectHostInfo(const Sysroot& sysroot,
                                             const std::map<std::string, std::string>& labels,
                                             const CpuidSource* cpuid = nullptr);

// Copies what CPUID knows into `cpu` (which holds the /proc/cpuinfo view).
void MergeCpuid(const v1::CpuInfo& from_cpuid, v1::CpuInfo& cpu);

}  // namespace tlbfleet::agent
