#pragma once
// The CLI's exit codes and the one place that turns a failure into (message, exit code).
// Scripts depend on these numbers; docs/cli.md lists them. Never renumber.

#include <string>

#include "grpcpp/support/status.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::cli {

enum ExitCode : int {
  kExitOk = 0,           // the command did what was asked; `wait`: the run succeeded
  kExitFailed = 1,       // the run failed or was cancelled, an id is unknown, other errors
  kExitUsage = 2,        // bad command line, unreadable file, spec rejected by the controller
  kExitTimeout = 3,      // `wait --timeout` expired before the run finished
  kExitUnreachable = 4,  // no connection to the controller, or it did not answer in time
};

// `wait`'s verdict for a run state: 0 for SUCCEEDED, 1 for FAILED/CANCELLED. Non-terminal
// states (and UNSPECIFIED) also map to 1; callers check IsTerminal() first.
int ExitCodeForRunState(tlbfleet::v1::RunState state);

// True for SUCCEEDED, FAILED and CANCELLED: the run will not change any more.
bool IsTerminal(tlbfleet::v1::RunState state);

// Exit code for a failed RPC: UNAVAILABLE and DEADLINE_EXCEEDED -> 4, INVALID_ARGUMENT -> 2,
// everything else (NOT_FOUND, FAILED_PRECONDITION, ...) -> 1. OK -> 0.
int ExitCodeForStatus(grpc::StatusCode code);

// What a failed RPC means for the user, as one line without the "tlbfleet: " prefix.
// `address` is the controller address; `run_id`, when non-empty, is the run the command was
// about, so NOT_FOUND reads "run 99 not found". INVALID_ARGUMENT passes the controller's
// message through unchanged (it names the offending field).
std::string RpcErrorMessage(const grpc::Status& status, const std::string& address,
                            const std::string& run_id);

}  // namespace tlbfleet::cli
