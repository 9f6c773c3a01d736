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
  absl::Status s = absl::OkStatus();
  if (request.has_kernel()) {
    s = options_.command.empty()
            ? absl::FailedPreconditionError("this agent has no --reboot-command")
            : CheckKernelInstallable(options_.kernel, boot_entries_, request.boot_entry(),
                                     request.kernel());
  } else {
    s = boot_entries_.CheckRebootable(request.boot_entry(), options_.command);
  }
  if (!s.ok()) {
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
  thread_ = std::thread(&RebootFlow::Reboot, this, request, boot_id);
}

absl::StatusOr<std::string> RebootFlow::PrepareNextBoot(const v1::RebootRequest& request,
                                                        const std::string& boot_id) {
  const std::string& entry = request.boot_entry();
  if (request.has_kernel()) {
    absl::StatusOr<KernelEntry> installed = InstallKernel(options_.kernel, entry, request.kernel());
    if (!installed.ok()) return installed.status();
    if (absl::Status s = boot_entries_.Journal(entry, boot_id); !s.ok()) return s;
    spdlog::info("next boot: entry {}, build {} release {}", entry,
                 installed->build_id.substr(0, 16), installed->kernel_release);
    return options_.command;
  }
  if (entry.empty()) return options_.command;
  absl::StatusOr<std::string> selected = boot_entries_.Select(entry, boot_id, options_.command);
  if (selected.ok()) spdlog::info("next boot: entry {}", entry);
  return selected;
}

void RebootFlow::Reboot(const v1::RebootRequest& request, const std::string& boot_id) {
  const std::string& reason = request.reason();
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
  std::string command;
  absl::Status started = absl::OkStatus();
  if (absl::StatusOr<std::string> prepared = PrepareNextBoot(request, boot_id); prepared.ok()) {
    command = *std::move(prepared);
  } else {
    started = prepared.status();
  }
  {
    // A fetch and an install take a while; an agent told to stop meanwhile does not reboot.
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      rebooting_ = false;
      return;
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
