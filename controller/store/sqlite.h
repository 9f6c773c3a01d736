#pragma once
// A thin RAII layer over the sqlite3 C API: a connection and prepared statements with
// 1-based binding. Not thread-safe; Store serialises access.

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tlbfleet::store {

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Statement(Statement&& other) noexcept : db_(other.db_), stmt_(other.stmt_) {
    other.stmt_ = nullptr;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, double value);
  Statement& Bind(int index, std::string_view text);
  Statement& BindBlob(int index, std::string_view bytes);
  Statement& BindNull(int index);
  Statement& Bind(int index, std::optional<int64_t> value) {
    return value ? Bind(index, *value) : BindNull(index);
  }

  // true while a row is available; false when done. Errors become a status.
  absl::StatusOr<bool> Step();
  // Runs to completion, ignoring rows.
  absl::Status Run();

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const;
  std::string Blob(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

class Database {
 public:
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  absl::StatusOr<Statement> Prepare(std::string_view sql);
  // Executes one or more statements without parameters.
  absl::Status Exec(std::string_view sql);
  int64_t Changes() const { return sqlite3_changes64(db_); }
  int64_t LastInsertId() const { return sqlite3_last_insert_rowid(db_); }
  sqlite3* raw() { return db_; }

 private:
  explicit Database(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

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
