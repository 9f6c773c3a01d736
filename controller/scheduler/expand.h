#pragma once
// Expansion of a validated run into jobs.
//
// One job = one iteration of one arm at one sweep value on one host slot. Jobs are ordered
// iteration-major (for each iteration: for each sweep value: for each arm), so arms
// interleave in time (A B A B) and slow drift of a host hits every arm alike.
// A run with hosts.count = N has N host slots; each slot gets the full set of jobs, so
// every taking-part host measures every arm.

#include <map>
#include <string>
#include <vector>

#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::scheduler {

struct JobPlan {
  uint32_t slot = 0;  // host slot, 0..hosts.count-1
  std::string arm;
  std::string param_name;  // "" when the run has no sweep
  std::string param_value;
  uint32_t iteration = 1;                     // 1-based
  std::map<std::string, std::string> params;  // merged: run params < arm params < sweep value
  std::string ceiling;                        // the arm's ceiling
  std::vector<std::string> monitors;          // the run's monitors
  uint32_t timeout_seconds = 0;  // spec.job_timeout_seconds, or the workload's own bound
};

// The sweep values of `spec` in order: the explicit list, or the policy's sequence from min
// to max (linear: min, min+1, ..., max; pow2: min, then powers of two above min, then max;
// fib: 1, 2, 3, 5, 8, ... within [min, max], with min and max always included).
// No sweep: one empty value.
std::vector<std::string> SweepValues(const v1::SweepSpec& sweep);

// Requires a spec that passed ValidateRunSpec.
std::vector<JobPlan> ExpandRun(const v1::RunSpec& spec);

}  // namespace tlbfleet::scheduler
