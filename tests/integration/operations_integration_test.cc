// Operating a controller: `tlbfleet-controller backup` copies the database of a running
// controller, and a controller started on the copy (the restore) has its runs; both daemons
// start from a YAML config file, and refuse one with an unknown key (exit 2, nothing made).

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kSpec[] = R"(name: backed-up
benchmark: ebizzy
params: {seconds: 1}
iterations: 1
arms: [{name: only}]
)";

TEST(OperationsTest, OnlineBackupOfARunningControllerRestores) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/live");
  std::filesystem::create_directories(dir.path() + "/restored");
  ControllerProcess live(dir.path() + "/live");
  ASSERT_GT(live.grpc_port(), 0) << live.process().Log();
  // No agent: the run stays queued in the live controller's database.
  std::string run_id;
  grpc::Status submitted = live.Submit(kSpec, &run_id);
  ASSERT_TRUE(submitted.ok()) << submitted.error_message();

  const std::string copy = dir.path() + "/restored/fleet.db";
  std::string output;
  ASSERT_EQ(
      RunCommand({BinPath("tlbfleet-controller"), "backup", "--db", live.db_path(), "--out", copy},
                 &output, /*merge_stderr=*/true),
      0)
      << output;
  EXPECT_NE(output.find("backed up " + live.db_path() + " to " + copy), std::string::npos)
      << output;
  EXPECT_TRUE(live.process().Running());

  // A second backup to the same file is refused, and the first copy is untouched.
  const auto size = std::filesystem::file_size(copy);
  EXPECT_EQ(
      RunCommand({BinPath("tlbfleet-controller"), "backup", "--db", live.db_path(), "--out", copy},
                 &output, true),
      2);
  EXPECT_NE(output.find("--out " + copy + ": exists"), std::string::npos) << output;
  EXPECT_EQ(std::filesystem::file_size(copy), size);
  EXPECT_EQ(RunCommand({BinPath("tlbfleet-controller"), "backup", "--db",
                        dir.path() + "/missing.db", "--out", dir.path() + "/x.db"},
                       &output, true),
            2);
  EXPECT_NE(output.find("missing.db: no such database file"), std::string::npos) << output;

  // Restore: a controller on the copy (ControllerProcess uses <dir>/fleet.db).
  ControllerProcess restored(dir.path() + "/restored");
  ASSERT_GT(restored.grpc_port(), 0) << restored.process().Log();
  v1::Run run = restored.GetRun(run_id);
  EXPECT_EQ(run.spec().name(), "backed-up") << restored.process().Log();
  EXPECT_EQ(run.state(), v1::RUN_STATE_QUEUED);
}

TEST(OperationsTest, DaemonsStartFromConfigFilesAndRefuseUnknownKeys) {
  TempDir dir;
  const std::string db = dir.path() + "/fleet.db";
  const std::string ready = dir.path() + "/ready";
  std::ofstream(dir.path() + "/controller.yaml")
      << "grpc-listen: 127.0.0.1:0\nhttp-listen: 127.0.0.1:0\ndb: " << db
      << "\nready-file: " << ready << "\nlease-seconds: 20\n";
  Process controller({BinPath("tlbfleet-controller"), "--config", dir.path() + "/controller.yaml"},
                     dir.path() + "/controller.log");
  std::string text;
  ASSERT_TRUE(WaitFor(
      [&] {
        std::ifstream in(ready);
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        return text.find('}') != std::string::npos;
      },
      30s))
      << controller.Log();
  EXPECT_TRUE(std::filesystem::exists(db));
  const std::string grpc_port = text.substr(text.find("\"grpc_port\":") + 12);
  const std::string address = "127.0.0.1:" + grpc_port.substr(0, grpc_port.find(','));

  // The agent's file holds a list for the repeatable --label.
  std::ofstream(dir.path() + "/agent.yaml")
      << "controller: " << address << "\nstate-dir: " << dir.path()
      << "/agent\nlabel: [rack=b2, room=3]\n";
  Process agent({BinPath("tlbfleet-agent"), "--config", dir.path() + "/agent.yaml"},
                dir.path() + "/agent.log");
  EXPECT_TRUE(
      WaitFor([&] { return agent.Log().find("welcomed by controller") != std::string::npos; }, 30s))
      << agent.Log() << controller.Log();
  EXPECT_EQ(QueryInt(db, "SELECT COUNT(*) FROM hosts"), 1);

  // An unknown key: exit 2 naming the file and the key, and no database made.
  std::ofstream(dir.path() + "/bad.yaml")
      << "db: " << dir.path() << "/other.db\nlease_seconds: 5\n";
  std::string output;
  EXPECT_EQ(RunCommand({BinPath("tlbfleet-controller"), "--config", dir.path() + "/bad.yaml"},
                       &output, true),
            2);
  EXPECT_NE(output.find(dir.path() + "/bad.yaml: unknown key 'lease_seconds'"), std::string::npos)
      << output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/other.db"));
  std::ofstream(dir.path() + "/bad-agent.yaml")
      << "controller: " << address << "\nstate-dir: " << dir.path() << "/agent2\nsysfs: /\n";
  EXPECT_EQ(RunCommand({BinPath("tlbfleet-agent"), "--config", dir.path() + "/bad-agent.yaml"},
                       &output, true),
            2);
  EXPECT_NE(output.find("unknown key 'sysfs'"), std::string::npos) << output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/agent2"));
}

// systemd's notification socket, played by a Unix datagram socket.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path_.copy(addr.sun_path, sizeof addr.sun_path - 1);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  }
  ~NotifySocket() { ::close(fd_); }
  // Reads datagrams until one starts with `prefix` (returned) or `timeout` passes ("").
  std::string WaitFor(const std::string& prefix, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return "";
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[512];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      std::string message = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
      if (message.rfind(prefix, 0) == 0) return message;
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

TEST(OperationsTest, DaemonsTellSystemdReadyWatchdogAndStopping) {
  TempDir dir;
  NotifySocket controller_socket(dir.path() + "/controller.notify");
  NotifySocket agent_socket(dir.path() + "/agent.notify");
  // As systemd starts a Type=notify unit with WatchdogSec=1 (pings every 0.5 s).
  ::setenv("NOTIFY_SOCKET", (dir.path() + "/controller.notify").c_str(), 1);
  ::setenv("WATCHDOG_USEC", "1000000", 1);
  auto controller = std::make_unique<ControllerProcess>(dir.path());
  ::setenv("NOTIFY_SOCKET", (dir.path() + "/agent.notify").c_str(), 1);
  Process agent({BinPath("tlbfleet-agent"), "--controller", controller->address(), "--state-dir",
                 dir.path() + "/agent"},
                dir.path() + "/agent.log");
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");

  std::string ready = controller_socket.WaitFor("READY=1", 30s);
  EXPECT_NE(ready.find("STATUS=serving: gRPC port " + std::to_string(controller->grpc_port())),
            std::string::npos)
      << ready;
  EXPECT_EQ(controller_socket.WaitFor("WATCHDOG=1", 30s), "WATCHDOG=1");
  EXPECT_NE(agent_socket.WaitFor("READY=1", 30s), "") << agent.Log();
  EXPECT_EQ(agent_socket.WaitFor("WATCHDOG=1", 30s), "WATCHDOG=1");

  agent.Signal(SIGTERM);
  EXPECT_NE(agent_socket.WaitFor("STOPPING=1", 30s), "") << agent.Log();
  EXPECT_EQ(agent.Wait(30s), 0);
  controller->process().Signal(SIGTERM);
  EXPECT_NE(controller_socket.WaitFor("STOPPING=1", 30s), "") << controller->process().Log();
  EXPECT_EQ(controller->process().Wait(30s), 0);
}

}  // namespace
}  // namespace tlbfleet::testing
