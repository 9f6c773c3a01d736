#pragma once
// The x86 TLB single-page flush ceiling (debugfs), the kernel tunable tlbfleet compares.
//
//   ProbeCeiling()  what the host allows: readable? writable? current value? and if not, why.
//   ReadCeiling()   the current value.
//   WriteCeiling()  write a value and read it back; fails unless the kernel holds that value.
//
// TODO(journal): the original value is not yet journaled to the state dir before a write;
// see docs/agent.md.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/kernel/sysroot.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::agent {

inline constexpr char kCeilingPath[] = "/sys/kernel/debug/x86/tlb_single_page_flush_ceiling";
inline constexpr char kLockdownPath[] = "/sys/kernel/security/lockdown";
// The kernel's built-in value (arch/x86/mm/tlb.c); what a run spec's "default" ceiling means.
inline constexpr int64_t kKernelDefaultCeiling = 33;

// The bracketed mode of the lockdown file ("none", "integrity", "confidentiality"), or "" when
// the file cannot be read (securityfs not mounted, kernel without lockdown LSM).
std::string ReadLockdownMode(const Sysroot& sysroot);

// Never writes: writability is checked with open(O_WRONLY). `reason` is set whenever the
// file is not both readable and writable, e.g. "kernel lockdown (integrity)",
// "debugfs not mounted", "not root", "file absent (kernel older than 3.17 or not x86)".
v1::CeilingInfo ProbeCeiling(const Sysroot& sysroot);

// The current value. Errors carry the path and errno text (PERMISSION_DENIED under lockdown).
absl::StatusOr<int64_t> ReadCeiling(const Sysroot& sysroot);

// Writes `value`, reads it back and returns the read-back value. FAILED_PRECONDITION if the
// kernel holds a different value afterwards (so the caller never measures the wrong setting).
absl::StatusOr<int64_t> WriteCeiling(const Sysroot& sysroot, int64_t value);

// Parses a run spec's ceiling: "default" -> kKernelDefaultCeiling, a page count in
// [0, 2^31) -> that count. "" is not a ceiling (callers leave the tunable alone) and, like
// anything else, gives INVALID_ARGUMENT.
absl::StatusOr<int64_t> ParseCeilingSpec(std::string_view spec);

}  // namespace tlbfleet::agent
