// SystemdNotifier against a real notification socket (a Unix datagram socket standing in for
// systemd's $NOTIFY_SOCKET): READY, watchdog pings only while healthy, STOPPING; and nothing
// at all outside systemd.

#include "common/systemd/notifier.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace tlbfleet {
namespace {

class NotifySocket {
 public:
  NotifySocket() {
    path_ =
        (std::filesystem::temp_directory_path() / ("tlbfleet-notify-" + std::to_string(::getpid())))
            .string();
    ::unlink(path_.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path_.copy(addr.sun_path, sizeof addr.sun_path - 1);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  }
  ~NotifySocket() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }
  // The next datagram, or "" after `timeout`.
  std::string Next(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return "";
    char buf[512];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  std::string path_;
  int fd_ = -1;
};

class NotifierTest : public ::testing::Test {
 protected:
  void TearDown() override {
    ::unsetenv("NOTIFY_SOCKET");
    ::unsetenv("WATCHDOG_USEC");
    ::unsetenv("WATCHDOG_PID");
  }
};

TEST_F(NotifierTest, ReadyWatchdogWhileHealthyThenStopping) {
  NotifySocket socket;
  ::setenv("NOTIFY_SOCKET", socket.path().c_str(), 1);
  ::setenv("WATCHDOG_USEC", "100000", 1);  // 100 ms: pings every 50 ms
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  std::atomic<bool> healthy{true};
  SystemdNotifier notifier([&] { return healthy.load(); });
  EXPECT_TRUE(notifier.under_systemd());
  EXPECT_EQ(notifier.watchdog_usec(), 100000u);

  notifier.Ready("serving");
  // The first ping may come before or after READY (its own thread); both must come.
  std::string first = socket.Next(std::chrono::seconds(10));
  std::string second = socket.Next(std::chrono::seconds(10));
  EXPECT_TRUE((first == "READY=1\nSTATUS=serving" && second == "WATCHDOG=1") ||
              (first == "WATCHDOG=1" && second == "READY=1\nSTATUS=serving"))
      << first << " / " << second;
  EXPECT_EQ(socket.Next(std::chrono::seconds(10)), "WATCHDOG=1");

  // Unhealthy: the pings stop (drain one that may be in flight), so systemd would restart it.
  healthy.store(false);
  socket.Next(std::chrono::milliseconds(200));
  EXPECT_EQ(socket.Next(std::chrono::milliseconds(300)), "");
  healthy.store(true);
  EXPECT_EQ(socket.Next(std::chrono::seconds(10)), "WATCHDOG=1");

  notifier.Stopping("signal 15");
  std::string stopping;
  for (int i = 0; i < 5 && stopping.rfind("STOPPING=1", 0) != 0; ++i) {
    stopping = socket.Next(std::chrono::seconds(10));
  }
  EXPECT_EQ(stopping, "STOPPING=1\nSTATUS=signal 15");
}

TEST_F(NotifierTest, NothingOutsideSystemdAndNoWatchdogForAnotherPid) {
  SystemdNotifier outside;
  EXPECT_FALSE(outside.under_systemd());
  outside.Ready("serving");  // no socket: must not fail or block
  outside.Stopping("done");

  NotifySocket socket;
  ::setenv("NOTIFY_SOCKET", socket.path().c_str(), 1);
  ::setenv("WATCHDOG_USEC", "100000", 1);
  ::setenv("WATCHDOG_PID", "1", 1);  // the watchdog is meant for another process
  SystemdNotifier other;
  EXPECT_EQ(other.watchdog_usec(), 0u);
  other.Ready("serving");
  EXPECT_EQ(socket.Next(std::chrono::seconds(10)), "READY=1\nSTATUS=serving");
  EXPECT_EQ(socket.Next(std::chrono::milliseconds(300)), "");  // no pings
}

}  // namespace
}  // namespace tlbfleet
