#pragma once
// How the agent's log lines name a job and say how it ended, one spelling for every unit of
// the runner (agent.cc, outbox.cc) so that a grep for a lease finds all of its lines.

#include <string>

#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::agent {

// "run=<run_id> job=<job_id> lease=<lease_id>". The ids come from the controller and are
// logged before they are checked, so one that is not a valid lease id is escaped (Shown()).
std::string JobLogIds(const v1::JobAssignment& assignment);

// "SUCCEEDED" rather than "JOB_STATUS_SUCCEEDED".
std::string JobStatusName(v1::JobStatus status);

}  // namespace tlbfleet::agent
