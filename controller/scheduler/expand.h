#pragma once
// Expansion of a validated run into jobs.
//
// One job = one iteration of one arm at one sweep value on one host slot. Jobs are ordered
// iteration-major (for each iteration: for each sweep value: for each arm), so arms
// interleave in time (A B A B) and slow drift of a host hits every arm alike.
// A run with hosts.count = N has N host slots; each slot gets the full set of jobs, so
// every taking-part host measures every arm.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::scheduler {

struct JobPlan {
  uint32_t slot = 0;  // host slot, 0..hosts.count-1
  uint32_t boot = 0;  // which of the run's boots, 0..boots-1: a host runs each on a fresh boot
  std::string arm;
  std::string param_name;  // "" when the run has no sweep
  std::string param_value;
  uint32_t iteration = 1;                     // 1-based
  std::map<std::string, std::string> params;  // merged: run params < arm params < sweep value
  std::string ceiling;                        // the arm's ceiling, or the value of a ceiling sweep
  std::string boot_entry;             // the boot entry this job's boot runs (the arm's); "" = any
  std::vector<std::string> monitors;  // the run's monitors
  uint32_t timeout_seconds = 0;       // spec.job_timeout_seconds, or the workload's own bound
};

// What a host-dependent sweep needs to know about the host (from v1::HostInfo). Counts of
// logical CPUs; 0 = unknown (that topology level is then left out).
struct HostTopology {
  int64_t cpus = 0;  // `ncpus`
  int64_t cpus_per_core = 0;
  int64_t cpus_per_llc = 0;
  int64_t cpus_per_numa_node = 0;
};

// ncpus = topology.cpus when known, else logical_cpus.
HostTopology TopologyOf(const v1::HostInfo& host);

// True when the sweep values depend on the host that runs the jobs: the `topology` policy,
// or a min/max given as an expression of ncpus. Such a run is expanded slot by slot, when a
// host takes the slot (ExpandSlotForHost).
bool SweepDependsOnHost(const v1::SweepSpec& sweep);

// The `topology` sequence: min, then one step per topology level (cpus per core, per LLC,
// per NUMA node, ncpus, 2*ncpus, 4*ncpus) strictly between min and max, then max; ascending,
// without repeats.
std::vector<int64_t> TopologySequence(int64_t min, int64_t max, const HostTopology& topology);

// `sweep` with its host-dependent parts evaluated on `topology`: expressions become min/max,
// a capped list loses the values above its cap, a topology policy becomes the explicit list.
// INVALID_ARGUMENT naming the field (e.g. "sweep.threads.max: 2*ncpus = 8192 (ncpus=4096)
// must be ...") when the result is out of bounds for `param_spec`'s range checks
// (done by the caller through ValidateRunSpec) or empty.
absl::StatusOr<v1::SweepSpec> ResolveSweepForHost(const v1::SweepSpec& sweep,
                                                  const HostTopology& topology);

// The jobs of one host slot of a host-dependent run (slot number 0: the caller sets it),
// with `basis` naming the resolved sweep ("threads=1,2,4,8") so that a slot expanded for one
// host can be handed to another host whose sweep is the same. Validates the resolved spec
// (ValidateRunSpec); errors name the field and the host's ncpus.
struct SlotExpansion {
  std::string basis;
  std::vector<JobPlan> jobs;
};
absl::StatusOr<SlotExpansion> ExpandSlotForHost(const v1::RunSpec& spec,
                                                const HostTopology& topology);

// The sweep values of `spec` in order: the explicit list, or the policy's sequence from min
// to max (linear: min, min+1, ..., max; pow2: min, then powers of two above min, then max;
// fib: 1, 2, 3, 5, 8, ... within [min, max], with min and max always included).
// No sweep: one empty value. Requires a sweep that does not depend on the host.
std::vector<std::string> SweepValues(const v1::SweepSpec& sweep);

// The fixed parameters of `arm`: the run's params overridden by the arm's, without those the
// arm draws per iteration (its param_policies).
std::map<std::string, std::string> ArmParams(const v1::RunSpec& spec, const v1::ArmSpec& arm);

// The per-iteration parameters of `arm`: the run's param_policies overridden by the arm's,
// without those the arm fixes in its params.
std::map<std::string, v1::ParamPolicy> ArmParamPolicies(const v1::RunSpec& spec,
                                                        const v1::ArmSpec& arm);

// Inclusive bounds of the section the `mmtests` policy draws from in `iteration` (1-based):
// [1, max] is split into S = min(8, max) sections at k*max/S (integer division), and
// iteration i uses section (i-1) mod S. For max 512: 1-64, 65-128, ..., 449-512. Requires
// max >= 1 and iteration >= 1.
struct IntRange {
  int64_t lo = 0;
  int64_t hi = 0;
};
IntRange MmtestsSection(uint32_t iteration, int64_t max);

// The `mmtests` policy's value of `param` in `iteration` of the run named `run_name`: a
// pseudo-random integer in MmtestsSection(iteration, max), seeded by (run_name, param,
// iteration) only, so re-expanding gives the same value and every arm, sweep value and host
// slot of the run gets the same value in the same iteration. Stable across builds and
// platforms (no std::hash).
int64_t MmtestsPolicyValue(const std::string& run_name, const std::string& param,
                           uint32_t iteration, int64_t max);

// Requires a spec that passed ValidateRunSpec. Parameters with a policy get their value per
// iteration (in JobPlan.params, as a plain integer). Order per slot: boot-major, then
// iteration, sweep value and arm, so each boot holds whole iterations of every arm (of its
// boot entry: see boot_plan.h for runs whose arms name boot entries, and for the balanced
// order of a ceiling sweep's values within a boot).
std::vector<JobPlan> ExpandRun(const v1::RunSpec& spec);

// Re-targets a planned job of `spec` to `iteration` (1-based) of `boot` (0-based): a
// parameter drawn per iteration is drawn again and the timeout follows it. This is how an
// adaptive run adds iterations and boots, copying jobs it already has (which also works for
// host-dependent sweeps, whose values are known only per slot).
void RetargetJob(const v1::RunSpec& spec, uint32_t boot, uint32_t iteration, JobPlan* job);

}  // namespace tlbfleet::scheduler
