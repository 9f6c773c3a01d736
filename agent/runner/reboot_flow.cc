#include "agent/runner/reboot_flow.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/kernel/reboot.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::agent {
namespace {

// How long a reboot waits for the controller to acknowledge every finished result.
constexpr absl::Duration kDrainTimeout = absl::Seconds(60);
// The outbox has no event for "empty": it is looked at this often.
constexpr absl::Duration kDrainPoll = absl::Milliseconds(200);

}  // namespace

RebootFlow::RebootFlow(RebootOptions options, const BootEntries& boot_entries, const Outbox& outbox,
                       NoteSender send_note)
    : options_(std::move(options)),
      boot_entries_(boot_entries),
      outbox_(outbox),
      send_note_(std::move(send_note)) {}

RebootFlow::~RebootFlow() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

void RebootFlow::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
  cv_.SignalAll();
}

bool RebootFlow::rebooting() const {
  absl::MutexLock lock(&mu_);
  return rebooting_;
}

void RebootFlow::OnRequest(const v1::RebootRequest& request, const std::string& running_lease,
                           const std::string& boot_id) {
  if (absl::Status s = boot_entries_.CheckRebootable(request.boot_entry(), options_.command);
      !s.ok()) {
    spdlog::warn("controller asked for a reboot ({}), but {}", request.reason(),
                 std::string(s.message()));
    send_note_(std::string(s.message()));
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (rebooting_) return;
    if (!running_lease.empty()) {
      spdlog::warn("reboot request ignored: lease {} is running", running_lease);
      return;
    }
    if (!request.boot_id().empty() && request.boot_id() != boot_id) {
      spdlog::info("reboot request for boot {} ignored: this is boot {}", request.boot_id(),
                   boot_id);
      return;
    }
    rebooting_ = true;
  }
  if (thread_.joinable()) thread_.join();  // a previous, failed attempt
  thread_ = std::thread(&RebootFlow::Reboot, this, request.reason(), request.boot_entry(), boot_id);
}

void RebootFlow::Reboot(const std::string& reason, const std::string& boot_entry,
                        const std::string& boot_id) {
  // Results not yet acked would survive on a disk spool, but not in a tmpfs (a microVM's
  // initramfs): give the controller time to ack them first.
  const absl::Time deadline = absl::Now() + kDrainTimeout;
  size_t pending = 0;
  for (;;) {
    const Outbox::Backlog backlog = outbox_.Pending();  // reads the spool: not under mu_
    pending = backlog.spooled + backlog.in_memory;
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      rebooting_ = false;
      return;
    }
    if ((pending == 0 && backlog.queued == 0) || absl::Now() >= deadline) break;
    cv_.WaitWithTimeout(&mu_, kDrainPoll);
  }
  if (pending > 0) {
    spdlog::warn("rebooting with {} result(s) not yet acknowledged; they stay in the spool",
                 pending);
  }
  std::string command = options_.command;
  absl::Status started = absl::OkStatus();
  if (!boot_entry.empty()) {
    absl::StatusOr<std::string> selected = boot_entries_.Select(boot_entry, boot_id, command);
    if (selected.ok()) {
      command = *selected;
      spdlog::info("next boot: entry {}", boot_entry);
    } else {
      started = selected.status();
    }
  }
  if (started.ok()) {
    spdlog::info("rebooting ({}) with: {}", reason, command);
    spdlog::default_logger()->flush();
    started = StartReboot(command);
  }
  if (started.ok()) {
    // The host is going down; if it has not after the grace period, the command lied.
    absl::MutexLock lock(&mu_);
    const absl::Time gone_by = absl::Now() + absl::Seconds(options_.grace_seconds);
    while (!stopping_ && absl::Now() < gone_by) cv_.WaitWithDeadline(&mu_, gone_by);
    if (stopping_) return;
    started = absl::DeadlineExceededError(
        absl::StrCat("the reboot command succeeded but the host was still up ",
                     options_.grace_seconds, " s later"));
  }
  spdlog::error("reboot failed: {}", started.ToString());
  send_note_(absl::StrCat("reboot failed: ", std::string(started.message())));
  absl::MutexLock lock(&mu_);
  rebooting_ = false;
}

}  // namespace tlbfleet::agent
