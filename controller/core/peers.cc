#include "controller/core/peers.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "catalogue/catalogue.h"
#include "common/address.h"
#include "controller/scheduler/expand.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::core {

std::optional<PeerParam> PeerParamOf(const std::string& benchmark) {
  const catalogue::WorkloadSchema* workload = catalogue::FindWorkload(benchmark);
  if (workload == nullptr) return std::nullopt;
  for (const catalogue::ParamSpec& param : workload->Schema()) {
    if (param.resolves_to_peer.has_value()) {
      return PeerParam{param.name, param.resolves_to_peer->placeholder,
                       param.resolves_to_peer->port_param};
    }
  }
  return std::nullopt;
}

bool RunNeedsPeer(const v1::RunSpec& spec) {
  const std::optional<PeerParam> peer = PeerParamOf(spec.benchmark());
  if (!peer.has_value()) return false;
  const v1::SweepSpec& sweep = spec.sweep();
  // A sweep over the peer parameter sets it in every job, whatever the params say.
  if (sweep.param() == peer->name) {
    return std::find(sweep.values().begin(), sweep.values().end(), peer->placeholder) !=
           sweep.values().end();
  }
  return std::any_of(spec.arms().begin(), spec.arms().end(), [&](const v1::ArmSpec& arm) {
    const std::map<std::string, std::string> params = scheduler::ArmParams(spec, arm);
    auto it = params.find(peer->name);
    return it != params.end() && it->second == peer->placeholder;
  });
}

bool JobNeedsPeer(const v1::JobAssignment& assignment) {
  const std::optional<PeerParam> peer = PeerParamOf(assignment.benchmark());
  if (!peer.has_value()) return false;
  auto it = assignment.params().find(peer->name);
  return it != assignment.params().end() && it->second == peer->placeholder;
}

std::optional<PeerCandidate> ChoosePeer(const std::vector<PeerCandidate>& candidates,
                                        const std::string& client_agent_id) {
  for (const PeerCandidate& c : candidates) {
    if (c.agent_id != client_agent_id && IsDialableEndpoint(c.netserver) && c.idle && !c.serving)
      return c;
  }
  return std::nullopt;
}

bool AnyPeerAdvertises(const std::vector<PeerCandidate>& candidates,
                       const std::string& client_agent_id) {
  return std::any_of(candidates.begin(), candidates.end(), [&](const PeerCandidate& c) {
    return c.agent_id != client_agent_id && IsDialableEndpoint(c.netserver);
  });
}

absl::Status ApplyPeer(const PeerCandidate& peer, v1::JobAssignment* assignment) {
  const std::optional<PeerParam> param = PeerParamOf(assignment->benchmark());
  if (!param.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("benchmark ", assignment->benchmark(),
                                                   " has no parameter that is resolved to a peer"));
  }
  absl::StatusOr<Endpoint> endpoint = ParseEndpoint(peer.netserver);
  if (endpoint.ok() && endpoint->port == 0) {
    endpoint = absl::InvalidArgumentError("port 0 cannot be dialled");
  }
  if (!endpoint.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("host ", peer.hostname, " (agent ", peer.agent_id, ") advertises server \"",
                     peer.netserver, "\": ", endpoint.status().message()));
  }
  (*assignment->mutable_params())[param->name] = endpoint->address;
  (*assignment->mutable_params())[param->port_param] = absl::StrCat(endpoint->port);
  assignment->set_peer_host(peer.hostname);
  return absl::OkStatus();
}

void PeerReservations::Reserve(const std::string& lease_id, const std::string& peer_agent_id) {
  Release(lease_id);
  peer_by_lease_[lease_id] = peer_agent_id;
  ++leases_by_peer_[peer_agent_id];
}

bool PeerReservations::Serving(const std::string& agent_id) const {
  return leases_by_peer_.count(agent_id) > 0;
}

std::optional<std::string> PeerReservations::Release(const std::string& lease_id) {
  auto it = peer_by_lease_.find(lease_id);
  if (it == peer_by_lease_.end()) return std::nullopt;
  std::string peer = std::move(it->second);
  peer_by_lease_.erase(it);
  auto count = leases_by_peer_.find(peer);
  if (count != leases_by_peer_.end() && --count->second <= 0) leases_by_peer_.erase(count);
  return peer;
}

namespace {
std::string LeasingKey(const std::string& client_agent_id) {
  return "leasing:" + client_agent_id;  // lease ids never start with this
}
}  // namespace

std::optional<PeerCandidate> PeerPool::Choose(const Sessions& sessions, const Session& client,
                                              const std::string& run_id) {
  for (const std::string& id : sessions.idle_servers()) {
    if (id == client.agent_id || reservations_.Serving(id)) continue;
    const Session* s = sessions.Find(id);
    if (s == nullptr) continue;
    return PeerCandidate{id, s->host.hostname(), s->host.netserver(), true, false};
  }
  if (peerless_runs_logged_.count(run_id) == 0) {
    // Worth a line once per run: is any other host able to serve at all?
    std::vector<PeerCandidate> candidates;
    for (const auto& [id, s] : sessions) {
      candidates.push_back({id, s.host.hostname(), s.host.netserver(), false, false});
    }
    if (!AnyPeerAdvertises(candidates, client.agent_id)) {
      peerless_runs_logged_.insert(run_id);
      spdlog::warn(
          "run={} needs a peer, but no connected host other than host={} advertises a "
          "netserver (tlbfleet-agent --netserver-listen); it waits for one",
          run_id, client.host.hostname());
    }
  }
  return std::nullopt;
}

void PeerPool::ReserveWhileLeasing(const std::string& client_agent_id,
                                   const std::string& peer_agent_id) {
  reservations_.Reserve(LeasingKey(client_agent_id), peer_agent_id);
}

void PeerPool::EndLeasing(const std::string& client_agent_id) {
  reservations_.Release(LeasingKey(client_agent_id));
}

void PeerPool::Reserve(const std::string& lease_id, const std::string& peer_agent_id) {
  reservations_.Reserve(lease_id, peer_agent_id);
}

std::optional<std::string> PeerPool::Release(const std::string& lease_id) {
  std::optional<std::string> peer = reservations_.Release(lease_id);
  if (peer) spdlog::info("lease={} ended: netperf peer agent={} released", lease_id, *peer);
  return peer;
}

void PeerPool::Restore(const std::vector<std::pair<std::string, std::string>>& leases) {
  for (const auto& [lease_id, peer] : leases) {
    reservations_.Reserve(lease_id, peer);
    spdlog::info("lease={}: netperf peer {} still reserved (restored)", lease_id, peer);
  }
}

}  // namespace tlbfleet::core
