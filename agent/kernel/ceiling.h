#pragma once
// The x86 TLB single-page flush ceiling (debugfs), the kernel tunable tlbfleet compares.
//
//   ProbeCeiling()  what the host allows: readable? writable? current value? and if not, why.
//   ReadCeiling()   the current value.
//   WriteCeiling()  write a value and read it back; fails unless the kernel holds that value.
//
// Journaling the original value and restoring it is ceiling_control.h.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "agent/kernel/sysroot.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::agent {

inline constexpr char kCeilingPath[] = "/sys/kernel/debug/x86/tlb_single_page_flush_ceiling";
inline constexpr char kLockdownPath[] = "/sys/kernel/security/lockdown";
// The kernel's built-in value (arch/x86/mm/tlb.c). Documentation only: a run spec's
// "default" means the value this boot started with, which is 33 unless someone changed it.
inline constexpr int64_t kKernelDefaultCeiling = 33;
inline constexpr int64_t kMaxCeiling = 2147483647;  // INT_MAX: the kernel's kstrtoint()

// The bracketed mode of the lockdown file ("none", "integrity", "confidentiality"), or "" when
// the file cannot be read (securityfs not mounted, kernel without lockdown LSM).
std::string ReadLockdownMode(const Sysroot& sysroot);

// Never writes: writability is checked with open(O_WRONLY). `reason` is set whenever the
// file is not both readable and writable, e.g. "kernel lockdown (integrity)",
// "debugfs not mounted", "not root", "file absent (kernel older than 3.17 or not x86)".
v1::CeilingInfo ProbeCeiling(const Sysroot& sysroot);

// The current value. Errors carry the path and errno text (PERMISSION_DENIED under lockdown).
absl::StatusOr<int64_t> ReadCeiling(const Sysroot& sysroot);

// Writes `value` (in decimal), reads it back and returns the read-back value. A write the
// kernel rejects keeps its errno text (EINVAL, ERANGE -> INVALID_ARGUMENT; EPERM ->
// PERMISSION_DENIED); FAILED_PRECONDITION if the kernel holds a different value afterwards
// (so the caller never measures the wrong setting).
absl::StatusOr<int64_t> WriteCeiling(const Sysroot& sysroot, int64_t value);

// A run spec's ceiling: "default" (the value this boot started with) or a page count.
struct CeilingSpec {
  bool is_default = false;
  int64_t pages = 0;  // when !is_default
};

// "default", or an integer in [0, INT_MAX] written the way the kernel's kstrtoint(s, 0)
// reads it (base 0: "512", "0x200", "01000"). "" is not a ceiling (callers leave the
// tunable alone) and, like a sign, spaces or anything else, gives INVALID_ARGUMENT.
absl::StatusOr<CeilingSpec> ParseCeilingSpec(std::string_view spec);

}  // namespace tlbfleet::agent
