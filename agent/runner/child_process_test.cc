#include "agent/runner/child_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "agent/kernel/fake_sysroot_for_test.h"
#include "agent/runner/test_util_for_test.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

using namespace std::chrono_literals;

ChildSpec Shell(const std::string& script) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  return spec;
}

TEST(ChildProcessTest, CollectsStdoutLines) {
  absl::StatusOr<ChildResult> r =
      RunChild(Shell("echo '{\"metric\":\"a\",\"value\":1}'; printf 'two\\nthree'"), nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->succeeded());
  ASSERT_EQ(r->stdout_lines.size(), 3u);
  EXPECT_EQ(r->stdout_lines[0], "{\"metric\":\"a\",\"value\":1}");
  EXPECT_EQ(r->stdout_lines[1], "two");
  EXPECT_EQ(r->stdout_lines[2], "three");  // no trailing newline
  EXPECT_FALSE(r->stdout_truncated);
}

TEST(ChildProcessTest, NonzeroExitKeepsStderrTail) {
  absl::StatusOr<ChildResult> r =
      RunChild(Shell("echo 'threads: out of range' >&2; exit 2"), nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->succeeded());
  EXPECT_EQ(r->outcome, ChildResult::Outcome::kExited);
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_EQ(r->stderr_tail, "threads: out of range\n");
  EXPECT_EQ(r->Describe(), "exited with status 2");
}

TEST(ChildProcessTest, StderrTailKeepsOnlyTheEnd) {
  ChildSpec spec = Shell("i=0; while [ $i -lt 2000 ]; do echo line$i >&2; i=$((i+1)); done");
  spec.stderr_tail_bytes = 100;
  absl::StatusOr<ChildResult> r = RunChild(spec, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stderr_tail.size(), 100u);
  EXPECT_NE(r->stderr_tail.find("line1999\n"), std::string::npos);
}

TEST(ChildProcessTest, CrashingChildIsReportedAndTheAgentSurvives) {
  absl::StatusOr<ChildResult> r =
      RunChild(Shell("echo about to crash >&2; kill -SEGV $$"), nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome, ChildResult::Outcome::kSignaled);
  EXPECT_EQ(r->signal, SIGSEGV);
  EXPECT_NE(r->Describe().find("signal 11"), std::string::npos) << r->Describe();
  EXPECT_EQ(r->stderr_tail, "about to crash\n");
}

TEST(ChildProcessTest, TimeoutKillsTheWholeProcessGroup) {
  ChildSpec spec = Shell("sleep 1000 & echo $!; wait");
  spec.timeout = 300ms;
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<ChildResult> r = RunChild(spec, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_EQ(r->outcome, ChildResult::Outcome::kTimedOut);
  ASSERT_EQ(r->stdout_lines.size(), 1u);
  pid_t grandchild = std::stoi(r->stdout_lines[0]);
  EXPECT_TRUE(ProcessGoneWithin(grandchild, 5s)) << "grandchild " << grandchild << " survived";
}

TEST(ChildProcessTest, StragglersAreKilledWhenTheChildExits) {
  // The child exits at once, leaving a background process holding its stdout.
  absl::StatusOr<ChildResult> r = RunChild(Shell("sleep 1000 & echo $!; exit 0"), nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->succeeded());
  ASSERT_EQ(r->stdout_lines.size(), 1u);
  EXPECT_TRUE(ProcessGoneWithin(std::stoi(r->stdout_lines[0]), 5s));
}

// Waits for a file the test's child writes (atomically, via mv) and returns its number.
pid_t AwaitPidFile(const std::string& path) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  pid_t pid = 0;
  while (pid == 0 && std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path);
    if (!(in >> pid)) std::this_thread::sleep_for(10ms);  // polling a file, no event
  }
  return pid;
}

std::string WritePid(const std::string& what, const std::string& path) {
  return "echo " + what + " > " + path + ".tmp; mv " + path + ".tmp " + path + "; ";
}

TEST(ChildProcessTest, CancelKillsTheGroup) {
  TempDir dir;
  std::string pid_file = dir.path() + "/grandchild";
  CancelToken cancel;
  pid_t grandchild = 0;
  std::thread canceller([&] {
    grandchild = AwaitPidFile(pid_file);
    cancel.Cancel("test");
  });
  absl::StatusOr<ChildResult> r =
      RunChild(Shell("sleep 1000 & " + WritePid("$!", pid_file) + "wait"), &cancel);
  canceller.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome, ChildResult::Outcome::kCancelled);
  EXPECT_EQ(cancel.reason(), "test");
  ASSERT_NE(grandchild, 0);
  EXPECT_TRUE(ProcessGoneWithin(grandchild, 5s)) << "grandchild " << grandchild << " survived";
}

// perf counters attach in on_forked with enable_on_exec: the child must not exec before the
// hook returns.
TEST(ChildProcessTest, OnForkedRunsBeforeTheChildExecs) {
  TempDir dir;
  const std::string marker = dir.path() + "/hooked";
  ChildSpec spec = Shell("test -f " + marker + " && echo after-hook");
  pid_t seen = 0;
  spec.on_forked = [&](pid_t pid) {
    seen = pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // give a racing exec a chance
    std::ofstream(marker) << "x";
  };
  absl::StatusOr<ChildResult> r = RunChild(spec, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(seen, 0);
  EXPECT_TRUE(r->succeeded()) << r->Describe() << ": " << r->stderr_tail;
  EXPECT_EQ(r->stdout_lines, std::vector<std::string>{"after-hook"});
}

TEST(ChildProcessTest, MissingProgramIsAStartError) {
  ChildSpec spec;
  spec.argv = {"/nonexistent/tlbfleet-agent"};
  absl::StatusOr<ChildResult> r = RunChild(spec, nullptr);
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
}

TEST(ChildProcessTest, ChildDoesNotInheritBlockedSignals) {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  absl::StatusOr<ChildResult> r = RunChild(Shell("kill -TERM $$; sleep 5; exit 3"), nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome, ChildResult::Outcome::kSignaled);
  EXPECT_EQ(r->signal, SIGTERM);
}

TEST(ChildProcessTest, LongLinesAreCut) {
  ChildSpec spec = Shell("head -c 5000 /dev/zero | tr '\\0' x; echo; echo ok");
  spec.max_line_bytes = 1000;
  absl::StatusOr<ChildResult> r = RunChild(spec, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->stdout_truncated);
  ASSERT_EQ(r->stdout_lines.size(), 2u);
  EXPECT_EQ(r->stdout_lines[0].size(), 1000u);
  EXPECT_EQ(r->stdout_lines[1], "ok");
}

// kill -9 of the process that started the workload must take the workload with it.
TEST(ChildProcessTest, WorkloadDiesWithTheAgent) {
  TempDir dir;
  std::string pid_file = dir.path() + "/pid";
  pid_t fake_agent = ::fork();
  ASSERT_GE(fake_agent, 0);
  if (fake_agent == 0) {
    (void)RunChild(Shell(WritePid("$$", pid_file) + "exec sleep 1000"), nullptr);
    ::_exit(0);
  }
  pid_t workload = AwaitPidFile(pid_file);
  ASSERT_NE(workload, 0) << "the workload never started";
  ::kill(fake_agent, SIGKILL);
  int status;
  ::waitpid(fake_agent, &status, 0);
  EXPECT_TRUE(ProcessGoneWithin(workload, 5s)) << "workload " << workload << " outlived its agent";
}

}  // namespace
}  // namespace tlbfleet::agent
