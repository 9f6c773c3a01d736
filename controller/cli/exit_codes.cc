#include "controller/cli/exit_codes.h"

#include "fmt/format.h"

namespace tlbfleet::cli {

using tlbfleet::v1::RunState;

bool IsTerminal(RunState state) {
  return state == tlbfleet::v1::RUN_STATE_SUCCEEDED || state == tlbfleet::v1::RUN_STATE_FAILED ||
         state == tlbfleet::v1::RUN_STATE_CANCELLED;
}

int ExitCodeForRunState(RunState state) {
  return state == tlbfleet::v1::RUN_STATE_SUCCEEDED ? kExitOk : kExitFailed;
}

int ExitCodeForStatus(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return kExitOk;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return kExitUnreachable;
    case grpc::StatusCode::INVALID_ARGUMENT:
      return kExitUsage;
    default:
      return kExitFailed;
  }
}

namespace {

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

}  // namespace

std::string RpcErrorMessage(const grpc::Status& status, const std::string& address,
                            const std::string& run_id) {
  const std::string& message = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return fmt::format("cannot reach controller at {}: {}", address,
                         message.empty() ? "unavailable" : message);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return fmt::format("cannot reach controller at {}: no answer before the deadline ({})",
                         address, message.empty() ? "Deadline Exceeded" : message);
    case grpc::StatusCode::NOT_FOUND:
      if (!run_id.empty()) return fmt::format("run {} not found", run_id);
      return message.empty() ? "not found" : message;
    case grpc::StatusCode::INVALID_ARGUMENT:
      return message.empty() ? "invalid argument" : message;
    default:
      if (message.empty()) return fmt::format("controller error {}", CodeName(status.error_code()));
      return fmt::format("controller error {}: {}", CodeName(status.error_code()), message);
  }
}

}  // namespace tlbfleet::cli
