#include "common/systemd/notifier.h"

#include <systemd/sd-daemon.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "spdlog/spdlog.h"

namespace tlbfleet {

SystemdNotifier::SystemdNotifier(std::function<bool()> healthy) : healthy_(std::move(healthy)) {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  under_systemd_ = socket != nullptr && *socket != '\0';
  uint64_t usec = 0;
  // > 0 only when WATCHDOG_USEC is set and WATCHDOG_PID (if set) is this process.
  if (under_systemd_ && sd_watchdog_enabled(0, &usec) > 0) watchdog_usec_ = usec;
}

SystemdNotifier::~SystemdNotifier() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (watchdog_.joinable()) watchdog_.join();
}

void SystemdNotifier::Ready(const std::string& status) {
  if (!under_systemd_) return;
  if (watchdog_usec_ > 0 && !watchdog_.joinable()) {
    watchdog_ = std::thread([this] { WatchdogLoop(); });
  }
  int rc = sd_notify(0, absl::StrCat("READY=1\nSTATUS=", status).c_str());
  if (rc < 0) spdlog::warn("sd_notify READY: error {}", -rc);
}

void SystemdNotifier::Stopping(const std::string& status) {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (!under_systemd_) return;
  sd_notify(0, absl::StrCat("STOPPING=1\nSTATUS=", status).c_str());
}

void SystemdNotifier::WatchdogLoop() {
  const absl::Duration period = absl::Microseconds(static_cast<int64_t>(watchdog_usec_ / 2));
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    mu_.Unlock();
    const bool healthy = !healthy_ || healthy_();
    if (healthy) {
      sd_notify(0, "WATCHDOG=1");
    } else {
      spdlog::error("not healthy: the systemd watchdog is not petted");
    }
    mu_.Lock();
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), period);
  }
}

}  // namespace tlbfleet
