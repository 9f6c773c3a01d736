#include "agent/runner/paths.h"

#include "absl/strings/str_cat.h"

namespace tlbfleet::agent::paths {

std::string LockFile(std::string_view state_dir) {
  return absl::StrCat(std::string(state_dir), "/lock");
}

std::string AgentIdFile(std::string_view state_dir) {
  return absl::StrCat(std::string(state_dir), "/agent-id");
}

std::string CeilingJournalFile(std::string_view state_dir) {
  return absl::StrCat(std::string(state_dir), "/ceiling-journal");
}

std::string CeilingDegradedFile(std::string_view state_dir) {
  return absl::StrCat(std::string(state_dir), "/ceiling-degraded");
}

std::string SpoolDir(std::string_view state_dir) {
  return absl::StrCat(std::string(state_dir), "/spool");
}

std::string SpoolFile(std::string_view state_dir, std::string_view lease_id) {
  return absl::StrCat(SpoolDir(state_dir), "/", std::string(lease_id), std::string(kSpoolSuffix));
}

std::string CorruptSpoolDir(std::string_view state_dir) {
  return absl::StrCat(SpoolDir(state_dir), "/corrupt");
}

bool ValidLeaseId(std::string_view lease_id) {
  if (lease_id.empty() || lease_id.size() > 200 || lease_id[0] == '.') return false;
  for (char c : lease_id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace tlbfleet::agent::paths
