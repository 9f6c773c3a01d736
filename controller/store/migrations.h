#pragma once
// Numbered schema migrations. The database's PRAGMA user_version is the number of the last
// migration applied; Migrate applies the missing ones in order, each in its own transaction.
// Never edit a migration that has shipped: add a new one.

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "controller/store/sqlite.h"

namespace tlbfleet::store {

struct Migration {
  int version;
  std::string_view description;
  std::string_view sql;
};

const std::vector<Migration>& Migrations();
int LatestSchemaVersion();

absl::StatusOr<int> SchemaVersion(Database& db);

// Brings the schema up to `target` (default: latest). FAILED_PRECONDITION when the database
// is newer than this binary knows (never downgrade or touch such a file).
absl::Status Migrate(Database& db, int target = -1);

}  // namespace tlbfleet::store
