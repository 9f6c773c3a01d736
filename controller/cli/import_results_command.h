#pragma once
// `tlbfleet import-results --format mmtests|lkp DIR` (docs/cli.md, docs/formats.md#import):
// another tool's result directory stored as a finished run. The directory is read and parsed
// here (its errors need no controller) and sent whole to ImportResults, which parses it again
// where it is stored and stores it in one transaction.
//
// `--arm ARM` (mmtests) sends one arm of the directory: one run per kernel, which is what a
// series wants (a point per run). `--series ID` asks the controller which host class and
// configuration series ID has and sends that as the import's join (import_results.h), so that
// the run's points land in that history.

#include <cstddef>
#include <ostream>
#include <string>

#include "controller/cli/fleet_client.h"
#include "controller/report/import_results.h"

namespace CLI {
class App;
}

namespace tlbfleet::cli {

// The largest ImportResults request the controller receives: gRPC's default limit on a
// received message, which the controller does not raise (it would raise it for every method
// of every client, agents' included, before any authentication).
inline constexpr size_t kImportRequestLimitBytes = size_t{4} << 20;

// INVALID_ARGUMENT naming DIR, the request's size and the limit when `request` is above
// kImportRequestLimitBytes, with each arm's share when `files` holds several (mmtests' ARM/
// directories), so that the user knows whether `--arm` will do.
absl::Status CheckImportRequestSize(const std::string& dir, const report::ImportFiles& files,
                                    size_t request_bytes);

class ImportResultsCommand {
 public:
  explicit ImportResultsCommand(CLI::App& app);
  bool parsed() const;
  // 0 when stored, or already stored (it says as which run). 2 for what the user can fix: DIR
  // not a directory or not a result root of the format, a log that does not parse (FILE:LINE),
  // an iteration directory missing, an import larger than a request may be, an unknown arm or
  // series, a series the results cannot join. Otherwise RPC failures as exit_codes.h says.
  int Run(const FleetClientOptions& options, std::ostream& out, std::ostream& err) const;

 private:
  CLI::App* command_;
  std::string format_;
  std::string dir_;
  std::string arm_;
  std::string series_;
};

}  // namespace tlbfleet::cli
