#include "controller/report/row_stopping.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "controller/report/sequential.h"

namespace tlbfleet::report {

namespace {

// The boot number of a simulated observation ("b3", "new-b3" -> 3).
size_t RowStoppingBootRank(const std::string& boot) {
  const size_t b = boot.rfind('b');
  return b == std::string::npos ? 0 : static_cast<size_t>(std::stoul(boot.substr(b + 1)));
}

}  // namespace

absl::StatusOr<RowStoppingRun> SimulateRowStopping(const calibration::Design& noise,
                                                   const std::vector<double>& changes,
                                                   const v1::AdaptiveSpec& spec, uint64_t seed,
                                                   int index) {
  if (spec.stop() != v1::AdaptiveSpec::STOP_VERDICT || spec.boots().max() < 2 ||
      spec.boots().max() > static_cast<uint32_t>(noise.boots)) {
    return absl::InvalidArgumentError(
        "adaptive: stop: verdict with boots.max in 2..the design's boots");
  }
  if (!changes.empty() && changes.size() != static_cast<size_t>(noise.rows)) {
    return absl::InvalidArgumentError(
        absl::StrCat("changes: ", changes.size(), " given for ", noise.rows, " rows"));
  }
  calibration::Design null = noise;
  null.change = 0;
  std::vector<Observation> all = calibration::Simulate(null, seed, index);
  for (Observation& o : all) {
    const size_t row = std::stoul(o.param_value);
    const double change = changes.empty() ? noise.change : changes[row];
    if (o.arm == "new") o.value *= 1 + change;
  }
  const std::vector<std::string> metrics = {"ops"};
  CompareOptions options;
  options.arm_order = {"base", "new"};
  options.cross_checks = false;  // never part of a decision (comparison.h)

  AdaptivePlan plan;
  plan.iterations_per_boot = static_cast<uint32_t>(noise.iterations);
  plan.boots = std::max<uint32_t>(spec.boots().min(), 1);
  // Boots each (sweep value, arm) has; the baseline and an open row's arm move together.
  std::map<SweepArm, size_t> boots_of;
  for (const Observation& o : all) boots_of[{o.param_name, o.param_value, o.arm}] = plan.boots;
  RowStoppingRun run;
  std::vector<RowOutcome> earlier;
  for (;;) {
    std::vector<Observation> taken;
    for (const Observation& o : all) {
      if (RowStoppingBootRank(o.boot) < boots_of[{o.param_name, o.param_value, o.arm}]) {
        taken.push_back(o);
      }
    }
    absl::StatusOr<Comparison> comparison = Compare(taken, options);
    if (!comparison.ok()) return comparison.status();
    AdaptiveDecision d = DecideAdaptive(spec, metrics, *comparison, plan, &earlier);
    for (RowOutcome& row : d.rows) {
      const bool before = std::any_of(earlier.begin(), earlier.end(), [&](const RowOutcome& e) {
        return e.decided && e.param_value == row.param_value && e.arm == row.arm;
      });
      if (row.decided && !before) row.decided_round = static_cast<uint32_t>(run.looks);
    }
    ++run.looks;
    earlier = d.rows;
    if (d.action == AdaptiveDecision::Action::kStop) break;
    if (d.action != AdaptiveDecision::Action::kAddBoot) {
      return absl::InvalidArgumentError("adaptive: the decision did not add a boot");
    }
    for (const SweepArm& cell : StillMeasured(d.rows, *comparison)) ++boots_of[cell];
    ++plan.boots;
  }
  run.rows = std::move(earlier);
  for (const auto& [cell, boots] : boots_of) run.boots_measured += boots;
  run.boots_whole_run = boots_of.size() * plan.boots;
  return run;
}

}  // namespace tlbfleet::report
