// tlbfleet: the command-line client of the controller's FleetService. See docs/cli.md.
#include <iostream>

#include "common/clock.h"
#include "controller/cli/app.h"

int main(int argc, char** argv) {
  return tlbfleet::cli::RunCli(argc, argv, std::cout, std::cerr,
                               tlbfleet::cli::ProcessEnvironment(), tlbfleet::Clock::Steady());
}
