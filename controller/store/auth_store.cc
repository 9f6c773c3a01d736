#include "controller/store/auth_store.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "controller/store/migrations.h"

namespace tlbfleet::store {

std::string RoleName(v1::Role role) {
  switch (role) {
    case v1::ROLE_VIEWER:
      return "viewer";
    case v1::ROLE_OPERATOR:
      return "operator";
    case v1::ROLE_ADMIN:
      return "admin";
    case v1::ROLE_AGENT:
      return "agent";
    default:
      return "";
  }
}

v1::Role RoleFromName(const std::string& name) {
  for (v1::Role role : {v1::ROLE_VIEWER, v1::ROLE_OPERATOR, v1::ROLE_ADMIN, v1::ROLE_AGENT}) {
    if (RoleName(role) == name) return role;
  }
  return v1::ROLE_UNSPECIFIED;
}

namespace {

constexpr char kTokenColumns[] =
    "id, name, role, salt, hash, created_ms, expires_ms, revoked_ms, last_used_ms";

TokenRecord TokenFromRow(const Statement& row) {
  TokenRecord t;
  t.id = row.Text(0);
  t.name = row.Text(1);
  t.role = RoleFromName(row.Text(2));
  t.salt = row.Blob(3);
  t.hash = row.Blob(4);
  t.created_ms = row.Int(5);
  t.expires_ms = row.IsNull(6) ? 0 : row.Int(6);
  t.revoked_ms = row.IsNull(7) ? 0 : row.Int(7);
  t.last_used_ms = row.IsNull(8) ? 0 : row.Int(8);
  return t;
}

std::optional<int64_t> NullIfZero(int64_t v) {
  return v == 0 ? std::nullopt : std::optional<int64_t>(v);
}

}  // namespace

absl::StatusOr<std::unique_ptr<AuthStore>> AuthStore::Open(const std::string& path) {
  TLB_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path));
  TLB_RETURN_IF_ERROR(Migrate(*db));
  return std::unique_ptr<AuthStore>(new AuthStore(std::move(db)));
}

absl::Status AuthStore::InsertToken(const TokenRecord& token) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement exists, db_->Prepare("SELECT 1 FROM api_tokens WHERE name = ?1"));
  exists.Bind(1, token.name);
  TLB_ASSIGN_OR_RETURN(bool taken, exists.Step());
  if (taken) {
    return absl::AlreadyExistsError(
        absl::StrCat("name: a token named \"", token.name, "\" exists (names are never reused)"));
  }
  TLB_ASSIGN_OR_RETURN(Statement insert,
                       db_->Prepare(absl::StrCat("INSERT INTO api_tokens (", kTokenColumns,
                                                 ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")));
  return insert.Bind(1, token.id)
      .Bind(2, token.name)
      .Bind(3, RoleName(token.role))
      .BindBlob(4, token.salt)
      .BindBlob(5, token.hash)
      .Bind(6, token.created_ms)
      .Bind(7, NullIfZero(token.expires_ms))
      .Bind(8, NullIfZero(token.revoked_ms))
      .Bind(9, NullIfZero(token.last_used_ms))
      .Run();
}

absl::StatusOr<std::optional<TokenRecord>> AuthStore::FindToken(const std::string& id) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(
      Statement stmt,
      db_->Prepare(absl::StrCat("SELECT ", kTokenColumns, " FROM api_tokens WHERE id = ?1")));
  stmt.Bind(1, id);
  TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<TokenRecord>();
  return std::optional<TokenRecord>(TokenFromRow(stmt));
}

absl::StatusOr<std::vector<TokenRecord>> AuthStore::ListTokens() {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt,
                       db_->Prepare(absl::StrCat("SELECT ", kTokenColumns,
                                                 " FROM api_tokens ORDER BY created_ms, name")));
  std::vector<TokenRecord> tokens;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    tokens.push_back(TokenFromRow(stmt));
  }
  return tokens;
}

absl::StatusOr<bool> AuthStore::AnyToken() {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt, db_->Prepare("SELECT EXISTS (SELECT 1 FROM api_tokens)"));
  TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
  return row && stmt.Int(0) != 0;
}

absl::StatusOr<TokenRecord> AuthStore::RevokeToken(const std::string& name_or_id, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  TokenRecord token;
  absl::Status s = InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(Statement find,
                         db_->Prepare(absl::StrCat("SELECT ", kTokenColumns,
                                                   " FROM api_tokens WHERE name = ?1 OR id = ?1")));
    find.Bind(1, name_or_id);
    TLB_ASSIGN_OR_RETURN(bool row, find.Step());
    if (!row) {
      return absl::NotFoundError(absl::StrCat("no token named \"", name_or_id, "\""));
    }
    token = TokenFromRow(find);
    if (token.revoked_ms == 0) {
      token.revoked_ms = now_ms;
      TLB_ASSIGN_OR_RETURN(Statement upd,
                           db_->Prepare("UPDATE api_tokens SET revoked_ms = ?2 WHERE id = ?1"));
      TLB_RETURN_IF_ERROR(upd.Bind(1, token.id).Bind(2, now_ms).Run());
    }
    TLB_ASSIGN_OR_RETURN(Statement sessions,
                         db_->Prepare("DELETE FROM sessions WHERE token_id = ?1"));
    return sessions.Bind(1, token.id).Run();
  });
  if (!s.ok()) return s;
  return token;
}

absl::Status AuthStore::TouchToken(const std::string& id, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt,
                       db_->Prepare("UPDATE api_tokens SET last_used_ms = ?2 WHERE id = ?1"));
  return stmt.Bind(1, id).Bind(2, now_ms).Run();
}

absl::Status AuthStore::InsertSession(const SessionRecord& session) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt,
                       db_->Prepare("INSERT INTO sessions (id_hash, token_id, created_ms,"
                                    " expires_ms, source) VALUES (?1, ?2, ?3, ?4, ?5)"));
  return stmt.BindBlob(1, session.id_hash)
      .Bind(2, session.token_id)
      .Bind(3, session.created_ms)
      .Bind(4, session.expires_ms)
      .Bind(5, session.source)
      .Run();
}

absl::StatusOr<std::optional<SessionRecord>> AuthStore::FindSession(const std::string& id_hash) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt,
                       db_->Prepare("SELECT id_hash, token_id, created_ms, expires_ms, source"
                                    " FROM sessions WHERE id_hash = ?1"));
  stmt.BindBlob(1, id_hash);
  TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<SessionRecord>();
  SessionRecord s;
  s.id_hash = stmt.Blob(0);
  s.token_id = stmt.Text(1);
  s.created_ms = stmt.Int(2);
  s.expires_ms = stmt.Int(3);
  s.source = stmt.Text(4);
  return std::optional<SessionRecord>(std::move(s));
}

absl::Status AuthStore::DeleteSession(const std::string& id_hash) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt, db_->Prepare("DELETE FROM sessions WHERE id_hash = ?1"));
  return stmt.BindBlob(1, id_hash).Run();
}

absl::StatusOr<int64_t> AuthStore::DeleteExpiredSessions(int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt, db_->Prepare("DELETE FROM sessions WHERE expires_ms <= ?1"));
  TLB_RETURN_IF_ERROR(stmt.Bind(1, now_ms).Run());
  return db_->Changes();
}

absl::StatusOr<uint64_t> AuthStore::AppendAudit(const v1::AuditEntry& e) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt,
                       db_->Prepare("INSERT INTO audit (time_ms, principal, role, action, target,"
                                    " source, outcome, detail)"
                                    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
  TLB_RETURN_IF_ERROR(stmt.Bind(1, e.time_unix_ms())
                          .Bind(2, e.principal())
                          .Bind(3, RoleName(e.role()))
                          .Bind(4, e.action())
                          .Bind(5, e.target())
                          .Bind(6, e.source())
                          .Bind(7, e.outcome())
                          .Bind(8, e.detail())
                          .Run());
  return static_cast<uint64_t>(db_->LastInsertId());
}

absl::StatusOr<std::vector<v1::AuditEntry>> AuthStore::ListAudit(uint64_t after_id,
                                                                 uint32_t limit) {
  absl::MutexLock lock(&mu_);
  // The newest `limit` after `after_id`, returned oldest first.
  TLB_ASSIGN_OR_RETURN(
      Statement stmt,
      db_->Prepare("SELECT * FROM (SELECT id, time_ms, principal, role, action, target, source,"
                   " outcome, detail FROM audit WHERE id > ?1 ORDER BY id DESC LIMIT ?2)"
                   " ORDER BY id"));
  stmt.Bind(1, static_cast<int64_t>(after_id)).Bind(2, static_cast<int64_t>(limit));
  std::vector<v1::AuditEntry> entries;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    v1::AuditEntry& e = entries.emplace_back();
    e.set_id(static_cast<uint64_t>(stmt.Int(0)));
    e.set_time_unix_ms(stmt.Int(1));
    e.set_principal(stmt.Text(2));
    e.set_role(RoleFromName(stmt.Text(3)));
    e.set_action(stmt.Text(4));
    e.set_target(stmt.Text(5));
    e.set_source(stmt.Text(6));
    e.set_outcome(stmt.Text(7));
    e.set_detail(stmt.Text(8));
  }
  return entries;
}

}  // namespace tlbfleet::store
