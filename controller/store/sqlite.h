#pragma once
// A thin RAII layer over the sqlite3 C API: a connection and prepared statements with
// 1-based binding. Not thread-safe: one thread uses a connection at a time (the store's
// writer thread, or one reader of its pool).

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace tlbfleet::store {

class Database;

// A prepared statement. Statements come from the connection's cache (Database::Prepare) and
// go back to it, reset, when destroyed; they must not outlive their Database.
class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt, Database* cache = nullptr)
      : db_(db), stmt_(stmt), cache_(cache) {}
  Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_), cache_(other.cache_) {
    other.stmt_ = nullptr;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, double value);
  Statement& Bind(int index, std::string_view text);
  // Text SQLite does not copy: `text` must outlive the statement's next Run/Step (the hot
  // loop of sample ingest, whose batch outlives its inserts; a copy per column was 7 % of
  // the writer's time under load, docs/performance.md).
  Statement& BindUncopied(int index, std::string_view text);
  Statement& BindBlob(int index, std::string_view bytes);
  Statement& BindNull(int index);
  Statement& Bind(int index, std::optional<int64_t> value) {
    return value ? Bind(index, *value) : BindNull(index);
  }

  // true while a row is available; false when done. Errors become a status.
  absl::StatusOr<bool> Step();
  // Runs to completion, ignoring rows.
  absl::Status Run();
  // Ready to run again with new bindings (bindings themselves are kept).
  void Reset() { sqlite3_reset(stmt_); }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const;
  std::string Blob(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  Database* cache_;
};

class Database {
 public:
  enum class Mode {
    kWriter,  // creates the file if missing; refuses a database it cannot write
    kReader,  // an existing database, for queries only (PRAGMA query_only)
  };
  // Opens `path` in WAL mode with synchronous=FULL: a COMMIT that returned is on disk (the
  // WAL is fsync'd at every commit), so an acknowledgement the controller sends after it
  // survives a power cut. A writer on a file or directory it cannot write (read-only file
  // system, permissions) is FAILED_PRECONDITION saying so.
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path,
                                                        Mode mode = Mode::kWriter);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // A statement of `sql`, prepared once per connection and reused (the cache keeps one
  // idle copy per text; a text in use twice at once is prepared again).
  absl::StatusOr<Statement> Prepare(std::string_view sql);
  // Executes one or more statements without parameters.
  absl::Status Exec(std::string_view sql);
  int64_t Changes() const { return sqlite3_changes64(db_); }
  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  // Inside a transaction (false after COMMIT, ROLLBACK, or a rollback SQLite did on its own
  // after an I/O error or a full disk).
  bool InOpenTransaction() const { return sqlite3_get_autocommit(db_) == 0; }
  sqlite3* raw() { return db_; }

 private:
  friend class Statement;
  explicit Database(sqlite3* db) : db_(db) {}
  void Recycle(sqlite3_stmt* stmt);

  sqlite3* db_;
  std::unordered_map<std::string, std::vector<sqlite3_stmt*>> idle_;  // by SQL text
};

// Whether `status` (from this file's functions) means the storage failed (disk full, I/O
// error, read-only, busy) rather than the request being wrong. Such statuses carry a
// payload; StorageFailure makes one (tests of outages).
bool IsStorageFailure(const absl::Status& status);
absl::Status StorageFailure(absl::StatusCode code, std::string_view message);

// The protobuf message of type T stored in column `col` of the current row, or DATA_LOSS
// naming `what` ("run 12 spec") when its bytes do not parse: a damaged file is reported,
// never read as an empty message.
template <typename T>
absl::StatusOr<T> ParseBlob(const Statement& stmt, int col, std::string_view what) {
  T message;
  const std::string bytes = stmt.Blob(col);
  if (!message.ParseFromString(bytes)) {
    return absl::DataLossError(absl::StrCat("stored ", std::string(what), " does not parse as ",
                                            T::descriptor()->full_name(), " (", bytes.size(),
                                            " bytes): the database is damaged"));
  }
  return message;
}

// Runs `body` inside BEGIN IMMEDIATE / COMMIT; rolls back if it returns an error.
template <typename Body>
absl::Status InTransaction(Database& db, Body&& body) {
  if (absl::Status s = db.Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  absl::Status s = body();
  if (s.ok()) s = db.Exec("COMMIT");
  if (!s.ok()) (void)db.Exec("ROLLBACK");
  return s;
}

}  // namespace tlbfleet::store
