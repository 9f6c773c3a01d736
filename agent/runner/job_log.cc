#include "agent/runner/job_log.h"

#include "absl/strings/str_cat.h"
#include "agent/runner/assignment_check.h"
#include "agent/runner/paths.h"

namespace tlbfleet::agent {

std::string JobLogIds(const v1::JobAssignment& a) {
  return absl::StrCat(
      "run=", paths::ValidLeaseId(a.run_id()) ? a.run_id() : Shown(a.run_id()), " job=", a.job_id(),
      " lease=", paths::ValidLeaseId(a.lease_id()) ? a.lease_id() : Shown(a.lease_id()));
}

std::string JobStatusName(v1::JobStatus status) {
  std::string name = v1::JobStatus_Name(status);
  return name.rfind("JOB_STATUS_", 0) == 0 ? name.substr(11) : name;
}

}  // namespace tlbfleet::agent
