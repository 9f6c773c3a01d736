// Fuzzes the agent's checks of what the controller sends (agent/runner/assignment_check.h):
// the input is a serialized tlbfleet.v1.JobAssignment. Any message must be accepted or refused
// with INVALID_ARGUMENT naming a field, never crash; an accepted one carries no shell
// metacharacter or control byte in the string fields that reach a command line, and Shown()
// (what the agent logs of it) is short and printable.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "agent/runner/assignment_check.h"
#include "agent/workloads/workload.h"
#include "tlbfleet/v1/agent.pb.h"

namespace {

const tlbfleet::agent::AssignmentPolicy& Policy() {
  static const tlbfleet::agent::AssignmentPolicy* policy = [] {
    tlbfleet::workloads::LinkAllWorkloads();
    auto* p = new tlbfleet::agent::AssignmentPolicy;
    p->workloads = tlbfleet::workloads::Registry::Get().Names();
    p->peer_networks.push_back(*tlbfleet::agent::Network::Parse("127.0.0.0/8"));
    p->peer_networks.push_back(*tlbfleet::agent::Network::Parse("10.0.2.0/24"));
    return p;
  }();
  return *policy;
}

bool Printable(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tlbfleet::v1::JobAssignment assignment;
  if (!assignment.ParseFromArray(data, static_cast<int>(size))) return 0;
  const absl::Status status = tlbfleet::agent::CheckAssignment(assignment, Policy());
  if (!status.ok()) {
    if (!absl::IsInvalidArgument(status)) std::abort();
  } else {
    for (const auto& [key, value] : assignment.params()) {
      for (const std::string* s : {&key, &value}) {
        if (s->find_first_of(";&|`$<>\\\"'\n\r") != std::string::npos) std::abort();
      }
    }
  }
  const std::string shown = tlbfleet::agent::Shown(assignment.benchmark());
  if (!Printable(shown) || shown.size() > 4 * 40 + 8) std::abort();
  return 0;
}
