#pragma once
// Connected agents: one session per agent id, each bound to the stream (AgentChannel) it
// came on. Lookups by agent id and by stream are O(log n) / O(1); the idle agents, and the
// idle ones that advertise a server for peers, are kept as indexes so that dispatch passes
// and peer choices look only at them. Not thread-safe: the controller's mutex guards it.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "controller/core/agent_channel.h"
#include "controller/store/writer.h"
#include "tlbfleet/v1/common.pb.h"

namespace tlbfleet::core {

struct Session {
  AgentChannel* channel = nullptr;
  // Which stream: never reused in the controller's life, so an answer from the store that
  // comes back after the agent reconnected is not mistaken for one about its new stream.
  uint64_t stream = 0;
  std::string agent_id;
  std::string principal;  // who the transport authenticated ("" in development mode)
  v1::HostInfo host;
  bool serves_peers = false;  // advertises a netserver peers can dial (HostInfo.netserver)
  // Set only through Sessions::SetIdle: the agent said so (idle heartbeat) or completed its
  // job, and holds no lease.
  bool idle = false;
  int64_t idle_since_ms = 0;
  std::string lease_id;       // the lease it runs, when not idle
  bool dispatching = false;   // a lease request for it is with the store
  bool rebooting = false;     // it says it is carrying out a reboot
  int64_t registered_ms = 0;  // when this stream registered
  int64_t last_heard_ms = 0;  // its last message (the lost-host watch counts silence from it)
  // A write of this stream failed: the stream is being closed and nothing more it sends is
  // handled (the agent reconnects and resends from its spool).
  bool broken = false;
  // The kernel build this builder agent runs (store/builds.h; 0 = none), and its run.
  int64_t build_task = 0;
  std::string build_run_id;
  // A build this builder was told to stop (CancelBuild) that it has not yet said ended: until
  // it does (its BuildComplete, CANCELLED or otherwise) it is still busy with it and would
  // refuse another ("busy: building task N"). 0 = none.
  int64_t stopping_build = 0;
  int64_t stopping_since_ms = 0;
  // The stream's writes, in order: one that fails stops the later ones (store/writer.h).
  std::shared_ptr<store::WriteChain> chain = std::make_shared<store::WriteChain>();
};

class Sessions {
 public:
  struct Added {
    Session* session = nullptr;
    // The stream this one replaced: the host's previous boot's, which cannot be alive.
    std::optional<Session> replaced;
  };
  // Adds the session of a new stream. An agent id has one live stream: ALREADY_EXISTS while
  // another stream of the same id is registered (the agent backs off and retries; an
  // Unregister of the old stream frees the id). The exception is a stream from an earlier
  // boot of the host (another boot_id): a host cannot be on two boots at once, so that
  // stream is half-open and is replaced.
  absl::StatusOr<Added> Add(AgentChannel* channel, uint64_t stream, const std::string& agent_id,
                            const v1::HostInfo& host, const std::string& principal);
  // What Add would say, without changing anything.
  absl::Status CheckAdd(const std::string& agent_id, const v1::HostInfo& host) const;
  // Removes the session of `channel` and returns it; nullopt if `channel` has none (e.g. it
  // was replaced).
  std::optional<Session> Remove(AgentChannel* channel);

  Session* ByChannel(AgentChannel* channel);
  Session* Find(const std::string& agent_id);
  const Session* Find(const std::string& agent_id) const;
  // The session of `agent_id` if it is still on stream `stream`.
  Session* FindStream(const std::string& agent_id, uint64_t stream);

  // Marks the session idle (it holds no lease) or busy, keeping the indexes.
  void SetIdle(Session& session, bool idle, int64_t now_ms);
  const std::set<std::string>& idle_ids() const { return idle_ids_; }
  // Idle sessions that serve peers.
  const std::set<std::string>& idle_servers() const { return idle_servers_; }

  // In agent id order.
  std::map<std::string, Session>::iterator begin() { return by_id_.begin(); }
  std::map<std::string, Session>::iterator end() { return by_id_.end(); }
  std::map<std::string, Session>::const_iterator begin() const { return by_id_.begin(); }
  std::map<std::string, Session>::const_iterator end() const { return by_id_.end(); }
  size_t size() const { return by_id_.size(); }

 private:
  void Unindex(const Session& session);

  std::map<std::string, Session> by_id_;
  std::unordered_map<AgentChannel*, std::string> id_by_channel_;
  std::set<std::string> idle_ids_;
  std::set<std::string> idle_servers_;
};

}  // namespace tlbfleet::core
