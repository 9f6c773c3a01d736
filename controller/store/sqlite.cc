#include "controller/store/sqlite.h"

#include <mutex>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace tlbfleet::store {

namespace {

constexpr char kStorageFailure[] = "tlbfleet.store.StorageFailure";

absl::Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  std::string message = absl::StrCat("sqlite ", std::string(what), ": ",
                                     db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return StorageFailure(absl::StatusCode::kUnavailable, message);
    case SQLITE_CONSTRAINT:
      return absl::AlreadyExistsError(message);
    case SQLITE_FULL:
      return StorageFailure(absl::StatusCode::kResourceExhausted,
                            absl::StrCat(message, " (the disk holding the database is full)"));
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
      return StorageFailure(absl::StatusCode::kPermissionDenied, message);
    case SQLITE_IOERR:
    case SQLITE_NOMEM:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_PROTOCOL:
      return StorageFailure(absl::StatusCode::kInternal, message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace

absl::Status StorageFailure(absl::StatusCode code, std::string_view message) {
  absl::Status status(code, std::string(message));
  status.SetPayload(kStorageFailure, absl::Cord("1"));
  return status;
}

bool IsStorageFailure(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kStorageFailure).has_value();
}

Statement::~Statement() {
  if (stmt_ == nullptr) return;
  if (cache_ != nullptr) {
    cache_->Recycle(stmt_);
  } else {
    sqlite3_finalize(stmt_);
  }
}

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
Statement& Statement::BindUncopied(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
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

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path, Mode mode) {
  // Before SQLite initialises (the first open): no memory statistics, so that an allocation
  // does not take SQLite's global memory mutex (6 % of the store writer's time under load,
  // docs/performance.md). Nothing reads them. SQLITE_MISUSE when something in the process
  // initialised SQLite first: harmless, the statistics then stay on.
  static std::once_flag configured;
  std::call_once(configured, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
  sqlite3* raw = nullptr;
  const int flags =
      mode == Mode::kWriter ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READWRITE;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status s = SqliteError(raw, rc, absl::StrCat("open ", path));
    sqlite3_close(raw);
    if (mode == Mode::kWriter && (rc & 0xff) == SQLITE_CANTOPEN) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create or open ", path, " for writing (", s.message(),
                       "): is its directory missing, read-only or not writable by this user?"));
    }
    return s;
  }
  std::unique_ptr<Database> db(new Database(raw));
  sqlite3_busy_timeout(raw, 5000);
  if (mode == Mode::kWriter && sqlite3_db_readonly(raw, "main") == 1) {
    // SQLite quietly opens a file it cannot write read-only; every write would then fail.
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is read-only (a read-only file system, or no write permission)"));
  }
  // synchronous=FULL: the WAL is fsync'd at every COMMIT, so what the controller acked (and
  // the agent then deleted from its spool) survives a power cut. NORMAL would only survive
  // a crash of the process. The writer keeps up to 64 MiB of pages (SQLite's default is
  // 2 MiB): under load its jobs and samples indexes outgrow 2 MiB, and every miss is a
  // pread (a quarter of the writer's time under 1,000 busy agents).
  absl::Status s =
      db->Exec(mode == Mode::kWriter ? "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                                       " PRAGMA foreign_keys=ON; PRAGMA cache_size=-65536;"
                                     : "PRAGMA query_only=ON; PRAGMA foreign_keys=ON;");
  if (s.ok() && mode == Mode::kWriter) {
    // The WAL and its index are files next to the database: a writable file in a directory
    // that is not would fail at the first write; find out now.
    s = db->Exec("BEGIN IMMEDIATE; COMMIT;");
  }
  if (!s.ok() && mode == Mode::kWriter && IsStorageFailure(s)) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " cannot be written (", s.message(),
        "): a read-only file system, or a directory this user may not create files in?"));
  }
  if (!s.ok()) return s;
  return db;
}

Database::~Database() {
  for (auto& [sql, stmts] : idle_) {
    for (sqlite3_stmt* stmt : stmts) sqlite3_finalize(stmt);
  }
  sqlite3_close(db_);
}

void Database::Recycle(sqlite3_stmt* stmt) {
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
  std::vector<sqlite3_stmt*>& idle = idle_[sqlite3_sql(stmt)];
  if (idle.empty()) {
    idle.push_back(stmt);
  } else {
    sqlite3_finalize(stmt);  // a second copy was only needed while both were in use
  }
}

absl::StatusOr<Statement> Database::Prepare(std::string_view sql) {
  auto it = idle_.find(std::string(sql));
  if (it != idle_.end() && !it->second.empty()) {
    sqlite3_stmt* stmt = it->second.back();
    it->second.pop_back();
    return Statement(db_, stmt, this);
  }
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db_, rc, absl::StrCat("prepare ", std::string(sql)));
  return Statement(db_, stmt, this);
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
