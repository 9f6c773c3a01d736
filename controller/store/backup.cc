#include "controller/store/backup.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/files.h"

namespace tlbfleet::store {

namespace {

// Every page in one step, inside one read transaction. The controller's database is in WAL
// mode, where a reader never blocks writers, so this costs the controller nothing; copying in
// smaller steps would instead restart from the beginning after each of the controller's
// writes, and might never finish under a steady stream of them.
constexpr int kPagesPerStep = -1;

absl::Status SqliteStatus(sqlite3* db, int rc, const std::string& what) {
  return absl::InternalError(
      absl::StrCat(what, ": ", db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
}

// A connection closed on scope exit.
struct Connection {
  sqlite3* db = nullptr;
  ~Connection() { sqlite3_close(db); }
};

absl::StatusOr<std::string> QueryText(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(db, rc, sql);
  rc = sqlite3_step(stmt);
  std::string text;
  if (rc == SQLITE_ROW) {
    const unsigned char* value = sqlite3_column_text(stmt, 0);
    text = value != nullptr ? reinterpret_cast<const char*>(value) : "";
  }
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqliteStatus(db, rc, sql);
  return text;
}

}  // namespace

absl::StatusOr<BackupInfo> BackupDatabase(const std::string& source,
                                          const std::string& destination) {
  struct stat st;
  if (::stat(source.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("--db ", source, ": no such database file"));
  }
  if (::stat(destination.c_str(), &st) == 0) {
    return absl::AlreadyExistsError(
        absl::StrCat("--out ", destination, ": exists; a backup never overwrites a file"));
  }

  Connection src;
  int rc = sqlite3_open_v2(source.c_str(), &src.db, SQLITE_OPEN_READWRITE, nullptr);
  if (rc != SQLITE_OK) return SqliteStatus(src.db, rc, absl::StrCat("open ", source));
  sqlite3_busy_timeout(src.db, 5000);
  absl::StatusOr<std::string> version = QueryText(src.db, "PRAGMA user_version");
  if (!version.ok()) return version.status();
  BackupInfo info;
  info.schema_version = std::atoi(version->c_str());
  if (info.schema_version <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--db ", source, ": not a tlbfleet database (no schema version)"));
  }

  const std::string temp = absl::StrCat(destination, ".tmp.", ::getpid());
  std::remove(temp.c_str());
  absl::Status result = [&]() -> absl::Status {
    Connection dst;
    int rc =
        sqlite3_open_v2(temp.c_str(), &dst.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    if (rc != SQLITE_OK) return SqliteStatus(dst.db, rc, absl::StrCat("create ", temp));
    sqlite3_backup* backup = sqlite3_backup_init(dst.db, "main", src.db, "main");
    if (backup == nullptr) return SqliteStatus(dst.db, SQLITE_ERROR, "backup");
    for (;;) {
      rc = sqlite3_backup_step(backup, kPagesPerStep);
      if (rc == SQLITE_DONE) break;
      if (rc == SQLITE_OK) continue;
      if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
        sqlite3_sleep(20);  // the controller holds a lock for a moment: try again
        continue;
      }
      break;
    }
    info.pages = sqlite3_backup_pagecount(backup);
    int finished = sqlite3_backup_finish(backup);
    if (rc != SQLITE_DONE) return SqliteStatus(nullptr, rc, absl::StrCat("backup of ", source));
    if (finished != SQLITE_OK) return SqliteStatus(dst.db, finished, "backup");
    // One self-contained file, whatever the source's journal mode.
    absl::StatusOr<std::string> mode = QueryText(dst.db, "PRAGMA journal_mode=DELETE");
    if (!mode.ok()) return mode.status();
    absl::StatusOr<std::string> check = QueryText(dst.db, "PRAGMA integrity_check");
    if (!check.ok()) return check.status();
    if (*check != "ok") {
      return absl::DataLossError(
          absl::StrCat("the copy of ", source, " fails its check: ", *check));
    }
    return absl::OkStatus();
  }();
  if (result.ok()) result = FsyncPath(temp, O_RDONLY);
  if (result.ok() && ::rename(temp.c_str(), destination.c_str()) != 0) {
    result = ErrnoStatus(errno, absl::StrCat("rename ", temp, " to ", destination));
  }
  if (!result.ok()) {
    std::remove(temp.c_str());
    return result;
  }
  if (absl::Status s = FsyncDirectory(DirName(destination)); !s.ok()) return s;
  if (::stat(destination.c_str(), &st) == 0) info.bytes = st.st_size;
  return info;
}

}  // namespace tlbfleet::store
