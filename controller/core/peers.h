#pragma once
// Peers: a job parameter whose workload schema declares it "resolved to a peer"
// (workloads::ParamSpec::resolves_to_peer, e.g. netperf's `server: peer`) runs against another
// agent's server (advertised in HostInfo.netserver). When the controller leases such a job it
// picks a peer, rewrites the assignment to dial it, and reserves the peer until the job ends,
// so that no other job runs there meanwhile.
//
// The controller knows no workload by name: which parameter, which placeholder value and which
// port parameter all come from the schema.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "controller/core/sessions.h"
#include "tlbfleet/v1/agent.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::core {

// The parameter of `benchmark`'s schema that is resolved to a peer, if any.
struct PeerParam {
  std::string name;         // e.g. "server"
  std::string placeholder;  // e.g. "peer"
  std::string port_param;   // e.g. "port"
};
std::optional<PeerParam> PeerParamOf(const std::string& benchmark);

// Whether some job of `spec` may need a peer: an arm's merged parameters (run params
// overridden by the arm's), or a value of a sweep over the peer parameter, hold the
// placeholder. Known before a job is leased, so that a host with no peer available does not
// take one.
bool RunNeedsPeer(const v1::RunSpec& spec);

// Whether one job's merged parameters hold its workload's placeholder.
bool JobNeedsPeer(const v1::JobAssignment& assignment);

// What the controller knows about one connected agent, as a possible peer.
struct PeerCandidate {
  std::string agent_id;
  std::string hostname;
  std::string netserver;  // HostInfo.netserver, "address:port"; empty: runs none
  bool idle = false;      // said it is idle and holds no lease
  bool serving = false;   // already reserved as the peer of another job
};

// The peer for a job about to run on `client_agent_id`: the first candidate, in the given
// order, that is not the client, advertises a server it can be dialled at ("address:port",
// port not 0), is idle and serves no other job. nullopt when there is none (the job waits).
std::optional<PeerCandidate> ChoosePeer(const std::vector<PeerCandidate>& candidates,
                                        const std::string& client_agent_id);

// Whether any candidate other than the client advertises a server it can be dialled at,
// busy or not. If none does, a peer run cannot start until one connects, which is worth
// telling the operator.
bool AnyPeerAdvertises(const std::vector<PeerCandidate>& candidates,
                       const std::string& client_agent_id);

// Points `assignment` at `peer`: the peer parameter gets the server's address, its port
// parameter the port, and peer_host the peer's hostname. INVALID_ARGUMENT, naming the peer,
// if its server is not "address:port" with a port other than 0, or the job's workload has
// no peer parameter; the assignment is then unchanged.
absl::Status ApplyPeer(const PeerCandidate& peer, v1::JobAssignment* assignment);

// Which agent serves as the peer of which lease. Not thread-safe: the controller's mutex
// guards it.
class PeerReservations {
 public:
  // Reserves `peer_agent_id` for the job of `lease_id` (replacing any earlier reservation of
  // that lease).
  void Reserve(const std::string& lease_id, const std::string& peer_agent_id);
  // Whether `agent_id` serves some job.
  bool Serving(const std::string& agent_id) const;
  // Ends the reservation of `lease_id`; returns the agent that was its peer, or nullopt if
  // the lease had none.
  std::optional<std::string> Release(const std::string& lease_id);
  size_t size() const { return peer_by_lease_.size(); }

 private:
  std::map<std::string, std::string> peer_by_lease_;  // lease id -> peer agent id
  std::map<std::string, int> leases_by_peer_;         // peer agent id -> reservations
};

// The controller's peers: reservations plus the choice among connected sessions. A peer is
// reserved as soon as it is chosen for a lease request (under the client's agent id, while
// the store leases) and then under the lease, so two requests in flight never share one.
// Leases keep their peer in the store (jobs.peer_agent_id): Restore() rebuilds the
// reservations after a restart. Not thread-safe: the controller's mutex guards it.
class PeerPool {
 public:
  // A peer for a job of `run_id` on `client`, or nullopt (logged once per run when no other
  // connected host advertises a server at all). Looks only at idle agents that serve peers:
  // O(log n) plus the peers already reserved.
  std::optional<PeerCandidate> Choose(const Sessions& sessions, const Session& client,
                                      const std::string& run_id);
  // Reserves `peer_agent_id` while the store leases a job to `client_agent_id`.
  void ReserveWhileLeasing(const std::string& client_agent_id, const std::string& peer_agent_id);
  // Ends that reservation (the lease came back), before Reserve() takes over if it was used.
  void EndLeasing(const std::string& client_agent_id);
  // Reserves `peer_agent_id` for the job of `lease_id`.
  void Reserve(const std::string& lease_id, const std::string& peer_agent_id);
  // Frees the peer of `lease_id`; returns its agent id, or nullopt if the lease had none.
  std::optional<std::string> Release(const std::string& lease_id);
  bool Serving(const std::string& agent_id) const { return reservations_.Serving(agent_id); }
  // The reservations of leases still running after a restart: (lease id, peer agent id).
  void Restore(const std::vector<std::pair<std::string, std::string>>& leases);

 private:
  PeerReservations reservations_;
  std::set<std::string> peerless_runs_logged_;
};

}  // namespace tlbfleet::core
