#pragma once
// What the agent (running as root) accepts from the controller. An assignment is checked
// field by field before anything runs: a compromised or buggy controller, or a forged
// stream, must not be able to make the agent run something outside its own catalogue, pass
// shell syntax anywhere, exhaust it with huge messages, or aim netperf at a host its
// operator did not allow. A refused assignment is answered FAILED with the reason (the
// agent logs it); nothing is started.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::agent {

// An IPv4 or IPv6 network, "10.1.0.0/16", "fd00::/8", or one address ("192.0.2.7").
class Network {
 public:
  // INVALID_ARGUMENT (without a field name) for anything else.
  static absl::StatusOr<Network> Parse(absl::string_view text);
  // `address` is an IP literal (CanonicalAddress); false for anything else.
  bool Contains(absl::string_view address) const;
  std::string ToString() const;

 private:
  int family_ = 0;
  unsigned char bytes_[16] = {};
  int prefix_ = 0;
};

// Loopback, plus the networks of this host's interfaces (getifaddrs): where an agent's peers
// normally are. --peer-network replaces it.
std::vector<Network> DefaultPeerNetworks();

struct AssignmentPolicy {
  // Workload names the agent runs (its catalogue); checked against their schemas.
  std::vector<std::string> workloads;
  // Where a parameter resolved to a peer (netperf's `server`) may point.
  std::vector<Network> peer_networks;
};

// Limits on what one assignment may carry.
inline constexpr size_t kMaxAssignmentBytes = 64 * 1024;
inline constexpr int kMaxParams = 64;
inline constexpr int kMaxMonitors = 16;
inline constexpr size_t kMaxNameLength = 128;         // ids, names, keys
inline constexpr size_t kMaxValueLength = 16 * 1024;  // parameter values (flush_sizes lists)
inline constexpr uint32_t kMaxTimeoutSeconds = 7 * 24 * 3600;
inline constexpr uint32_t kMaxBootIndex = 1000;
inline constexpr uint32_t kMaxIteration = 1'000'000;

// `value` quoted for a log line or an error: at most 40 characters, control and non-ASCII
// bytes as \xNN, so nothing a controller sends can forge log lines.
std::string Shown(absl::string_view value);

// OK, or INVALID_ARGUMENT naming the field ("params.server: ...").
absl::Status CheckAssignment(const v1::JobAssignment& assignment, const AssignmentPolicy& policy);

}  // namespace tlbfleet::agent
