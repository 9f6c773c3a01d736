#pragma once
// The workload catalogue: every benchmark tlbfleet runs, by name, with its schema
// (catalogue/schema.h), and the monitors an agent may run around an iteration. The one list of
// each: the controller validates run specs and serves forms from it, the agent binds its run
// loops to it (agent/workloads), the dashboard reads it over the API (ListWorkloads).
// Immutable; thread-safe.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "catalogue/schema.h"

namespace tlbfleet::catalogue {

// nullptr when the catalogue has no workload of that name.
const WorkloadSchema* FindWorkload(std::string_view name);
// Every workload, by name.
const std::vector<const WorkloadSchema*>& AllWorkloads();
std::vector<std::string> WorkloadNames();  // sorted, test additions last
// Adds a workload only a test knows (not thread-safe: before anything else uses the catalogue).
void AddWorkloadForTest(std::unique_ptr<WorkloadSchema> workload);

// The workload that runs mmtests benchmark `mmtest` (WorkloadSchema::MmtestsNames), or nullptr.
const WorkloadSchema* FindMmtestsWorkload(std::string_view mmtest);

// A monitor: figures an agent records around every iteration when the run spec asks
// (`monitors: [flush_profile]`), sent as ordinary samples (docs/agent.md#monitors).
struct MonitorInfo {
  std::string name;
  std::string help;
};
const std::vector<MonitorInfo>& Monitors();
const MonitorInfo* FindMonitor(std::string_view name);

}  // namespace tlbfleet::catalogue
