#pragma once
// Bounds and error helpers shared by the YAML parser (run_spec.cc) and ValidateRunSpec
// (run_spec_validate.cc), so that a value refused while parsing and the same value refused
// in a spec built elsewhere read alike. Not part of the scheduler's interface.

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "catalogue/catalogue.h"
#include "common/yaml_fields.h"

namespace tlbfleet::scheduler {

inline constexpr int64_t kMinIterations = 1;
inline constexpr int64_t kMaxIterations = 100000;
// Boots per arm: each is a real reboot of the host, a minute or more on real machines.
inline constexpr int64_t kMaxBoots = 1000;
// adaptive target_ci: a ratio CI half-width; 50 % would already be meaningless.
inline constexpr double kMinTargetCi = 1e-6;
inline constexpr double kMaxTargetCi = 0.5;
inline constexpr int64_t kMinHosts = 1;
inline constexpr int64_t kMaxHosts = 1000;
// 0 means "derived from the workload"; a week bounds any sane single iteration.
inline constexpr int64_t kMaxJobTimeoutSeconds = 7 * 24 * 3600;
inline constexpr int64_t kMinSweepBound = 1;
inline constexpr int64_t kMaxSweepBound = 1000000;
inline constexpr int64_t kMaxJobs = 1000000;
// hosts.min_dtlb_entries: 0 (absent) means any; real first-level dTLBs have 4..~100 entries.
inline constexpr int64_t kMinDtlbEntries = 1;
inline constexpr int64_t kMaxDtlbEntries = 65536;
// hosts.kernel_release: a glob, bounded like any other user string that reaches logs.
inline constexpr size_t kMaxKernelReleaseGlob = 256;
inline constexpr size_t kMaxNameLength = 128;
inline constexpr int64_t kMaxCeiling = std::numeric_limits<int32_t>::max();

// Field errors in the one wording every YAML document uses (common/yaml_fields.h).
using yaml_fields::FieldError;
using yaml_fields::Quote;
using yaml_fields::RangeError;

// An arm's ceiling as stored in ArmSpec.ceiling: "default" or a decimal page count in
// [0, kMaxCeiling] without leading zeros. Accepts "default" or decimal digits only (no sign,
// spaces or exponent) and returns the canonical spelling ("033" -> "33"); INVALID_ARGUMENT
// naming `path` otherwise.
absl::StatusOr<std::string> CanonicalCeiling(absl::string_view text, absl::string_view path);

// The registry's workload `name`, or nullptr. Makes sure every workload is linked in first.
const catalogue::WorkloadSchema* FindWorkload(const std::string& name);

}  // namespace tlbfleet::scheduler
