#pragma once
// The store's bookkeeping that the objects themselves do not hold: when each published
// artifact was last used (for LRU eviction) and which owners (runs) pin it. Kept in one small
// file, <root>/index, rather than in directory mtimes: pins must survive a restart too, mtimes
// move when a human copies or inspects a directory, and one file is replaced atomically.
//
// Text format, one artifact per line after the header, sorted by id:
//
//   tlbfleet-artifact-index 1
//   <id> <last-use unix millis>[ <pin owner>...]
//
// Pure functions: the store does the I/O.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tlbfleet::artifacts {

struct IndexEntry {
  int64_t last_use_millis = 0;
  std::set<std::string> pins;  // owners, e.g. run ids
};
using ArtifactIndex = std::map<std::string, IndexEntry>;

std::string EncodeIndex(const ArtifactIndex& index);
// INVALID_ARGUMENT naming the line on anything EncodeIndex would not write.
absl::StatusOr<ArtifactIndex> ParseIndex(std::string_view text);

// True if `owner` can be a pin owner: 1..200 chars of [A-Za-z0-9._:-] (a run id is).
bool ValidPinOwner(std::string_view owner);

struct EvictionCandidate {
  std::string id;
  uint64_t bytes = 0;
  int64_t last_use_millis = 0;
  bool pinned = false;
};

// The unpinned candidates to evict to free `need` bytes: the shortest run of them, least
// recently used first (ties by id, for a deterministic order), whose bytes add up to at least
// `need`. nullopt when all unpinned candidates together free less. Empty when `need` is 0.
std::optional<std::vector<std::string>> ChooseEvictions(std::vector<EvictionCandidate> candidates,
                                                        uint64_t need);

}  // namespace tlbfleet::artifacts
