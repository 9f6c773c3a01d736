#pragma once
// netperf peers: a job whose parameters say `server: peer` runs its client against another
// agent's netserver (tlbfleet-agent --netserver-listen, advertised in HostInfo.netserver).
// When the controller leases such a job, it picks a peer, rewrites the assignment to dial
// it, and reserves the peer until the job ends, so that no other job runs there meanwhile.
//
// The decisions are pure functions of what the controller knows about its sessions; the
// controller (controller.cc) holds the state and calls them under its mutex.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "google/protobuf/map.h"
#include "tlbfleet/v1/agent.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::api {

// The `server` value that asks for a peer.
inline constexpr char kPeerServer[] = "peer";

// Whether some job of `spec` may need a peer: an arm's merged parameters (run params
// overridden by the arm's), or a value of a sweep over `server`, say `server: peer`. Known
// before a job is leased, so that a host with no peer available does not take one.
bool RunNeedsPeer(const v1::RunSpec& spec);

// Whether one job's merged parameters say `server: peer`.
bool JobNeedsPeer(const google::protobuf::Map<std::string, std::string>& params);

// What the controller knows about one connected agent, as a possible peer.
struct PeerCandidate {
  std::string agent_id;
  std::string hostname;
  std::string netserver;  // HostInfo.netserver, "address:port"; empty: runs none
  bool idle = false;      // said it is idle and holds no lease
  bool serving = false;   // already reserved as the peer of another job
};

// The peer for a job about to run on `client_agent_id`: the first candidate, in the given
// order, that is not the client, advertises a netserver it can be dialled at ("address:port",
// port not 0), is idle and serves no other job.
// nullopt when there is none (the job then waits).
std::optional<PeerCandidate> ChoosePeer(const std::vector<PeerCandidate>& candidates,
                                        const std::string& client_agent_id);

// Whether any candidate other than the client advertises a netserver it can be dialled at,
// busy or not. If none does, a `server: peer` run cannot start until one connects, which is
// worth telling the operator.
bool AnyPeerAdvertises(const std::vector<PeerCandidate>& candidates,
                       const std::string& client_agent_id);

// Points `assignment` at `peer`: params server=<address>, port=<port> (from
// peer.netserver) and peer_host=<hostname>. INVALID_ARGUMENT, naming the peer, if its
// netserver is not "address:port" with a port other than 0; the assignment is then unchanged.
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
};

}  // namespace tlbfleet::api
