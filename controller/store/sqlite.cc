#include "controller/store/sqlite.h"

#include "absl/strings/str_cat.h"

namespace tlbfleet::store {

namespace {

absl::Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  std::string message = absl::StrCat("sqlite ", std::string(what), ": ",
                                     db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    case SQLITE_CONSTRAINT:
      return absl::AlreadyExistsError(message);
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(message);
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace

Statement& Statement::Bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
Statement& Statement::Bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}
Statement& Statement::Bind(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::BindBlob(int index, std::string_view bytes) {
  sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::BindNull(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

absl::StatusOr<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, rc, sqlite3_sql(stmt_));
}

absl::Status Statement::Run() {
  for (;;) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
  }
  // Ready for the next set of bindings (bindings themselves are kept).
  sqlite3_reset(stmt_);
  return absl::OkStatus();
}

std::string Statement::Text(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::string Statement::Blob(int col) const {
  const void* data = sqlite3_column_blob(stmt_, col);
  if (data == nullptr) return "";
  return std::string(static_cast<const char*>(data),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path) {
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status s = SqliteError(raw, rc, absl::StrCat("open ", path));
    sqlite3_close(raw);
    return s;
  }
  std::unique_ptr<Database> db(new Database(raw));
  sqlite3_busy_timeout(raw, 5000);
  absl::Status s =
      db->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
  if (!s.ok()) return s;
  return db;
}

Database::~Database() { sqlite3_close(db_); }

absl::StatusOr<Statement> Database::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db_, rc, absl::StrCat("prepare ", std::string(sql)));
  return Statement(db_, stmt);
}

absl::Status Database::Exec(std::string_view sql) {
  std::string owned(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, owned.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string message = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return SqliteError(nullptr, rc, absl::StrCat(owned.substr(0, 60), ": ", message));
  }
  return absl::OkStatus();
}

}  // namespace tlbfleet::store
