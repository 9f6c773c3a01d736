#pragma once
// `tlbfleet import-results --format mmtests|lkp DIR` (docs/cli.md, docs/formats.md#import):
// another tool's result directory stored as a finished run. The directory is read and parsed
// here (its errors need no controller) and sent whole to ImportResults, which parses it again
// where it is stored and stores it in one transaction.

#include <ostream>
#include <string>

#include "controller/cli/fleet_client.h"

namespace CLI {
class App;
}

namespace tlbfleet::cli {

class ImportResultsCommand {
 public:
  explicit ImportResultsCommand(CLI::App& app);
  bool parsed() const;
  // 0 when stored, or already stored (it says as which run). 2 for what the user can fix: DIR
  // not a directory or not a result root of the format, a log that does not parse (FILE:LINE),
  // an iteration directory missing. Otherwise RPC failures as exit_codes.h says.
  int Run(const FleetClientOptions& options, std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* command_;
  std::string format_;
  std::string dir_;
};

}  // namespace tlbfleet::cli
