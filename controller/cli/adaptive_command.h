#pragma once
// `tlbfleet adaptive --from-csv FILE`: replays the controller's adaptive decisions
// (report::ReplayAdaptiveCsv: DecideAdaptive and the sequential rule, the same functions the
// driver calls) over samples measured before, with the adaptive options as flags; prints
// every look's decision and, per row, the verdict and the boots and samples per arm it used.
// Works without a controller. docs/cli.md#adaptive and docs/statistics.md.

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/report/adaptive_replay.h"

namespace CLI {
class App;
}

namespace tlbfleet::cli {

struct AdaptiveFlags {
  std::string iterations = "1";  // N or MIN..MAX
  std::string boots = "1";
  std::string stop = "precision";
  std::string target_ci;  // fraction or percent
  std::string level;
  std::string margin;
  std::string spending;
  std::vector<std::string> metrics;
  std::string baseline;
};

// The flags as replay options. INVALID_ARGUMENT naming the flag ("--boots: ...") for a
// malformed count or range, a fraction that is not one, or options the replay refuses.
absl::StatusOr<report::ReplayOptions> ReplayOptionsFromFlags(const AdaptiveFlags& flags);

// Registers the command on `app`; after app.parse(), Run() it when parsed().
class AdaptiveCommand {
 public:
  explicit AdaptiveCommand(CLI::App& app);
  bool parsed() const;
  // 0, or 2 (exit_codes.h) for an unreadable file, a CSV the replay refuses, or bad options.
  int Run(std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* command_;
  std::string file_;
  std::string format_ = "text";
  bool lower_is_better_ = false;
  AdaptiveFlags flags_;
};

}  // namespace tlbfleet::cli
