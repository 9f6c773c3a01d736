#pragma once
// `tlbfleet export` (docs/cli.md, docs/formats.md): a finished run, or history series, written
// as other tools read them:
//   export RUN --format mmtests|lkp|bmf --out DIR
//   export --series ID [--series ID ...] --format otava --out DIR
// The writers are in controller/report/export_*.h; this file fetches what they need (GetRun
// and GetResults, Compare for bmf, ListSeries for otava) and writes their files under DIR.

#include <ostream>
#include <string>
#include <vector>

#include "controller/cli/fleet_client.h"

namespace CLI {
class App;
}

namespace tlbfleet::cli {

class ExportCommand {
 public:
  explicit ExportCommand(CLI::App& app);
  bool parsed() const;
  // 0 when every file is written. 2 for what the user can fix: a missing or extra RUN or
  // --series, an unknown run or series, a run not finished, a benchmark the format cannot
  // hold, an --out that is not a new or empty directory or cannot be written. Otherwise RPC
  // failures as exit_codes.h says (4: controller unreachable).
  int Run(const FleetClientOptions& options, std::ostream& out, std::ostream& err) const;

 private:
  int ExportRunFormat(const FleetClientOptions& options, std::ostream& out,
                      std::ostream& err) const;
  int ExportSeries(const FleetClientOptions& options, std::ostream& out, std::ostream& err) const;

  CLI::App* command_;
  std::string run_id_;
  std::string format_;
  std::string out_dir_;
  std::vector<std::string> series_;
};

}  // namespace tlbfleet::cli
