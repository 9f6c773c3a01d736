#include "agent/workloads/hackbench.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "agent/workloads/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::workloads::hackbench {
namespace {

using ::testing::HasSubstr;

Options Tiny() {
  Options o;
  o.groups = 2;
  o.fds = 3;
  o.loops = 20;
  return o;
}

TEST(HackbenchRunTest, EveryIpcAndModeRuns) {
  for (bool pipes : {false, true}) {
    for (bool threads : {false, true}) {
      Options o = Tiny();
      o.pipes = pipes;
      o.threads = threads;
      absl::StatusOr<double> seconds = RunOnce(o);
      ASSERT_TRUE(seconds.ok()) << seconds.status() << " pipes=" << pipes << " threads=" << threads;
      EXPECT_GT(*seconds, 0);
      EXPECT_LT(*seconds, 30);
    }
  }
}

TEST(HackbenchRunTest, MessagesLargerThanAPipeBufferArriveWhole) {
  Options o = Tiny();
  o.pipes = true;
  o.threads = true;
  o.datasize = 200'000;
  o.loops = 2;
  absl::StatusOr<double> seconds = RunOnce(o);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
}

// The median of several runs, so that one slow run on a busy machine does not decide.
double MedianTime(Options o) {
  std::vector<double> times;
  for (int i = 0; i < 3; ++i) times.push_back(RunOnce(o).value());
  std::sort(times.begin(), times.end());
  return times[1];
}

TEST(HackbenchRunTest, TimeGrowsWithLoops) {
  for (bool threads : {false, true}) {
    Options o = Tiny();
    o.threads = threads;
    o.loops = 10;
    const double few = MedianTime(o);
    o.loops = 20000;
    const double many = MedianTime(o);
    // 2000 times the messages; the fixed part (waking and reaping the tasks) is large under
    // sanitizers, so only ask for a clear difference.
    EXPECT_GT(many, 2 * few) << "threads=" << threads;
  }
}

const Workload& Hackbench() {
  LinkAllWorkloads();
  const Workload* w = Registry::Get().Find("hackbench");
  EXPECT_NE(w, nullptr);
  return *w;
}

TEST(HackbenchWorkloadTest, ReportsTimeAndClassicLines) {
  const Workload& w = Hackbench();
  Params params =
      ResolveParams(w, {{"groups", "1"}, {"fds", "2"}, {"loops", "5"}, {"ipc", "pipe"}}).value();
  absl::StatusOr<std::vector<Measurement>> result = w.Run(params);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->size(), 1u);
  EXPECT_EQ((*result)[0].metric, "time");
  EXPECT_EQ((*result)[0].better, Better::kLower);
  EXPECT_GT((*result)[0].value, 0);
  std::vector<Measurement> fixed = {{"time", "", 1.23456, "s", Better::kLower}};
  EXPECT_EQ(w.ClassicOutput(params, fixed),
            "Running in process mode with 1 groups using 4 file descriptors each (== 4 tasks)\n"
            "Each sender will pass 5 messages of 100 bytes\n"
            "Time: 1.234\n");
  Params threaded = ResolveParams(w, {{"mode", "threads"}}).value();
  EXPECT_THAT(w.ClassicOutput(threaded, fixed),
              HasSubstr("threaded mode with 10 groups using 40 file descriptors each (== 400"));
}

TEST(HackbenchWorkloadTest, BadInputIsRefusedWithTheParameterNamed) {
  const Workload& w = Hackbench();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"groups", "0"},   {"groups", "4097"}, {"fds", "0"},    {"loops", "-1"},
      {"datasize", "0"}, {"datasize", "-5"}, {"ipc", "fifo"}, {"mode", "fibers"},
  };
  for (const auto& [name, value] : bad) {
    absl::StatusOr<Params> p = ResolveParams(w, {{name, value}});
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << name << "=" << value;
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(name + ":"));
  }
}

TEST(HackbenchWorkloadTest, ProductsNoHostCanRunAreRefusedAtSubmit) {
  const Workload& w = Hackbench();
  absl::StatusOr<Params> p = ResolveParams(w, {{"groups", "4096"}, {"fds", "1024"}});
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr("groups: groups=4096 x fds=1024 x 2 = 8388608 tasks, more than any "
                        "Linux host can have (PID_MAX_LIMIT, 4194304)"));
  p = ResolveParams(w, {{"groups", "1024"}, {"fds", "1024"}, {"mode", "threads"}});
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr("2097152 descriptors in one process (thread mode)"));
  EXPECT_TRUE(ResolveParams(w, {{"groups", "1024"}, {"fds", "1024"}}).ok()) << "process mode";
}

TEST(HackbenchRunTest, HostLimitsAreCheckedBeforeStarting) {
  Options o;
  o.groups = 100;
  o.fds = 20;  // 4000 tasks
  absl::Status s = CheckHostLimits(o, HostLimits{3000, 0});
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("hackbench: groups=100 x fds=20 x 2 = 4000 tasks but this host allows "
                        "3000"));
  o.threads = true;
  s = CheckHostLimits(o, HostLimits{0, 1024});
  EXPECT_THAT(std::string(s.message()), HasSubstr("RLIMIT_NOFILE allows 1024"));
  EXPECT_TRUE(CheckHostLimits(o, HostLimits{100000, 1 << 20}).ok());
  EXPECT_GT(ReadHostLimits().max_tasks, 0) << "this host's pid_max/threads-max";
}

TEST(HackbenchWorkloadTest, TimeoutCoversTheDefaults) {
  const Workload& w = Hackbench();
  EXPECT_GE(w.TimeoutSeconds(ResolveParams(w, {}).value()), 60);
}

}  // namespace
}  // namespace tlbfleet::workloads::hackbench
