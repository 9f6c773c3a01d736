#pragma once
// The core's handle on one agent stream, implemented by the transport (controller/api's
// gRPC AgentStream) and by fakes in tests.

#include <string>

#include "absl/status/status.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::core {

class AgentChannel {
 public:
  virtual ~AgentChannel() = default;
  // Never blocks; messages are queued, and dropped once the stream is closing.
  virtual void Send(const v1::ControllerMessage& message) = 0;
  // Where the stream comes from ("ipv4:10.0.0.5:41234"), for logs.
  virtual std::string Peer() const = 0;
  // Ends the stream with `status` once what is queued has been sent; the transport then calls
  // Controller::Unregister. Never blocks; later calls are ignored.
  virtual void Close(const absl::Status& status) = 0;
};

}  // namespace tlbfleet::core
