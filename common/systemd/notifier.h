#pragma once
// systemd's readiness and watchdog protocol (sd_notify, libsystemd) for the daemons'
// `Type=notify` units (deploy/systemd/). Outside systemd (no $NOTIFY_SOCKET) every call does
// nothing, so the daemons need no flag for it.
//
//   READY=1      once the daemon serves (listeners bound, agent created);
//   STOPPING=1   when a stop signal arrives, before the shutdown work;
//   WATCHDOG=1   every half of $WATCHDOG_USEC (WatchdogSec=), from a thread of its own, but
//                only while `healthy()` says so: a wedged daemon stops petting the watchdog
//                and systemd restarts it.
//
// Thread-safe.

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tlbfleet {

class SystemdNotifier {
 public:
  // `healthy` is called before each watchdog ping, on the watchdog thread; empty: always.
  explicit SystemdNotifier(std::function<bool()> healthy = {});
  ~SystemdNotifier();  // stops the watchdog thread
  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  // Starts the watchdog (when systemd asked for one) and says READY=1 with `status`.
  void Ready(const std::string& status);
  // STOPPING=1, and no more watchdog pings.
  void Stopping(const std::string& status);

  bool under_systemd() const { return under_systemd_; }
  uint64_t watchdog_usec() const { return watchdog_usec_; }

 private:
  void WatchdogLoop();

  const std::function<bool()> healthy_;
  bool under_systemd_ = false;
  uint64_t watchdog_usec_ = 0;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread watchdog_;
};

}  // namespace tlbfleet
