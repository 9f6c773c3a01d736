#include "controller/core/reboots.h"

#include "absl/strings/str_cat.h"

namespace tlbfleet::core {

void RebootCoordinator::Restore(const std::vector<store::RebootRecord>& records) {
  for (store::RebootRecord record : records) {
    record.pending = false;
    records_[record.agent_id] = std::move(record);
  }
}

std::optional<store::RebootRecord> RebootCoordinator::Get(const std::string& agent_id) const {
  auto it = records_.find(agent_id);
  if (it == records_.end()) return std::nullopt;
  return it->second;
}

RebootCoordinator::Return RebootCoordinator::OnRegister(const std::string& agent_id,
                                                        const std::string& boot_id) {
  Return back;
  auto it = records_.find(agent_id);
  if (it == records_.end()) return back;
  back.run_id = it->second.run_id;
  back.from_boot_id = it->second.boot_id;
  if (it->second.boot_id != boot_id) {
    back.kind = Return::Kind::kRebooted;
    records_.erase(it);
  } else {
    back.kind = Return::Kind::kSameBoot;
    it->second.pending = false;  // a new stream: asked again if it still needs a fresh boot
  }
  return back;
}

RebootCoordinator::Decision RebootCoordinator::Request(const std::string& agent_id,
                                                       const std::string& hostname,
                                                       const std::string& boot_id,
                                                       const std::string& run_id, int64_t now_ms) {
  store::RebootRecord& record = records_[agent_id];
  if (record.boot_id == boot_id) {
    ++record.times;
  } else {
    record = store::RebootRecord{};
    record.agent_id = agent_id;
    record.boot_id = boot_id;
  }
  Decision decision;
  if (record.times >= 2) {
    records_.erase(agent_id);
    decision.run_error = absl::StrCat("host ", hostname, " did not reboot: it came back on boot ",
                                      boot_id, " after two reboot requests");
    return decision;
  }
  record.run_id = run_id;
  record.pending = true;
  record.requested_ms = now_ms;
  record.deadline_ms = now_ms + timeout_ms_;
  record.return_by_ms = now_ms + return_timeout_ms_;
  decision.ask = true;
  return decision;
}

bool RebootCoordinator::Pending(const std::string& agent_id) const {
  auto it = records_.find(agent_id);
  return it != records_.end() && it->second.pending;
}

bool RebootCoordinator::OnRebooting(const std::string& agent_id) {
  auto it = records_.find(agent_id);
  if (it == records_.end()) return false;
  it->second.pending = true;
  return true;
}

std::optional<std::string> RebootCoordinator::OnCannotReboot(const std::string& agent_id) {
  auto it = records_.find(agent_id);
  if (it == records_.end() || !it->second.pending) return std::nullopt;
  it->second.pending = false;
  return it->second.run_id;
}

std::vector<RebootCoordinator::Overdue> RebootCoordinator::TakeOverdue(
    int64_t now_ms, const std::function<std::optional<std::string>(const std::string&)>& boot_of) {
  std::vector<Overdue> overdue;
  for (auto it = records_.begin(); it != records_.end();) {
    const store::RebootRecord& r = it->second;
    const std::optional<std::string> boot = boot_of(r.agent_id);
    std::optional<Overdue::Kind> kind;
    if (boot.has_value() && *boot == r.boot_id && r.pending && now_ms >= r.deadline_ms) {
      kind = Overdue::Kind::kStillUp;
    } else if (!boot.has_value() && now_ms >= r.return_by_ms) {
      kind = Overdue::Kind::kNotBack;
    }
    if (kind.has_value()) {
      overdue.push_back({*kind, r.agent_id, r.run_id, r.boot_id});
      it = records_.erase(it);
    } else {
      ++it;
    }
  }
  return overdue;
}

void RebootCoordinator::OnDisconnect(const std::string& agent_id) {
  auto it = records_.find(agent_id);
  if (it != records_.end()) it->second.pending = false;
}

std::vector<std::string> RebootCoordinator::AskedAgentIds() const {
  std::vector<std::string> ids;
  for (const auto& [id, record] : records_) ids.push_back(id);
  return ids;
}

}  // namespace tlbfleet::core
