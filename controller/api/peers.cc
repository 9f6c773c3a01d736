#include "controller/api/peers.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agent/workloads/netperf.h"
#include "controller/scheduler/expand.h"

namespace tlbfleet::api {

namespace netperf = workloads::netperf;

namespace {

// An agent checks its own --netserver-* flags; this keeps one that sent something else
// (an older or buggy agent) from being chosen and failing the job.
bool Dialable(const std::string& netserver) {
  absl::StatusOr<netperf::Endpoint> endpoint = netperf::ParseEndpoint(netserver);
  return endpoint.ok() && endpoint->port != 0;
}

}  // namespace

bool RunNeedsPeer(const v1::RunSpec& spec) {
  const v1::SweepSpec& sweep = spec.sweep();
  // A sweep over `server` sets it in every job, whatever the params say.
  if (sweep.param() == "server") {
    return std::find(sweep.values().begin(), sweep.values().end(), kPeerServer) !=
           sweep.values().end();
  }
  return std::any_of(spec.arms().begin(), spec.arms().end(), [&](const v1::ArmSpec& arm) {
    const std::map<std::string, std::string> params = scheduler::ArmParams(spec, arm);
    auto it = params.find("server");
    return it != params.end() && it->second == kPeerServer;
  });
}

bool JobNeedsPeer(const google::protobuf::Map<std::string, std::string>& params) {
  auto it = params.find("server");
  return it != params.end() && it->second == kPeerServer;
}

std::optional<PeerCandidate> ChoosePeer(const std::vector<PeerCandidate>& candidates,
                                        const std::string& client_agent_id) {
  for (const PeerCandidate& c : candidates) {
    if (c.agent_id != client_agent_id && Dialable(c.netserver) && c.idle && !c.serving) return c;
  }
  return std::nullopt;
}

bool AnyPeerAdvertises(const std::vector<PeerCandidate>& candidates,
                       const std::string& client_agent_id) {
  return std::any_of(candidates.begin(), candidates.end(), [&](const PeerCandidate& c) {
    return c.agent_id != client_agent_id && Dialable(c.netserver);
  });
}

absl::Status ApplyPeer(const PeerCandidate& peer, v1::JobAssignment* assignment) {
  absl::StatusOr<netperf::Endpoint> endpoint = netperf::ParseEndpoint(peer.netserver);
  if (endpoint.ok() && endpoint->port == 0) {
    endpoint = absl::InvalidArgumentError("port 0 cannot be dialled");
  }
  if (!endpoint.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("host ", peer.hostname, " (agent ", peer.agent_id, ") advertises netserver \"",
                     peer.netserver, "\": ", endpoint.status().message()));
  }
  (*assignment->mutable_params())["server"] = endpoint->address;
  (*assignment->mutable_params())["port"] = absl::StrCat(endpoint->port);
  assignment->set_peer_host(peer.hostname);
  return absl::OkStatus();
}

void PeerReservations::Reserve(const std::string& lease_id, const std::string& peer_agent_id) {
  peer_by_lease_[lease_id] = peer_agent_id;
}

bool PeerReservations::Serving(const std::string& agent_id) const {
  return std::any_of(peer_by_lease_.begin(), peer_by_lease_.end(),
                     [&](const auto& entry) { return entry.second == agent_id; });
}

std::optional<std::string> PeerReservations::Release(const std::string& lease_id) {
  auto it = peer_by_lease_.find(lease_id);
  if (it == peer_by_lease_.end()) return std::nullopt;
  std::string peer = std::move(it->second);
  peer_by_lease_.erase(it);
  return peer;
}

}  // namespace tlbfleet::api
