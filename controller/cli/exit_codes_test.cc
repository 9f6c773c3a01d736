#include "controller/cli/exit_codes.h"

#include "gtest/gtest.h"

namespace tlbfleet::cli {
namespace {

TEST(ExitCodeForRunStateTest, OnlySucceededIsZero) {
  EXPECT_EQ(ExitCodeForRunState(tlbfleet::v1::RUN_STATE_SUCCEEDED), 0);
  EXPECT_EQ(ExitCodeForRunState(tlbfleet::v1::RUN_STATE_FAILED), 1);
  EXPECT_EQ(ExitCodeForRunState(tlbfleet::v1::RUN_STATE_CANCELLED), 1);
}

TEST(IsTerminalTest, QueuedAndRunningAreNot) {
  EXPECT_FALSE(IsTerminal(tlbfleet::v1::RUN_STATE_UNSPECIFIED));
  EXPECT_FALSE(IsTerminal(tlbfleet::v1::RUN_STATE_QUEUED));
  EXPECT_FALSE(IsTerminal(tlbfleet::v1::RUN_STATE_RUNNING));
  EXPECT_TRUE(IsTerminal(tlbfleet::v1::RUN_STATE_SUCCEEDED));
  EXPECT_TRUE(IsTerminal(tlbfleet::v1::RUN_STATE_FAILED));
  EXPECT_TRUE(IsTerminal(tlbfleet::v1::RUN_STATE_CANCELLED));
}

TEST(ExitCodeForStatusTest, Mapping) {
  EXPECT_EQ(ExitCodeForStatus(grpc::StatusCode::OK), kExitOk);
  EXPECT_EQ(ExitCodeForStatus(grpc::StatusCode::UNAVAILABLE), kExitUnreachable);
  EXPECT_EQ(ExitCodeForStatus(grpc::StatusCode::DEADLINE_EXCEEDED), kExitUnreachable);
  EXPECT_EQ(ExitCodeForStatus(grpc::StatusCode::INVALID_ARGUMENT), kExitUsage);
  EXPECT_EQ(ExitCodeForStatus(grpc::StatusCode::NOT_FOUND), kExitFailed);
  EXPECT_EQ(ExitCodeForStatus(grpc::StatusCode::FAILED_PRECONDITION), kExitFailed);
  EXPECT_EQ(ExitCodeForStatus(grpc::StatusCode::INTERNAL), kExitFailed);
}

TEST(RpcErrorMessageTest, Unreachable) {
  grpc::Status status(grpc::StatusCode::UNAVAILABLE, "Connection refused");
  EXPECT_EQ(RpcErrorMessage(status, "127.0.0.1:7070", "7"),
            "cannot reach controller at 127.0.0.1:7070: Connection refused");
}

TEST(RpcErrorMessageTest, NotFoundNamesTheRun) {
  grpc::Status status(grpc::StatusCode::NOT_FOUND, "no such run");
  EXPECT_EQ(RpcErrorMessage(status, "a", "99"), "run 99 not found");
  EXPECT_EQ(RpcErrorMessage(status, "a", ""), "no such run");
}

TEST(RpcErrorMessageTest, InvalidArgumentPassesControllerMessage) {
  grpc::Status status(grpc::StatusCode::INVALID_ARGUMENT, "spec.yaml: arms[1].ceiling: bad");
  EXPECT_EQ(RpcErrorMessage(status, "a", ""), "spec.yaml: arms[1].ceiling: bad");
}

TEST(RpcErrorMessageTest, OtherCodesNameTheCode) {
  grpc::Status status(grpc::StatusCode::FAILED_PRECONDITION, "run 7 already finished");
  EXPECT_EQ(RpcErrorMessage(status, "a", "7"),
            "controller error FAILED_PRECONDITION: run 7 already finished");
}

}  // namespace
}  // namespace tlbfleet::cli
