#pragma once
// The tables of authentication: API tokens (only a salted hash of each secret), browser
// sessions (only a hash of each cookie value) and the audit log of mutating requests. They
// live in the controller's one SQLite file (migration 8) but on a connection of their own,
// so checking a credential never waits for the run store's lock.
//
// Thread-safe: every method takes the store's mutex. Hashing and token formats are not
// this unit's business (controller/api/credentials.h); it stores what it is given.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "controller/store/sqlite.h"
#include "tlbfleet/v1/auth.pb.h"

namespace tlbfleet::store {

struct TokenRecord {
  std::string id;  // the public part of the token
  std::string name;
  v1::Role role = v1::ROLE_UNSPECIFIED;
  std::string salt;  // bytes
  std::string hash;  // bytes
  int64_t created_ms = 0;
  int64_t expires_ms = 0;  // 0 = never
  int64_t revoked_ms = 0;  // 0 = not revoked
  int64_t last_used_ms = 0;
};

struct SessionRecord {
  std::string id_hash;  // bytes
  std::string token_id;
  int64_t created_ms = 0;
  int64_t expires_ms = 0;
  std::string source;
};

// "viewer", "operator", "admin", "agent"; "" for ROLE_UNSPECIFIED.
std::string RoleName(v1::Role role);
// The role named `name`, or ROLE_UNSPECIFIED when there is none.
v1::Role RoleFromName(const std::string& name);

class AuthStore {
 public:
  // Opens the database at `path` (creating and migrating it if needed).
  static absl::StatusOr<std::unique_ptr<AuthStore>> Open(const std::string& path);

  // --- tokens ---
  // ALREADY_EXISTS naming the name when a token (even a revoked one) has it: names are what
  // the audit log shows, so they are never reused.
  absl::Status InsertToken(const TokenRecord& token);
  absl::StatusOr<std::optional<TokenRecord>> FindToken(const std::string& id);
  absl::StatusOr<std::vector<TokenRecord>> ListTokens();
  // Whether any token was ever created (revoked ones count: revoking every token must not
  // reopen a controller to unauthenticated requests).
  absl::StatusOr<bool> AnyToken();
  // Revokes the token with this name (or id) and ends its sessions. NOT_FOUND when there is
  // none; revoking a revoked token is OK and keeps the first time.
  absl::StatusOr<TokenRecord> RevokeToken(const std::string& name_or_id, int64_t now_ms);
  absl::Status TouchToken(const std::string& id, int64_t now_ms);

  // --- sessions ---
  absl::Status InsertSession(const SessionRecord& session);
  absl::StatusOr<std::optional<SessionRecord>> FindSession(const std::string& id_hash);
  absl::Status DeleteSession(const std::string& id_hash);
  // Returns how many were deleted.
  absl::StatusOr<int64_t> DeleteExpiredSessions(int64_t now_ms);

  // --- audit ---
  // Stores `entry` (its id is assigned) and returns the id.
  absl::StatusOr<uint64_t> AppendAudit(const v1::AuditEntry& entry);
  // The newest `limit` entries with id > after_id, oldest first.
  absl::StatusOr<std::vector<v1::AuditEntry>> ListAudit(uint64_t after_id, uint32_t limit);

 private:
  explicit AuthStore(std::unique_ptr<Database> db) : db_(std::move(db)) {}

  absl::Mutex mu_;
  std::unique_ptr<Database> db_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tlbfleet::store
