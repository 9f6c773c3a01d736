// A nightly schedule's run finishes while the file system holding the database (a tiny tmpfs
// the test mounts; the nightly tables share the SQLite file with the core's) is full, then has
// space again: the nightly unit's write of the run's series points fails visibly (an error in
// the log naming the run, tlbfleet_nightly_store_errors_total{op="write"} counting it), the run
// stays queued, and once there is space its points are recorded exactly once; the next night
// goes on as usual and the database passes PRAGMA integrity_check.
//
// The window between the core storing the run's end and the nightly unit appending its points
// is milliseconds wide. Rather than race for it, the test stops the nightly unit's worker
// thread (named "tlbf-nightly") with ptrace before the run ends and lets it go once the disk
// is full, as if the disk had filled up within that window.

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "tests/faults/fault_harness.h"
#include "tests/integration/http_client.h"
#include "tlbfleet/v1/nightly.grpc.pb.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

// 2026-01-01T00:00:00Z.
constexpr int64_t kDay0 = 1767225600;

constexpr char kSchedule[] = R"(
name: disk-full-nightly
cron: "0 2 * * *"
run:
  benchmark: ebizzy
  params: {seconds: 2, threads: 1, chunks: 2, chunk_size: 65536}
  iterations: 2
  arms: [{name: a}]
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

// SQLite reuses the space of its write-ahead log, so a full file system alone may still take
// a small write. Commits rows into a table of the test's own until one fails for want of
// space: then no write that needs more than a page can succeed. SQLITE_FULL, or another code
// when something else went wrong.
int UseUpTheLogsSpace(const std::string& db_path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(db_path.c_str(), &db) != SQLITE_OK) return SQLITE_CANTOPEN;
  sqlite3_busy_timeout(db, 5000);
  // A checkpoint would let the log start over (and so make room again).
  int rc = sqlite3_exec(db, "PRAGMA wal_autocheckpoint = 0", nullptr, nullptr, nullptr);
  for (int i = 0; rc == SQLITE_OK && i < 100000; ++i) {
    rc = sqlite3_exec(db, "INSERT INTO fault_test_filler VALUES (zeroblob(1024))", nullptr, nullptr,
                      nullptr);
  }
  sqlite3_close(db);
  return rc;
}

// Stops one thread of another process (ptrace) until Thaw() or destruction.
class ThreadFreezer {
 public:
  ThreadFreezer(pid_t pid, const std::string& name) {
    for (const auto& task : std::filesystem::directory_iterator(std::filesystem::path("/proc") /
                                                                std::to_string(pid) / "task")) {
      std::string comm = ReadWholeFile((task.path() / "comm").string());
      while (!comm.empty() && comm.back() == '\n') comm.pop_back();
      if (comm == name) tid_ = std::stoi(task.path().filename().string());
    }
    if (tid_ <= 0) return;
    int status = 0;
    frozen_ = ::ptrace(PTRACE_SEIZE, tid_, nullptr, nullptr) == 0 &&
              ::ptrace(PTRACE_INTERRUPT, tid_, nullptr, nullptr) == 0 &&
              ::waitpid(tid_, &status, __WALL) == tid_ && WIFSTOPPED(status);
  }
  ~ThreadFreezer() { Thaw(); }
  bool frozen() const { return frozen_; }
  void Thaw() {
    if (tid_ > 0) ::ptrace(PTRACE_DETACH, tid_, nullptr, nullptr);
    tid_ = -1;
    frozen_ = false;
  }

 private:
  pid_t tid_ = -1;
  bool frozen_ = false;
};

class NightlyClient {
 public:
  explicit NightlyClient(const std::string& address)
      : stub_(v1::NightlyService::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}
  grpc::Status AddSchedule(const std::string& yaml, v1::Schedule* schedule) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::AddScheduleRequest request;
    request.set_spec_yaml(yaml);
    request.set_source_name("nightly.yaml");
    return stub_->AddSchedule(&ctx, request, schedule);
  }
  v1::Schedule Schedule() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::ListSchedulesResponse list;
    if (!stub_->ListSchedules(&ctx, v1::ListSchedulesRequest(), &list).ok() ||
        list.schedules_size() != 1) {
      return v1::Schedule();
    }
    return list.schedules(0);
  }
  std::vector<v1::Series> Series() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::ListSeriesRequest request;
    request.set_with_points(true);
    v1::ListSeriesResponse list;
    if (!stub_->ListSeries(&ctx, request, &list).ok()) return {};
    return std::vector<v1::Series>(list.series().begin(), list.series().end());
  }

 private:
  std::unique_ptr<v1::NightlyService::Stub> stub_;
};

void SetClock(const std::string& path, int64_t unix_seconds) {
  const std::string tmp = path + ".new";
  std::ofstream(tmp, std::ios::trunc) << unix_seconds << "\n";
  std::filesystem::rename(tmp, path);
}

// The value of the sample `name{labels}` in a Prometheus text exposition; -1 when absent.
double Sample(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + series.size() + 2, nullptr);
}

TEST(NightlyFaultTest, ARunFinishingWhileTheDiskIsFullGetsItsSeriesPointsOnceSpaceReturns) {
  TempDir dir;
  Tmpfs disk(dir.path(), "16m");
  ASSERT_TRUE(disk.ok()) << "cannot mount a tmpfs (root needed)";
  const std::string clock = dir.path() + "/clock";
  SetClock(clock, kDay0 + 3600);  // 01:00, an hour before the schedule's slot
  FaultController controller(dir.path(),
                             {"--nightly-clock-file", clock, "--lease-seconds", "30",
                              "--heartbeat-seconds", "2", "--reconnect-grace-seconds", "30"},
                             "127.0.0.1:0", disk.path());
  ASSERT_TRUE(controller.Start()) << controller.Log();
  const std::string ready = ReadWholeFile(dir.path() + "/controller.ready");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(ready, m, std::regex("\"http_port\":(\\d+),\"pid\":(\\d+)")))
      << ready;
  const int http_port = std::stoi(m[1]);
  const pid_t controller_pid = std::stoi(m[2]);
  FaultAgent agent(dir.path(), "a", {});
  agent.Start(controller.address());
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() == 1; }, 30s)) << controller.Log();
  NightlyClient nightly(controller.address());
  v1::Schedule schedule;
  grpc::Status added = nightly.AddSchedule(kSchedule, &schedule);
  ASSERT_TRUE(added.ok()) << added.error_message();
  {
    // The test's table for using up the log's space (made while there is space).
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(controller.db_path().c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    ASSERT_EQ(
        sqlite3_exec(db, "CREATE TABLE fault_test_filler (b BLOB)", nullptr, nullptr, nullptr),
        SQLITE_OK);
    sqlite3_close(db);
  }

  // Night 1: the slot fires; the nightly worker is stopped before its run ends.
  SetClock(clock, kDay0 + 2 * 3600 + 30);
  ASSERT_TRUE(WaitFor([&] { return nightly.Schedule().runs() == 1; }, 30s)) << controller.Log();
  const std::string run_id = nightly.Schedule().last_run_id();
  ThreadFreezer worker(controller_pid, "tlbf-nightly");
  ASSERT_TRUE(worker.frozen()) << "cannot stop the nightly worker (ptrace)";
  v1::Run run = controller.WaitForRunEnd(run_id, 120s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << "\n" << controller.Log();
  const std::string seen = "SELECT COUNT(*) FROM nightly_runs_seen WHERE run_id = '" + run_id + "'";
  const std::string points = "SELECT COUNT(*) FROM series_points WHERE run_id = '" + run_id + "'";
  ASSERT_EQ(controller.Q(seen), 0) << "the run was handled before the worker stopped";

  // The disk fills up; then the worker takes the run's end.
  const std::string filler = disk.path() + "/filler";
  ASSERT_GT(FillUp(filler), 0);
  ASSERT_EQ(UseUpTheLogsSpace(controller.db_path()), SQLITE_FULL);
  worker.Thaw();
  const std::string failed =
      "nightly: store write failed: appending the points of run " + run_id + ": ";
  ASSERT_TRUE(WaitFor([&] { return controller.Log().find(failed) != std::string::npos; }, 30s))
      << controller.Log();
  HttpResult metrics = HttpCall(http_port, "GET", "/metrics");
  ASSERT_EQ(metrics.status, 200) << metrics.body;
  EXPECT_GE(Sample(metrics.body, "tlbfleet_nightly_store_errors_total{op=\"write\"}"), 1)
      << metrics.body;
  // It is tried again, and nothing is recorded while the disk is full.
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string log = controller.Log();
        return log.find(failed, log.find(failed) + 1) != std::string::npos;
      },
      30s))
      << controller.Log();
  EXPECT_EQ(controller.Q(seen), 0);
  EXPECT_EQ(controller.Q(points), 0);

  std::filesystem::remove(filler);  // space again
  ASSERT_TRUE(WaitFor([&] { return controller.Q(seen) == 1; }, 120s)) << controller.Log();
  const std::vector<v1::Series> series = nightly.Series();
  ASSERT_FALSE(series.empty());
  for (const v1::Series& s : series) {
    ASSERT_EQ(s.points_size(), 1) << s.ShortDebugString();
    EXPECT_EQ(s.points(0).run_id(), run_id);
    EXPECT_EQ(s.points(0).schedule_id(), schedule.id());
  }
  EXPECT_EQ(controller.Q(points), static_cast<int64_t>(series.size()));
  EXPECT_EQ(nightly.Schedule().runs(), 1u);
  EXPECT_EQ(controller.Q("SELECT COUNT(*) FROM runs"), 1) << "submitted twice";

  // Night 2 as usual: one more point on each series.
  SetClock(clock, kDay0 + 86400 + 2 * 3600 + 30);
  ASSERT_TRUE(WaitFor([&] { return nightly.Schedule().runs() == 2; }, 30s)) << controller.Log();
  const std::string second = nightly.Schedule().last_run_id();
  ASSERT_EQ(controller.WaitForRunEnd(second, 120s).state(), v1::RUN_STATE_SUCCEEDED);
  ASSERT_TRUE(WaitFor(
      [&] {
        return controller.Q("SELECT COUNT(*) FROM nightly_runs_seen WHERE run_id = '" + second +
                            "'") == 1;
      },
      60s))
      << controller.Log();
  for (const v1::Series& s : nightly.Series()) EXPECT_EQ(s.points_size(), 2) << s.key().metric();
  EXPECT_EQ(controller.Q(points), static_cast<int64_t>(series.size()));

  std::string check;
  EXPECT_EQ(RunTool({"/usr/bin/sqlite3", controller.db_path(), "PRAGMA integrity_check"}, &check),
            0);
  EXPECT_EQ(check, "ok\n");
}

}  // namespace
}  // namespace tlbfleet::testing
