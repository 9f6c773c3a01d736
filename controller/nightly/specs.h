#pragma once
// The YAML a user gives `tlbfleet schedule add` and `tlbfleet bisect start`, and the run specs
// the controller builds from them (docs/nightly.md has both formats). Errors are
// INVALID_ARGUMENT naming the field: "cron: cron field 2 (hour) '24': ...", "run.arms[0].name:
// ...", "bad: good and bad are the same entry 'e3'".
//
// A schedule:
//   name: nightly-pipetest        # letters, digits, '.', '_', '-'
//   cron: "0 2 * * *"             # UTC
//   hosts: {labels: {vmlab: "1"}} # optional: replaces the run's hosts
//   run: {benchmark: ..., ...}    # a run spec, or `preset:` with overrides; `name` optional
//   kernel: {source: linux, branch: my-branch, config: lab}   # optional: follow a branch; each
//                                 #   night every arm measures its head, built from source
//   on_regression: alert          # or bisect, or {action: bisect, entries: [...], good, bad,
//                                 #   boots_per_round, max_boots_per_step}; with `kernel`,
//                                 #   `bisect` bisects the commits between the two nights
//   detect: {test: student-t, max_p: 0.0001, min_segment: 3,   # optional
//            serial: ar1, drift: {detect: true, opens_regression: false, threshold: 0.02}}
//
// A bisection:
//   entries: [e0, e1, ..., e7]    # boot entries, oldest first
//   good: e0
//   bad: e7
//   metric: usecs_per_op          # default: the benchmark's primary metric
//   param: threads=4              # required when the run sweeps several values
//   boots_per_round: 2            # boots per entry in one measurement run (default 2)
//   max_boots_per_step: 8         # then the step stops as ambiguous (default 8)
//   skip_endpoint_check: false
//   run: {benchmark: ..., ...}    # at most one arm: its params and ceiling go to every entry
//
// A bisection over commits (docs/kernels.md), instead of entries, good and bad:
//   commits: {source: linux, good: v6.1, bad: my-branch, config: lab}   # config optional
// Nightly::StartBisect then asks a builder for good..bad (the full hashes and the range).

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "controller/bisect/bisection.h"
#include "controller/stats/changepoint.h"
#include "tlbfleet/v1/nightly.pb.h"

namespace tlbfleet::nightly {

absl::StatusOr<v1::ScheduleSpec> ParseScheduleSpec(std::string_view yaml, std::string_view source);

// The run spec (YAML) of one slot of `spec`, named `run_name`. `kernel`: for a schedule that
// follows a branch, the night's revision (its head, resolved), given to every arm.
absl::StatusOr<std::string> ScheduledRunYaml(const v1::ScheduleSpec& spec,
                                             const std::string& run_name,
                                             const v1::KernelRevision* kernel = nullptr);

// The change-point options a schedule asks for.
stats::ChangePointOptions DetectorOptions(const v1::ChangeDetection& detection);

// Fills spec.run (parsed), run_yaml, metric (default: the primary one), lower_is_better and
// checks the measurement runs it will make. Bisection::Start checks the entries; a spec with
// `commits` has its revisions checked as text only (the range comes from a builder).
absl::StatusOr<v1::BisectSpec> ParseBisectSpec(std::string_view yaml, std::string_view source);

// The run of a regression's bisection: the schedule's run (its hosts applied) measuring only
// the arm `arm` (without its boot entry: the bisection chooses those).
absl::StatusOr<std::string> BisectRunYamlFromSchedule(const v1::ScheduleSpec& spec,
                                                      const std::string& arm);

// Checks a BisectSpec built elsewhere (a regression's bisection): its run, metric and param.
absl::Status CheckBisectRun(v1::BisectSpec* spec);

// The run spec (YAML) of a bisection's measurement: one arm per entry of `next` named
// good/tested/bad (bisect/calibrated.h; the parent check: good and tested), `next.boots` boots
// each, named `run_name`. Over commits each arm is `kernel: {source, rev: <hash>, config}`, the
// revert check's tested arm with `revert: <culprit>`.
absl::StatusOr<std::string> MeasurementRunYaml(const v1::BisectSpec& spec,
                                               const bisect::NextAction& next,
                                               const std::string& run_name);

}  // namespace tlbfleet::nightly
