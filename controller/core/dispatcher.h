#pragma once
// The dispatcher's decisions, without state: which of the active runs an idle host may take
// work from, the lease request the store then answers (store::Store::Lease, which picks the
// job), and which runs no host can ever take. Runs are served oldest first; a run's host
// selector must fit the host (scheduler::FitHost); a run that may need a peer is offered only
// with a peer at hand; a run with several boots leases only jobs of the host's current boot.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "controller/core/peers.h"
#include "controller/core/sessions.h"
#include "controller/store/store.h"

namespace tlbfleet::core {

class Dispatcher {
 public:
  struct Candidate {
    const store::ActiveRun* run = nullptr;
    bool needs_peer = false;
  };
  // The runs of `runs` (active, oldest first) that may have a job for the host of `session`:
  // its selector fits and the store's snapshot shows work for it (ActiveRun::MayHaveWorkFor).
  static std::vector<Candidate> Candidates(const Session& session,
                                           const std::vector<store::ActiveRun>& runs);

  // The store's request for `runs` on `session`'s host, in order. `peer`, when set, is the
  // reserved peer a job that needs one is pointed at.
  static store::LeaseRequest Request(const Session& session, const std::vector<std::string>& runs,
                                     int64_t now_ms, int64_t lease_ms,
                                     const std::optional<PeerCandidate>& peer);

  struct Unrunnable {
    std::string run_id;
    std::string error;
  };
  // Runs that no host of `hosts` can ever take: every host that matches the rest of the
  // selector cannot write the ceiling an arm sets, or cannot reboot for a run with several
  // boots. With no such host a run waits, as any run waits for a matching host. `hosts` are
  // the connected ones and those briefly away (e.g. mid-reboot).
  static std::vector<Unrunnable> FindUnrunnable(const std::vector<store::ActiveRun>& runs,
                                                const std::vector<const v1::HostInfo*>& hosts);
};

}  // namespace tlbfleet::core
