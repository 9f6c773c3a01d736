#include "controller/core/sessions.h"

#include "absl/strings/str_cat.h"
#include "common/address.h"

namespace tlbfleet::core {

namespace {

bool FromEarlierBoot(const Session& live, const v1::HostInfo& host) {
  return !host.boot_id().empty() && live.host.boot_id() != host.boot_id();
}

}  // namespace

absl::Status Sessions::CheckAdd(const std::string& agent_id, const v1::HostInfo& host) const {
  const Session* live = Find(agent_id);
  if (live == nullptr || FromEarlierBoot(*live, host)) return absl::OkStatus();
  return absl::AlreadyExistsError(
      absl::StrCat("agent ", agent_id, " already has a live stream (from ", live->channel->Peer(),
                   "); this one is refused until that one closes: retry later"));
}

absl::StatusOr<Sessions::Added> Sessions::Add(AgentChannel* channel, uint64_t stream,
                                              const std::string& agent_id, const v1::HostInfo& host,
                                              const std::string& principal) {
  if (absl::Status s = CheckAdd(agent_id, host); !s.ok()) return s;
  Added added;
  if (auto it = by_id_.find(agent_id); it != by_id_.end()) {
    id_by_channel_.erase(it->second.channel);
    Unindex(it->second);
    added.replaced = std::move(it->second);
    by_id_.erase(it);
  }
  Session& session = by_id_[agent_id];
  session.channel = channel;
  session.stream = stream;
  session.agent_id = agent_id;
  session.principal = principal;
  session.host = host;
  session.serves_peers = IsDialableEndpoint(host.netserver());
  id_by_channel_[channel] = agent_id;
  added.session = &session;
  return added;
}

std::optional<Session> Sessions::Remove(AgentChannel* channel) {
  auto index = id_by_channel_.find(channel);
  if (index == id_by_channel_.end()) return std::nullopt;
  auto it = by_id_.find(index->second);
  id_by_channel_.erase(index);
  if (it == by_id_.end()) return std::nullopt;
  Unindex(it->second);
  std::optional<Session> removed = std::move(it->second);
  by_id_.erase(it);
  return removed;
}

void Sessions::Unindex(const Session& session) {
  idle_ids_.erase(session.agent_id);
  idle_servers_.erase(session.agent_id);
}

void Sessions::SetIdle(Session& session, bool idle, int64_t now_ms) {
  if (idle && !session.idle) session.idle_since_ms = now_ms;
  session.idle = idle;
  if (idle) {
    idle_ids_.insert(session.agent_id);
    if (session.serves_peers) idle_servers_.insert(session.agent_id);
  } else {
    Unindex(session);
  }
}

Session* Sessions::ByChannel(AgentChannel* channel) {
  auto index = id_by_channel_.find(channel);
  return index == id_by_channel_.end() ? nullptr : Find(index->second);
}

Session* Sessions::Find(const std::string& agent_id) {
  auto it = by_id_.find(agent_id);
  return it == by_id_.end() ? nullptr : &it->second;
}

const Session* Sessions::Find(const std::string& agent_id) const {
  auto it = by_id_.find(agent_id);
  return it == by_id_.end() ? nullptr : &it->second;
}

Session* Sessions::FindStream(const std::string& agent_id, uint64_t stream) {
  Session* session = Find(agent_id);
  return session != nullptr && session->stream == stream ? session : nullptr;
}

}  // namespace tlbfleet::core
