// tlbfleet-bench with each native workload's classic flags: the flags reach the right
// parameters, the classic output comes out, and bad values exit 2 naming the parameter.
#include <memory>
#include <string>
#include <vector>

#include "agent/workloads/bench_cli.h"
#include "agent/workloads/netperf_server.h"
#include "agent/workloads/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::workloads {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

struct BenchRun {
  int exit_code = 0;
  std::string out;
  std::string err;
};

BenchRun Bench(std::vector<std::string> args) {
  LinkAllWorkloads();
  args.insert(args.begin(), "tlbfleet-bench");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  BenchRun run;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  run.exit_code = BenchMain(static_cast<int>(args.size()), argv.data());
  run.out = ::testing::internal::GetCapturedStdout();
  run.err = ::testing::internal::GetCapturedStderr();
  return run;
}

TEST(ClassicFlagsTest, EveryNativeWorkloadIsListed) {
  BenchRun run = Bench({"--list"});
  ASSERT_EQ(run.exit_code, 0);
  for (const char* name : {"tlbflush", "hackbench", "pipetest", "pft", "netperf", "usemem"}) {
    EXPECT_THAT(run.out, HasSubstr(std::string(name) + "\n"));
  }
}

TEST(ClassicFlagsTest, TlbflushFlags) {
  BenchRun run = Bench(
      {"tlbflush", "-t", "2", "-n", "64", "-p", "32", "-w", "1", "--set", "region_mb=2", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr(R"("accesses":"32","entries":"64",)"));
  EXPECT_THAT(run.out, HasSubstr(R"("threads":"2","write":"true")"));
}

TEST(ClassicFlagsTest, HackbenchFlagsShortAndLong) {
  BenchRun run = Bench({"hackbench", "-p", "-T", "-g", "2", "-f", "3", "-l", "7", "-s", "64"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, ContainsRegex("^Running in threaded mode with 2 groups using 6 file "
                                     "descriptors each \\(== 12 tasks\\)\n"
                                     "Each sender will pass 7 messages of 64 bytes\n"
                                     "Time: [0-9]+\\.[0-9]{3}\n$"));
  run = Bench({"hackbench", "--pipe", "--processes", "--groups", "1", "--fds", "2", "--loops", "3",
               "--datasize", "10"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("process mode with 1 groups using 4 file descriptors"));
}

TEST(ClassicFlagsTest, PipetestLoopFlag) {
  BenchRun run = Bench({"pipetest", "-l", "1000"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("# Executed 1000 pipe operations between two processes"));
}

TEST(ClassicFlagsTest, NetperfAndUsememFlags) {
  BenchRun run = Bench({"netperf", "-t", "udp_rr", "-m", "8", "-l", "1", "-H", "127.0.0.1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("MIGRATED UDP REQUEST/RESPONSE TEST"));
  run = Bench({"usemem", "-n", "2", "--set", "size_mb=2"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("2097152 bytes / "));
}

TEST(ClassicFlagsTest, BadValuesExitTwoNamingTheParameter) {
  struct Case {
    std::vector<std::string> args;
    std::string named;
  };
  const std::vector<Case> cases = {
      {{"tlbflush", "-t", "0"}, "threads:"},
      {{"tlbflush", "-n", "1048577"}, "entries:"},
      {{"tlbflush", "--set", "flush=ipi"}, "flush:"},
      {{"tlbflush", "--set", "region_mb=-4"}, "region_mb:"},
      {{"hackbench", "-g", "0"}, "groups:"},
      {{"hackbench", "-s", "-1"}, "datasize:"},
      {{"pipetest", "-l", "0"}, "loops:"},
      {{"pft", "--set", "threads=5000"}, "threads:"},
      {{"netperf", "-m", "0"}, "message_size:"},
      {{"usemem", "--set", "size_mb=-1"}, "size_mb:"},
  };
  for (const Case& c : cases) {
    BenchRun run = Bench(c.args);
    EXPECT_EQ(run.exit_code, 2) << c.args[0] << " " << c.args[1];
    EXPECT_THAT(run.err, HasSubstr(c.named)) << c.args[0] << " " << c.args[1];
  }
}

TEST(ClassicFlagsTest, NetperfServerAndPortFlags) {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string named;
  };
  const std::vector<Case> cases = {
      {{"netperf", "-H", "foo", "-l", "1"}, 2, "server:"},
      {{"netperf", "-H", "10.1.2.3", "-l", "1"}, 2, "server:"},  // remote, but no -p
      {{"netperf", "-p", "70000", "-l", "1"}, 2, "port:"},
      {{"netperf", "-H", "peer", "-p", "5", "-l", "1"}, 2, "port:"},
      {{"netperf", "-H", "peer", "-l", "1"}, 1, "server:"},  // only a controller resolves it
  };
  for (const Case& c : cases) {
    BenchRun run = Bench(c.args);
    EXPECT_EQ(run.exit_code, c.exit_code) << c.args[2];
    EXPECT_THAT(run.err, HasSubstr(c.named)) << c.args[2];
  }
  // -H with -p dials a netserver that is already running (here one in this process).
  absl::StatusOr<std::unique_ptr<netperf::Server>> server = netperf::Server::Start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string port = std::to_string((*server)->port());
  BenchRun run = Bench(
      {"netperf", "-t", "tcp_rr", "-m", "1", "-l", "1", "-H", "127.0.0.1", "-p", port, "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr(R"("port":")" + port + R"(")"));
  EXPECT_THAT(run.out, HasSubstr(R"("metric":"trans_per_sec")"));
}

TEST(ClassicFlagsTest, UdpMessageTooLargeFailsTheRunNotTheHost) {
  BenchRun run = Bench({"netperf", "-t", "udp_stream", "-m", "65508", "-l", "1"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr("message_size:"));
}

}  // namespace
}  // namespace tlbfleet::workloads
