#pragma once
// `tlbfleet ceilings RUN [--metric M] [--format text|json]`: the report of a ceiling sweep
// (controller/report/ceiling_sweep.h): per microarchitecture the metric against the ceiling
// and the smallest ceiling not worse than the best, with the flush profile at that value.

#include <ostream>
#include <string>

#include "controller/cli/fleet_client.h"

namespace CLI {
class App;
}

namespace tlbfleet::cli {

class CeilingsCommand {
 public:
  explicit CeilingsCommand(CLI::App& app);
  bool parsed() const;
  // 0; 1 for a run that is not a ceiling sweep or has no samples yet; RPC failures as
  // exit_codes.h says.
  int Run(FleetClient& client, std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* command_;
  std::string run_id_;
  std::string metric_;
  std::string format_ = "text";
};

}  // namespace tlbfleet::cli
