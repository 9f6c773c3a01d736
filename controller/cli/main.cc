// tlbfleet: the command-line client of the controller's FleetService. See docs/cli.md.
#include <iostream>

#include "controller/cli/app.h"
#include "controller/cli/clock.h"

int main(int argc, char** argv) {
  return tlbfleet::cli::RunCli(argc, argv, std::cout, std::cerr,
                               tlbfleet::cli::ProcessEnvironment(), tlbfleet::cli::Clock::Real());
}
