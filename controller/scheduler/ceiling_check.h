#pragma once
// Whether a job's samples ran under the ceiling their arm asked for. The agent fails a job
// whose ceiling changed, but the controller does not take that on trust: at completion it
// checks every stored sample of the job against the job's arm, and a mismatch fails the job
// with both values (an agent of another version, a bug, or a sample that claims nothing).
//
//   arm ceiling ""         no sample may say the agent set the ceiling
//   arm ceiling "default"  every sample says the agent set it, all to one value (what the
//                          boot's value resolved to; the report shows it)
//   arm ceiling N          every sample says the agent set it to exactly N
//
// Pure functions; no store access.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tlbfleet::scheduler {

// What one stored sample says about its ceiling.
struct SampleCeiling {
  uint64_t seq = 0;
  bool applied = false;
  bool has_value = false;  // the ceiling column is not NULL
  int64_t value = 0;
};

// OK, or FAILED_PRECONDITION naming the arm's ceiling and the sample's, e.g. "arm ceiling-512
// asked for flush ceiling 512 but sample 3 ran under 500". An unparseable arm ceiling is
// INVALID_ARGUMENT (the spec was validated at submit, so it means a corrupt job row).
absl::Status CheckJobCeilings(std::string_view arm, std::string_view arm_ceiling,
                              const std::vector<SampleCeiling>& samples);

}  // namespace tlbfleet::scheduler
