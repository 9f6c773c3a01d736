#pragma once
// `--config FILE` for the long-running programs (controller.yaml, agent.yaml): a YAML map
// whose keys are the program's long flags without their dashes, as an alternative to flags.
//
//   grpc-listen: 0.0.0.0:7070
//   tls-cert: /etc/tlbfleet/controller.pem
//   insecure-no-tls: false
//   label: [rack=b2, room=3]      # a repeatable flag takes a list
//
// A flag given on the command line wins over the file. Values go through the same parsing and
// checks as the flags (a value out of range names the flag). A key that is not a flag of the
// program, a nested map, or a key without a value is an error naming the file and the key;
// the programs exit 2 on any of them, before anything starts.

#include <string>

#include "CLI/CLI.hpp"

namespace tlbfleet {

// Adds `--config FILE` to `app` (after every other option has been added, so that the keys
// can be checked against them).
void AddYamlConfig(CLI::App& app, const std::string& help);

}  // namespace tlbfleet
