#include "agent/builder/command.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>

#include "common/scoped_fd.h"
#include "common/temp_dir_for_test.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent::builder {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Command Shell(const std::string& script) {
  Command command;
  command.argv = {"sh", "-c", script};  // found on PATH
  return command;
}

std::vector<std::string> Lines(const Command& command, CommandResult* result = nullptr) {
  std::vector<std::string> lines;
  absl::StatusOr<CommandResult> r =
      RunCommand(command, [&](std::string_view line) { lines.emplace_back(line); });
  EXPECT_TRUE(r.ok()) << r.status();
  if (r.ok() && result != nullptr) *result = *r;
  return lines;
}

TEST(CommandTest, StreamsLinesAndKeepsStderrApart) {
  CommandResult result;
  EXPECT_THAT(Lines(Shell("echo one; echo oops >&2; printf 'two\\n\\nthree'; exit 3"), &result),
              ElementsAre("one", "two", "", "three"));
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.stderr_tail, "oops\n");
  EXPECT_EQ(result.Describe(), "exited with status 3");
}

TEST(CommandTest, MergedStderrKeepsTheOrderOfALog) {
  Command command = Shell("echo one; echo two >&2; echo three");
  command.merge_stderr = true;
  CommandResult result;
  EXPECT_THAT(Lines(command, &result), ElementsAre("one", "two", "three"));
  EXPECT_TRUE(result.ok());
  EXPECT_EQ(result.stderr_tail, "");
}

TEST(CommandTest, WorkingDirectoryAndEnvironment) {
  TempDir dir;
  Command command = Shell("pwd; echo \"$TLBFLEET_X $LC_ALL\"");
  command.cwd = dir.path();
  command.env = {"TLBFLEET_X=set", "LC_ALL=C"};
  EXPECT_THAT(Lines(command), ElementsAre(dir.path(), "set C"));

  command.cwd = dir.File("missing");
  absl::StatusOr<CommandResult> r = RunCommand(command, nullptr);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("chdir " + dir.File("missing")));
}

TEST(CommandTest, MissingProgramIsNotFound) {
  Command command;
  command.argv = {"tlbfleet-no-such-program"};
  EXPECT_EQ(RunCommand(command, nullptr).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(FindProgram("tlbfleet-no-such-program").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(FindProgram("sh").value(), testing::EndsWith("/sh"));
  EXPECT_EQ(FindProgram("./x").value(), "./x");
}

TEST(CommandTest, CancelKillsTheWholeGroup) {
  ScopedFd cancel(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  ASSERT_TRUE(cancel);
  // The grandchild holds stdout open: the command ends only when the whole group is killed.
  Command command = Shell("sleep 30 & echo started; wait");
  command.cancel_fd = cancel.get();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<CommandResult> result = RunCommand(command, [&](std::string_view line) {
    if (line == "started") {
      uint64_t one = 1;
      ASSERT_EQ(::write(cancel.get(), &one, sizeof one), 8);
    }
  });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->cancelled);
  EXPECT_EQ(result->Describe(), "cancelled");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

  // Once cancelled, the next command does not start at all.
  command = Shell("echo never");
  command.cancel_fd = cancel.get();
  CommandResult again;
  EXPECT_THAT(Lines(command, &again), ElementsAre());
  EXPECT_TRUE(again.cancelled);
}

TEST(CommandTest, TimeoutKillsTheGroup) {
  Command command = Shell("sleep 30 & wait");
  command.timeout = std::chrono::milliseconds(100);
  CommandResult result;
  Lines(command, &result);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.Describe(), "timed out");
}

TEST(CommandTest, CommandOutputFailsWithTheCommandAndItsLastWords) {
  absl::StatusOr<std::vector<std::string>> ok = CommandOutput(Shell("echo a; echo b"));
  EXPECT_THAT(ok.value(), ElementsAre("a", "b"));
  absl::StatusOr<std::vector<std::string>> bad = CommandOutput(Shell("echo no way >&2; exit 4"));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(bad.status().message(),
            "sh -c 'echo no way >&2; exit 4': exited with status 4: no way");
}

}  // namespace
}  // namespace tlbfleet::agent::builder
