#pragma once
// The hub agents talk to: one bidirectional stream per agent (AgentService.Connect), as the
// transport sees it. Behind it the core keeps the sessions, dispatches jobs, takes samples and
// completions to the store, coordinates reboots and watches for lost hosts; the transport only
// hands over what arrives and closes what the hub closes.
//
// Thread-safe. Obtained from Controller::agents() (controller.h).

#include <string>

#include "absl/status/status.h"
#include "controller/core/agent_channel.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::core {

class AgentHub {
 public:
  virtual ~AgentHub() = default;

  // Called with the first message of a stream. `principal` is who the transport
  // authenticated ("" in development mode). On success the channel has been sent a Welcome;
  // on error the caller sends Reject with the message and closes the stream:
  //   FAILED_PRECONDITION  another protocol version
  //   INVALID_ARGUMENT     no agent id
  //   PERMISSION_DENIED    the agent id is bound to another principal (the first one to
  //                        register it, stored with the host)
  //   ALREADY_EXISTS       the agent id has a live stream; the agent backs off and retries.
  //                        (A stream from an earlier boot of the host is replaced instead.)
  // `channel` is not owned and must stay valid until Unregister(channel) returns.
  virtual absl::Status Register(AgentChannel* channel, const v1::Hello& hello,
                                const std::string& principal = "") = 0;
  // Every later message of a registered stream, in order.
  virtual void OnMessage(AgentChannel* channel, v1::AgentMessage message) = 0;
  // The stream closed. Frees the agent id for its next stream.
  virtual void Unregister(AgentChannel* channel) = 0;
};

}  // namespace tlbfleet::core
