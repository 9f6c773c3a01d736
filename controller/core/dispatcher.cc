#include "controller/core/dispatcher.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/host_fit.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::core {

namespace {

// Expands a host-dependent run's slot for `host`; errors name the host.
store::SlotExpander SlotExpanderFor(const std::string& run_id, const v1::HostInfo& host) {
  return [run_id, host](const v1::RunSpec& spec) -> absl::StatusOr<scheduler::SlotExpansion> {
    absl::StatusOr<scheduler::SlotExpansion> e =
        scheduler::ExpandSlotForHost(spec, scheduler::TopologyOf(host));
    if (e.ok()) {
      spdlog::info("run={} host={} ncpus={}: sweep {} ({} jobs per slot)", run_id, host.hostname(),
                   scheduler::TopologyOf(host).cpus, e->basis, e->jobs.size());
      return e;
    }
    return absl::Status(e.status().code(), absl::StrCat("host ", host.hostname(), ": ",
                                                        std::string(e.status().message())));
  };
}

}  // namespace

std::vector<Dispatcher::Candidate> Dispatcher::Candidates(
    const Session& session, const std::vector<store::ActiveRun>& runs) {
  std::vector<Candidate> out;
  for (const store::ActiveRun& run : runs) {
    if (!run.MayHaveWorkFor(session.agent_id)) continue;
    if (!scheduler::HostMatches(run.spec, session.host)) continue;
    out.push_back({&run, RunNeedsPeer(run.spec)});
  }
  return out;
}

store::LeaseRequest Dispatcher::Request(const Session& session,
                                        const std::vector<std::string>& runs, int64_t now_ms,
                                        int64_t lease_ms,
                                        const std::optional<PeerCandidate>& peer) {
  store::LeaseRequest request;
  request.run_ids = runs;
  request.agent_id = session.agent_id;
  request.boot_id = session.host.boot_id();
  request.boot_entry = session.host.boot_entry();
  request.boot_entry_failed = !session.host.boot_entry_error().empty();
  request.machine_id = session.host.machine_id();
  request.hostname = session.host.hostname();
  request.now_ms = now_ms;
  request.lease_ms = lease_ms;
  request.expander_for = [host = session.host](const std::string& run_id) {
    return SlotExpanderFor(run_id, host);
  };
  if (peer.has_value()) {
    // Runs on the store's writer thread, with copies only.
    request.peer_for = [peer = *peer](v1::JobAssignment& a) -> std::string {
      if (!JobNeedsPeer(a)) return "";
      if (absl::Status s = ApplyPeer(peer, &a); !s.ok()) {
        // Choose() takes only usable addresses, so this is a bug; the agent then fails the
        // job with the reason that the placeholder was not resolved.
        spdlog::error("run={} job={} lease={}: {}", a.run_id(), a.job_id(), a.lease_id(),
                      s.ToString());
        return "";
      }
      // The servers agents advertise to peers (HostInfo.netserver) are netperf netservers.
      spdlog::info("run={} job={} lease={}: netperf peer host={} agent={} netserver={} reserved",
                   a.run_id(), a.job_id(), a.lease_id(), peer.hostname, peer.agent_id,
                   peer.netserver);
      return peer.agent_id;
    };
  }
  return request;
}

std::vector<Dispatcher::Unrunnable> Dispatcher::FindUnrunnable(
    const std::vector<store::ActiveRun>& runs, const std::vector<const v1::HostInfo*>& hosts) {
  std::vector<Unrunnable> out;
  for (const store::ActiveRun& run : runs) {
    bool any_fits = false;
    std::vector<std::string> ceiling_reasons;
    std::vector<std::string> reboot_reasons;
    std::vector<std::string> entry_reasons;
    for (const v1::HostInfo* host : hosts) {
      std::string why;
      const scheduler::HostFit fit = scheduler::FitHost(run.spec, *host, &why);
      if (fit == scheduler::HostFit::kFits) {
        any_fits = true;
        break;
      }
      if (fit == scheduler::HostFit::kCeilingUnwritable) ceiling_reasons.push_back(why);
      if (fit == scheduler::HostFit::kCannotReboot) reboot_reasons.push_back(why);
      if (fit == scheduler::HostFit::kBootEntryMissing) entry_reasons.push_back(why);
    }
    // Only hosts that were selected and refused for the ceiling, a boot entry or rebooting
    // count as proof.
    if (any_fits || (ceiling_reasons.empty() && reboot_reasons.empty() && entry_reasons.empty())) {
      continue;
    }
    if (!entry_reasons.empty()) {
      out.push_back(
          {run.run_id, absl::StrCat("an arm names a boot entry that no selected host has (",
                                    absl::StrJoin(entry_reasons, "; "), ")")});
      continue;
    }
    out.push_back(
        {run.run_id,
         ceiling_reasons.empty()
             ? absl::StrCat("the run needs up to ",
                            std::max(run.spec.boots(), run.spec.adaptive().boots().max()),
                            " boots per arm, but no selected host can reboot (",
                            absl::StrJoin(reboot_reasons, "; "), ")")
             : absl::StrCat("an arm sets the flush ceiling, but no selected host can apply it (",
                            absl::StrJoin(ceiling_reasons, "; "), ")")});
  }
  return out;
}

}  // namespace tlbfleet::core
