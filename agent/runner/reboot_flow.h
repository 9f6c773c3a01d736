#pragma once
// The reboot flow: what the agent does with the controller's RebootRequest. The controller
// says only *that* this host needs a fresh boot (and which boot entry, by name); how it
// reboots is the agent's own configuration (--reboot-command, boot_entries.h).
//
//   RebootRequest ──► checks ──► wait for the outbox ──► select the boot entry ──► reboot
//                       │        to empty (≤ 60 s)      (its command, journaled)   command
//                       │                               or install a built kernel
//                       │                               (kernel_install.h, journaled)
//                       ▼                                                            │
//              ignored (logged), or a note                   the host still up after │
//              that this agent cannot reboot           grace_seconds, or the command │
//                                                      failed: a note, rebooting ends ◄┘
//
// Waiting for the outbox matters when the spool lives in a tmpfs (a microVM's initramfs):
// results not yet acknowledged would be lost with the boot. While a reboot is under way the
// agent heartbeats REBOOTING and refuses assignments (rebooting()). A failure reaches the
// controller as a note (JobProgress without a lease), which fails the run with that reason.
//
// Thread-safe: OnRequest() from the stream's reader, rebooting() and Stop() from any thread.
// The reboot itself runs in a thread of the flow's own, joined by the destructor.

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "agent/runner/boot_entries.h"
#include "agent/runner/kernel_install.h"
#include "agent/runner/outbox.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::agent {

struct RebootOptions {
  // How this host reboots (agent/kernel/reboot.h): "syscall", a shell command line, or empty:
  // it never does.
  std::string command;
  // After the command succeeded, how long to wait for the host to go down before telling the
  // controller that the reboot failed.
  double grace_seconds = 120;
  // How this host installs a kernel built from source (a request with `kernel`); its command
  // empty: it does not, and such requests are refused like an unknown boot entry.
  KernelInstallOptions kernel;
};

class RebootFlow {
 public:
  // Sends a note to the controller (best effort).
  using NoteSender = std::function<void(const std::string& text)>;

  // `boot_entries` and `outbox` must outlive the flow.
  RebootFlow(RebootOptions options, const BootEntries& boot_entries, const Outbox& outbox,
             NoteSender send_note);
  // Stop(), then waits for the reboot thread.
  ~RebootFlow();
  RebootFlow(const RebootFlow&) = delete;
  RebootFlow& operator=(const RebootFlow&) = delete;

  // The controller's request, with what the agent is doing: `running_lease` ("" when idle)
  // and its `boot_id`. A request this agent cannot carry out (an unknown boot entry, no
  // reboot command, a built kernel and no install command) is answered with a note; one that comes
  // while a reboot is under way, while a job runs or for another boot than `boot_id` is ignored
  // (logged). Otherwise the reboot starts in the flow's thread and rebooting() is true until it
  // fails.
  void OnRequest(const v1::RebootRequest& request, const std::string& running_lease,
                 const std::string& boot_id);

  bool rebooting() const;

  // Asynchronous and idempotent: a reboot that has not yet run its command gives up (and
  // rebooting() turns false); one that has waits no longer for the host to go down.
  void Stop();

 private:
  void Reboot(const v1::RebootRequest& request, const std::string& boot_id);
  // Selects a configured entry, or installs a built kernel, and journals it. Returns the
  // command that reboots into it.
  absl::StatusOr<std::string> PrepareNextBoot(const v1::RebootRequest& request,
                                              const std::string& boot_id);

  const RebootOptions options_;
  const BootEntries& boot_entries_;
  const Outbox& outbox_;
  const NoteSender send_note_;
  std::thread thread_;  // started and joined by OnRequest() and the destructor

  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // signalled by Stop()
  // --- guarded by mu_ ---
  bool rebooting_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tlbfleet::agent
