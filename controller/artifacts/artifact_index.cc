#include "controller/artifacts/artifact_index.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/artifacts/manifest.h"

namespace tlbfleet::artifacts {

namespace {

constexpr absl::string_view kIndexHeader = "tlbfleet-artifact-index 1";

}  // namespace

std::string EncodeIndex(const ArtifactIndex& index) {
  std::string out = absl::StrCat(kIndexHeader, "\n");
  for (const auto& [id, entry] : index) {
    absl::StrAppend(&out, id, " ", entry.last_use_millis);
    for (const std::string& owner : entry.pins) absl::StrAppend(&out, " ", owner);
    out += '\n';
  }
  return out;
}

absl::StatusOr<ArtifactIndex> ParseIndex(std::string_view std_text) {
  const absl::string_view text(std_text.data(), std_text.size());
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.empty() || lines.front() != kIndexHeader) {
    return absl::InvalidArgumentError(
        absl::StrCat("index: first line is not \"", kIndexHeader, "\""));
  }
  ArtifactIndex index;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<absl::string_view> parts = absl::StrSplit(lines[i], ' ');
    IndexEntry entry;
    if (parts.size() < 2 || !ValidArtifactId(std::string(parts[0])) ||
        !absl::SimpleAtoi(parts[1], &entry.last_use_millis)) {
      return absl::InvalidArgumentError(
          absl::StrCat("index line ", i + 1, ": not \"<id> <millis> [owner...]\""));
    }
    for (size_t p = 2; p < parts.size(); ++p) {
      if (!ValidPinOwner(std::string(parts[p]))) {
        return absl::InvalidArgumentError(
            absl::StrCat("index line ", i + 1, ": bad pin owner \"", parts[p], "\""));
      }
      entry.pins.emplace(parts[p]);
    }
    if (!index.emplace(std::string(parts[0]), std::move(entry)).second) {
      return absl::InvalidArgumentError(absl::StrCat("index line ", i + 1, ": id listed twice"));
    }
  }
  return index;
}

bool ValidPinOwner(std::string_view owner) {
  if (owner.empty() || owner.size() > 200) return false;
  return std::all_of(owner.begin(), owner.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '-';
  });
}

std::optional<std::vector<std::string>> ChooseEvictions(std::vector<EvictionCandidate> candidates,
                                                        uint64_t need) {
  std::vector<std::string> victims;
  if (need == 0) return victims;
  std::sort(candidates.begin(), candidates.end(),
            [](const EvictionCandidate& a, const EvictionCandidate& b) {
              if (a.last_use_millis != b.last_use_millis) {
                return a.last_use_millis < b.last_use_millis;
              }
              return a.id < b.id;
            });
  uint64_t freed = 0;
  for (const EvictionCandidate& c : candidates) {
    if (c.pinned) continue;
    victims.push_back(c.id);
    freed += c.bytes;
    if (freed >= need) return victims;
  }
  return std::nullopt;
}

}  // namespace tlbfleet::artifacts
