#pragma once
// The nightly commands of `tlbfleet` (docs/cli.md):
//   schedule add FILE.yaml | list | pause ID | resume ID | rm ID
//   regressions [--status open|acknowledged|fixed|all] | regressions ack|fixed|reopen ID
//   series [--benchmark B] [--metric M]
//   bisect start FILE.yaml | show ID | list | cancel ID
// They talk to the controller's NightlyService. Exit codes as exit_codes.h says.

#include <cstdint>
#include <ostream>
#include <string>

#include "controller/cli/fleet_client.h"

namespace CLI {
class App;
}

namespace tlbfleet::cli {

class NightlyClient;

class NightlyCommands {
 public:
  // Registers the commands on `app`.
  explicit NightlyCommands(CLI::App& app);
  // Whether one of them was given.
  bool parsed() const;
  int Run(const FleetClientOptions& options, std::ostream& out, std::ostream& err);

 private:
  int Schedule(NightlyClient& client, std::ostream& out, std::ostream& err);
  int Regressions(NightlyClient& client, std::ostream& out, std::ostream& err);
  int Series(NightlyClient& client, std::ostream& out, std::ostream& err);
  int Bisect(NightlyClient& client, std::ostream& out, std::ostream& err);

  CLI::App* schedule_;
  CLI::App* schedule_add_;
  CLI::App* schedule_list_;
  CLI::App* schedule_pause_;
  CLI::App* schedule_resume_;
  CLI::App* schedule_rm_;
  CLI::App* regressions_;
  CLI::App* regressions_ack_;
  CLI::App* regressions_fixed_;
  CLI::App* regressions_reopen_;
  CLI::App* series_;
  CLI::App* bisect_;
  CLI::App* bisect_start_;
  CLI::App* bisect_show_;
  CLI::App* bisect_list_;
  CLI::App* bisect_cancel_;

  std::string file_;
  std::string id_;
  std::string format_ = "text";
  std::string status_ = "open";
  std::string benchmark_;
  std::string metric_;
  uint32_t limit_ = 0;
};

}  // namespace tlbfleet::cli
