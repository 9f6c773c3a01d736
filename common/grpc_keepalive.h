#pragma once
// HTTP/2 keepalive on the agent stream, both ends. Either side pings every kKeepaliveTimeMs
// and drops the connection when a ping is not answered within kKeepaliveTimeoutMs, so a
// half-open stream (a peer that died without a FIN, a cable pulled, a one-way blackhole) is
// noticed within kHalfOpenDetectionMs instead of TCP's retransmission timeout (~15 min).
// The controller then unregisters the agent (its leases are judged when it comes back, or
// expire), and the agent reconnects with backoff.

#include <grpcpp/grpcpp.h>

namespace tlbfleet {

inline constexpr int kKeepaliveTimeMs = 10'000;
inline constexpr int kKeepaliveTimeoutMs = 10'000;
inline constexpr int kHalfOpenDetectionMs = kKeepaliveTimeMs + kKeepaliveTimeoutMs;

// For the agent's channel to the controller.
inline void SetAgentKeepalive(grpc::ChannelArguments& args) {
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);  // an idle agent still pings
}

// For the controller's server. It accepts the agents' pings (one every kKeepaliveTimeMs,
// with or without data) and pings them itself.
inline void SetControllerKeepalive(grpc::ServerBuilder& builder) {
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             kKeepaliveTimeMs / 2);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);  // never GOAWAY an agent
}

}  // namespace tlbfleet
