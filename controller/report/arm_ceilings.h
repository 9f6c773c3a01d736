#pragma once
// Which flush ceiling each arm really ran under, for every format of `compare`: what the
// arm's spec asked for and what its samples say the agent set (so `default` shows what it
// resolved to on the hosts: "default = 33"), or observed when the arm set none.
//
// Pure functions over samples.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "controller/report/comparison.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::report {

struct ArmCeiling {
  std::string arm;
  std::string spec;            // "", "default" or a page count; "?" when not known
  std::set<int64_t> applied;   // values the agent set (ceiling_applied)
  std::set<int64_t> observed;  // values observed where the arm set none (ceiling_observed)
  uint64_t samples = 0;
  uint64_t unstated = 0;  // samples that state no ceiling at all
};

// One entry per arm, in `arm_order` (arms of the samples not listed follow). `spec_by_arm`
// holds each arm's ceiling as the run spec wrote it; arms missing from it get spec "?".
std::vector<ArmCeiling> SummarizeArmCeilings(const std::vector<v1::Sample>& samples,
                                             const std::map<std::string, std::string>& spec_by_arm,
                                             const std::vector<std::string>& arm_order);

// "512", "default = 33", "default = 33/34 on different hosts", "not set (observed 33)",
// "not set", "512 asked, 500 applied" (a mismatch the controller's ingest check should have
// refused), with "; N samples state none" when some samples say nothing.
std::string DescribeArmCeiling(const ArmCeiling& c);

// The description of `arm`, or "" when the arm is not in `ceilings`.
std::string ArmCeilingFor(const std::vector<ArmCeiling>& ceilings, const std::string& arm);

// "flush ceiling per arm: base default = 33; c512 512\n" (or "" for no arms).
std::string RenderArmCeilingsText(const std::vector<ArmCeiling>& ceilings);

// Each arm's ceiling as the run spec wrote it.
std::map<std::string, std::string> ArmCeilingSpecs(const v1::RunSpec& spec);

// Fills `comparison`'s per-arm `ceiling` (JSON and CSV) and its `ceilings` line (text) from
// `samples`, so that every format of `compare` says what each arm ran under.
void AttachArmCeilings(const std::vector<v1::Sample>& samples, const v1::RunSpec& spec,
                       Comparison* comparison);

}  // namespace tlbfleet::report
