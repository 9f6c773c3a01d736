#include "controller/report/cross_run.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tlbfleet::report {
namespace {

// The chosen arms of `run`, in spec order; INVALID_ARGUMENT naming `field` for an unknown one.
absl::StatusOr<std::vector<v1::ArmSpec>> ChosenArms(const v1::Run& run, const std::string& arm,
                                                    const char* field) {
  std::vector<v1::ArmSpec> out;
  std::vector<std::string> names;
  for (const v1::ArmSpec& a : run.spec().arms()) {
    names.push_back(a.name());
    if (arm.empty() || a.name() == arm) out.push_back(a);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": run ", run.id(),
                                                   " has no arm named \"", arm,
                                                   "\" (arms: ", absl::StrJoin(names, ", "), ")"));
  }
  return out;
}

}  // namespace

absl::StatusOr<CrossRun> MergeRuns(const v1::Run& a, std::vector<v1::Sample> samples_a,
                                   const std::string& arm_a, const v1::Run& b,
                                   std::vector<v1::Sample> samples_b, const std::string& arm_b) {
  if (a.id() == b.id()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "with_run_id: ", b.id(), " is the run itself; compare its arms without with_run_id"));
  }
  absl::StatusOr<std::vector<v1::ArmSpec>> arms_a = ChosenArms(a, arm_a, "arm");
  if (!arms_a.ok()) return arms_a.status();
  absl::StatusOr<std::vector<v1::ArmSpec>> arms_b = ChosenArms(b, arm_b, "with_arm");
  if (!arms_b.ok()) return arms_b.status();
  CrossRun out;
  out.spec = a.spec();
  out.spec.clear_arms();
  for (const auto& [run, arms] : {std::pair{&a, &*arms_a}, std::pair{&b, &*arms_b}}) {
    for (v1::ArmSpec arm : *arms) {
      const std::string name = absl::StrCat(run->id(), ":", arm.name());
      out.arm_order.push_back(name);
      arm.set_name(name);
      *out.spec.add_arms() = std::move(arm);
    }
  }
  for (auto [run, samples] : {std::pair{&a, &samples_a}, std::pair{&b, &samples_b}}) {
    for (v1::Sample& s : *samples) {
      s.set_arm(absl::StrCat(run->id(), ":", s.arm()));
      if (std::find(out.arm_order.begin(), out.arm_order.end(), s.arm()) == out.arm_order.end()) {
        continue;  // an arm not chosen
      }
      out.samples.push_back(std::move(s));
    }
  }
  out.title = absl::StrCat(a.spec().benchmark(), " — run ", a.id(), " (", a.spec().name(),
                           ") against run ", b.id(), " (", b.spec().name(), "), across runs");
  out.note = absl::StrCat(
      "across runs: these arms come from runs ", a.id(), " and ", b.id(),
      ", measured at different times (perhaps on other hosts and kernels); the interval covers "
      "whatever else changed between the runs, not only the arms");
  return out;
}

}  // namespace tlbfleet::report
