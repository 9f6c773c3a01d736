#pragma once
// The host's CPU topology, read with hwloc: what `topology` sweeps and `ncpus` expressions
// are evaluated against on the controller (docs/run-spec.md).

#include <string_view>

#include "absl/status/statusor.h"
#include "agent/kernel/sysroot.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::agent {

// The topology of this machine. INTERNAL if hwloc cannot load it.
absl::StatusOr<v1::CpuTopology> ReadCpuTopology();

// The topology hwloc builds from a synthetic description, e.g. "pack:2 [numa] l3:1 core:4
// pu:2" (hwloc(7), "Synthetic topologies"); for tests. INVALID_ARGUMENT for a bad one.
absl::StatusOr<v1::CpuTopology> CpuTopologyFromSynthetic(std::string_view description);

// Fills host->topology from this machine when `sysroot` is the real root; leaves it unset for
// a fake tree (hwloc reads the real /sys) or when hwloc fails: the controller then knows
// only logical_cpus, and topology sweeps skip the levels it lacks.
void FillCpuTopology(const Sysroot& sysroot, v1::HostInfo* host);

}  // namespace tlbfleet::agent
