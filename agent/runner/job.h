#pragma once
// Runs one JobAssignment from start to end on this host:
//   1. if the assignment names a ceiling: refuse while the host is degraded, check the host
//      can write it (fail fast if not), take the host's ceiling lock, journal the value this
//      boot started with, write the new one and verify it by reading it back; if not, take
//      the lock shared and read the ceiling (job_ceiling.h);
//   2. start the assignment's monitors (agent/kernel/monitor.h);
//   3. run the workload in a child process (see child_process.h) with the assignment's
//      timeout;
//   4. stop the monitors; turn each JSON line of the workload's output, then each monitor
//      figure, into a v1::Sample with full provenance;
//   5. read the ceiling again (it was also polled while the workload ran): a change fails the
//      job with both values; restore the original ceiling (a failed restore fails the job
//      and marks the host degraded). Samples carry the ceiling observed throughout.
// The result is the SpooledJob record the agent spools and sends. Nothing here talks to the
// controller or touches the spool.

#include <functional>
#include <string>
#include <vector>

#include "agent/kernel/sysroot.h"
#include "agent/runner/child_process.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::agent {

// What the agent adds to every sample's provenance.
struct HostContext {
  std::string agent_id;
  v1::HostInfo host;
};

using ArgvBuilder = std::function<std::vector<std::string>(const v1::JobAssignment&)>;

// {"/proc/self/exe", "run-workload", <benchmark>, "--json", "--set", "k=v", ...}: the agent's
// own binary in its hidden workload mode, parameters in sorted order.
std::vector<std::string> WorkloadArgv(const v1::JobAssignment& assignment);

struct JobOptions {
  const Sysroot* sysroot = nullptr;     // required; where the ceiling lives
  ArgvBuilder argv_for = WorkloadArgv;  // tests substitute /bin/sh scripts
  // paths::CeilingJournalFile(state_dir); required when an assignment names a ceiling.
  std::string ceiling_journal;
  // paths::CeilingDegradedFile(state_dir): a failed restore marks the host degraded there,
  // and while it is, jobs that set the ceiling are refused. Empty: never (tests).
  std::string ceiling_degraded;
  // Called with notes that are not results (e.g. "perf: dTLB-load-misses not supported");
  // the agent sends them as JobProgress. May be empty.
  std::function<void(const std::string&)> progress;
  // Called with how the workload's process ended (the agent's metrics), when it started at
  // all. May be empty.
  std::function<void(const ChildResult&)> on_child_exit;
};

// Never fails as a function: every problem is a non-SUCCEEDED JobComplete in the record,
// with a reason an operator can act on. `cancel` may be null. The record's samples carry
// seq 0..n-1; complete.sample_count is their number. Samples printed before a failure are
// kept (the status tells the controller not to trust them blindly).
v1::SpooledJob RunJob(const v1::JobAssignment& assignment, const HostContext& host,
                      const JobOptions& options, CancelToken* cancel);

}  // namespace tlbfleet::agent
