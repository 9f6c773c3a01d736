#pragma once
// Online backup of the controller's SQLite file with SQLite's backup API
// (`tlbfleet-controller backup`, docs/operations.md#backup). Safe while a controller writes
// the file: the copy is a consistent snapshot of one moment, read in one read transaction,
// which in WAL mode never blocks the controller's writers.
//
// The copy is written to a temporary file beside `destination`, switched out of WAL mode
// (one self-contained file), checked with PRAGMA integrity_check, fsync'd and renamed into
// place: `destination` is either absent or a complete, checked database. Restoring is
// starting a controller with `--db` on the copy (or moving it over the stopped controller's
// file).

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tlbfleet::store {

struct BackupInfo {
  int64_t pages = 0;
  int64_t bytes = 0;
  int schema_version = 0;
};

// NOT_FOUND: `source` does not exist; ALREADY_EXISTS: `destination` does; INVALID_ARGUMENT:
// `source` is not a tlbfleet database (no schema version); others: SQLite or file errors,
// with the path.
absl::StatusOr<BackupInfo> BackupDatabase(const std::string& source,
                                          const std::string& destination);

}  // namespace tlbfleet::store
