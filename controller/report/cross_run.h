#pragma once
// Two runs' arms as one comparison (compare RUN --with OTHER, the dashboard's Compare page):
// the samples of each run's chosen arms, renamed "RUN:ARM" so that arms of the same name stay
// apart, and a spec whose arms carry those names (for the ceilings each arm ran under). The
// comparison itself is the ordinary one (CompareRunSamples), with its calibrated verdicts.

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::report {

struct CrossRun {
  std::vector<v1::Sample> samples;
  std::vector<std::string> arm_order;  // run a's arms, then run b's, as "RUN:ARM"
  v1::RunSpec spec;                    // run a's spec with every chosen arm, renamed
  std::string title;
  std::string note;  // the scope note every verdict gets
};

// `arm_a` / `arm_b`: one arm of that run, or "" for all. INVALID_ARGUMENT naming `arm` or
// `with_arm` when a run has no such arm, and `with_run_id` when both are the same run.
absl::StatusOr<CrossRun> MergeRuns(const v1::Run& a, std::vector<v1::Sample> samples_a,
                                   const std::string& arm_a, const v1::Run& b,
                                   std::vector<v1::Sample> samples_b, const std::string& arm_b);

}  // namespace tlbfleet::report
