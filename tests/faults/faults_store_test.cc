// The file system holding the controller's database fills up mid-run (a tiny tmpfs the
// test mounts), then has space again: new work is refused with a clear error, reads go on,
// nothing the agent holds is lost, the run completes once space returns, and the database
// passes PRAGMA integrity_check.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "tests/faults/fault_harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kRun[] = R"(
name: disk-full
benchmark: ebizzy
params: {seconds: 2, threads: 1, chunks: 2, chunk_size: 65536}
iterations: 3
arms:
  - {name: a, params: {mmap: always}}
  - {name: b, params: {mmap: never}}
)";

// Writes zeros to `path` until the file system is full; the bytes written.
int64_t FillUp(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  std::vector<char> block(64 * 1024, 0);
  int64_t total = 0;
  for (;;) {
    const ssize_t n = ::write(fd, block.data(), block.size());
    if (n <= 0) break;
    total += n;
  }
  ::fsync(fd);
  ::close(fd);
  return total;
}

TEST(StoreFaultTest, AFullDiskRefusesNewWorkKeepsReadsLosesNothingAndRecovers) {
  TempDir dir;
  Tmpfs disk(dir.path(), "16m");
  ASSERT_TRUE(disk.ok()) << "cannot mount a tmpfs (root needed)";
  // The database on the tmpfs; the log where it can still be written.
  FaultController controller(
      dir.path(),
      {"--lease-seconds", "30", "--heartbeat-seconds", "2", "--reconnect-grace-seconds", "30"},
      "127.0.0.1:0", disk.path());
  ASSERT_TRUE(controller.Start()) << controller.Log();
  // The agent's state dir is on the real disk: only the controller's file system fills up.
  FaultAgent agent(dir.path(), "a", {});
  agent.Start(controller.address());
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 1; }, 30s));
  std::string run_id;
  ASSERT_TRUE(controller.Submit(kRun, &run_id).ok());
  ASSERT_TRUE(WaitFor([&] { return controller.GetRun(run_id).jobs().succeeded() >= 1; }, 60s))
      << controller.Log();

  const std::string filler = disk.path() + "/filler";
  ASSERT_GT(FillUp(filler), 0);
  // The agent's next samples cannot be stored: its stream is closed, it keeps its spool.
  ASSERT_TRUE(WaitFor(
      [&] { return controller.Log().find("store: writes fail") != std::string::npos; }, 60s))
      << controller.Log();
  // New work is refused with the reason...
  std::string refused_id;
  grpc::Status refused = controller.Submit(kRun, &refused_id);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_NE(refused.error_message().find("disk holding the database is full"), std::string::npos)
      << refused.error_message();
  // ...while reads go on.
  EXPECT_EQ(controller.GetRun(run_id).id(), run_id);
  EXPECT_GE(controller.ConnectedHosts(), 0);
  const uint64_t stored_while_full = controller.GetRun(run_id).samples();

  std::filesystem::remove(filler);  // space again
  v1::Run run = controller.WaitForRunEnd(run_id, 120s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << "\n--- controller\n"
                                                  << controller.Log() << "\n--- agent\n"
                                                  << agent.Log();
  const std::string r = " WHERE run_id = " + run_id;
  EXPECT_EQ(controller.Q("SELECT COUNT(*) FROM samples" + r), 12);  // 6 jobs x 2, none lost
  EXPECT_EQ(run.samples(), 12u);
  EXPECT_GE(run.samples(), stored_while_full);
  EXPECT_EQ(controller.Q("SELECT MAX(attempts) FROM jobs" + r), 1);
  EXPECT_EQ(controller.Q("SELECT COUNT(*) FROM runs"), 1);  // the refused run left nothing
  EXPECT_TRUE(WaitFor([&] { return agent.SpooledLeases() == 0; }, 10s));
  std::string check;
  EXPECT_EQ(RunTool({"/usr/bin/sqlite3", controller.db_path(), "PRAGMA integrity_check"}, &check),
            0);
  EXPECT_EQ(check, "ok\n");
}

}  // namespace
}  // namespace tlbfleet::testing
