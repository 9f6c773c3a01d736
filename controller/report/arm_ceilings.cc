#include "controller/report/arm_ceilings.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tlbfleet::report {

std::vector<ArmCeiling> SummarizeArmCeilings(const std::vector<v1::Sample>& samples,
                                             const std::map<std::string, std::string>& spec_by_arm,
                                             const std::vector<std::string>& arm_order) {
  std::vector<std::string> order = arm_order;
  std::map<std::string, ArmCeiling> by_arm;
  for (const v1::Sample& s : samples) {
    if (std::find(order.begin(), order.end(), s.arm()) == order.end()) order.push_back(s.arm());
    ArmCeiling& c = by_arm[s.arm()];
    ++c.samples;
    if (s.ceiling_applied()) {
      c.applied.insert(s.ceiling());
    } else if (s.ceiling_observed()) {
      c.observed.insert(s.ceiling());
    } else {
      ++c.unstated;
    }
  }
  std::vector<ArmCeiling> out;
  for (const std::string& arm : order) {
    ArmCeiling c = by_arm[arm];
    c.arm = arm;
    auto spec = spec_by_arm.find(arm);
    c.spec = spec == spec_by_arm.end() ? "?" : spec->second;
    out.push_back(std::move(c));
  }
  return out;
}

std::string DescribeArmCeiling(const ArmCeiling& c) {
  const std::string applied = absl::StrJoin(c.applied, "/");
  std::string text;
  if (c.spec == "default") {
    text = c.applied.empty() ? "default (not applied)"
                             : absl::StrCat("default = ", applied,
                                            c.applied.size() > 1 ? " on different hosts" : "");
  } else if (c.spec.empty() || (c.spec == "?" && c.applied.empty())) {
    text = c.observed.empty()
               ? "not set"
               : absl::StrCat("not set (observed ", absl::StrJoin(c.observed, "/"), ")");
  } else if (c.spec == "?") {
    text = applied;
  } else if (c.applied.size() == 1 && absl::StrCat(*c.applied.begin()) == c.spec) {
    text = c.spec;
  } else {
    text = absl::StrCat(c.spec, " asked, ", c.applied.empty() ? "none" : applied, " applied");
  }
  if (c.unstated > 0 && c.unstated < c.samples) {
    absl::StrAppend(&text, "; ", c.unstated, " samples state none");
  }
  return text;
}

std::string ArmCeilingFor(const std::vector<ArmCeiling>& ceilings, const std::string& arm) {
  for (const ArmCeiling& c : ceilings) {
    if (c.arm == arm) return DescribeArmCeiling(c);
  }
  return "";
}

std::string RenderArmCeilingsText(const std::vector<ArmCeiling>& ceilings) {
  if (ceilings.empty()) return "";
  std::vector<std::string> parts;
  for (const ArmCeiling& c : ceilings) parts.push_back(c.arm + " " + DescribeArmCeiling(c));
  return absl::StrCat("flush ceiling per arm: ", absl::StrJoin(parts, "; "), "\n");
}

std::map<std::string, std::string> ArmCeilingSpecs(const v1::RunSpec& spec) {
  std::map<std::string, std::string> out;
  for (const v1::ArmSpec& arm : spec.arms()) out[arm.name()] = arm.ceiling();
  return out;
}

void AttachArmCeilings(const std::vector<v1::Sample>& samples, const v1::RunSpec& spec,
                       Comparison* comparison) {
  const std::vector<ArmCeiling> ceilings =
      SummarizeArmCeilings(samples, ArmCeilingSpecs(spec), comparison->arms);
  comparison->ceilings = RenderArmCeilingsText(ceilings);
  for (GroupResult& group : comparison->groups) {
    for (ArmResult& arm : group.arms) arm.ceiling = ArmCeilingFor(ceilings, arm.arm);
  }
}

}  // namespace tlbfleet::report
