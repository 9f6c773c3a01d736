#pragma once
// The `tlbfleet` command line: parses argv with CLI11 and runs one command. main.cc is a thin
// wrapper so the whole CLI, parsing included, runs in tests.

#include <ostream>
#include <string>

#include "common/clock.h"

namespace tlbfleet::cli {

inline constexpr char kDefaultController[] = "127.0.0.1:7070";

// What the CLI takes from its process environment.
struct CliEnvironment {
  std::string controller;      // $TLBFLEET_CONTROLLER; "" when unset
  std::string token;           // $TLBFLEET_TOKEN; "" when unset (--token-file wins)
  std::string tls_ca;          // $TLBFLEET_TLS_CA; "" when unset (--tls-ca wins)
  bool stderr_is_tty = false;  // progress is drawn in place on a terminal
};

// Reads $TLBFLEET_CONTROLLER, $TLBFLEET_TOKEN, $TLBFLEET_TLS_CA and isatty(2).
CliEnvironment ProcessEnvironment();

// Parses argv, runs the command, returns the exit code (exit_codes.h). Usage errors print a
// hint to `err` and return 2; --help and --version print to `out` and return 0.
int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
           const CliEnvironment& env, Clock& clock);

}  // namespace tlbfleet::cli
