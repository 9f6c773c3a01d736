#pragma once
// Run specs: parsing the user's YAML and the one validation of a RunSpec at the boundary.
// Everything past ValidateRunSpec may assume a valid spec.

#include <algorithm>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::scheduler {

// Parses the YAML run spec (shape documented in docs/run-spec.md). Malformed YAML yields
// INVALID_ARGUMENT "<source>:<line>:<col>: <what>"; a field of the wrong shape yields
// INVALID_ARGUMENT naming the field path, e.g. "sweep.threads: expected a list or a map".
// Also calls ValidateRunSpec. `source` names the input in messages (a file name).
absl::StatusOr<v1::RunSpec> ParseRunSpec(std::string_view yaml, std::string_view source);

// Checks the spec against the workload catalogue: known benchmark, known parameters with
// valid values (after merging run params, arm params and each sweep value), iterations >= 1,
// at least one arm, unique non-empty arm names, ceiling values, host selector.
// The error message starts with the field path: "arms[1].name: duplicate arm name \"mmap\"".
absl::Status ValidateRunSpec(const v1::RunSpec& spec);

// Applies the YAML defaults to a spec built elsewhere (e.g. from JSON, where proto3 cannot
// tell "absent" from 0): iterations 0 -> 1, hosts.count 0 -> 1. ParseRunSpec does this
// itself; call it before ValidateRunSpec, which refuses 0 for both.
void FillRunSpecDefaults(v1::RunSpec* spec);

// Whether hosts must reboot for `spec`: it plans, or may grow to, more than one boot per arm,
// or an arm names a boot entry (every boot of such a run is a reboot into its entry).
inline bool RunNeedsReboots(const v1::RunSpec& spec) {
  return spec.boots() > 1 || spec.adaptive().boots().max() > 1 ||
         std::any_of(spec.arms().begin(), spec.arms().end(),
                     [](const v1::ArmSpec& arm) { return !arm.boot_entry().empty(); });
}

// Whether `spec` grows its plan until its comparison settles (docs/statistics.md).
inline bool RunIsAdaptive(const v1::RunSpec& spec) {
  return spec.adaptive().iterations().max() > 0 || spec.adaptive().boots().max() > 0;
}

}  // namespace tlbfleet::scheduler
