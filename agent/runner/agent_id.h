#pragma once
// The agent's persistent identity: 128 random bits as 32 lowercase hex digits in
// <state-dir>/agent-id, created once. The controller keys hosts by it, so it must survive
// restarts and must never change silently.

#include <string>

#include "absl/status/statusor.h"

namespace tlbfleet::agent {

// Returns the id stored in the state dir, creating the dir and the id on first start.
// Creation is atomic (temp file + fsync + link(2) + dir fsync): two agents racing on one
// state dir agree on one id. A file that exists but does not hold a valid id gives DATA_LOSS
// (a human decides: restore it, or delete it to register as a new host).
absl::StatusOr<std::string> LoadOrCreateAgentId(const std::string& state_dir);

}  // namespace tlbfleet::agent
