#pragma once
// Store::Lease in the shape the store tests use: the leased assignment or nullopt, and the
// reboot reason through a pointer.

#include <optional>
#include <string>

#include "controller/store/store.h"

namespace tlbfleet::store {

inline absl::StatusOr<std::optional<v1::JobAssignment>> LeaseNext(
    Store& store, const std::string& run_id, const std::string& agent_id, int64_t now_ms,
    int64_t lease_ms, SlotExpander expander = nullptr, const std::string& boot_id = "",
    std::string* reboot_reason = nullptr) {
  LeaseRequest request;
  request.run_ids = {run_id};
  request.agent_id = agent_id;
  request.boot_id = boot_id;
  request.now_ms = now_ms;
  request.lease_ms = lease_ms;
  if (expander) {
    request.expander_for = [expander](const std::string&) { return expander; };
  }
  absl::StatusOr<LeaseResult> result = store.Lease(request);
  if (!result.ok()) return result.status();
  if (result->kind == LeaseResult::Kind::kNeedsReboot && reboot_reason != nullptr) {
    *reboot_reason = result->reboot_reason;
  }
  if (result->kind != LeaseResult::Kind::kLeased) return std::optional<v1::JobAssignment>();
  return std::optional<v1::JobAssignment>(std::move(result->assignment));
}

}  // namespace tlbfleet::store
