#pragma once
// Read-only connections to the store's database, so that queries (the user API, dispatch's
// view of the active runs, gauges) never wait for the writer: in WAL mode each read
// transaction sees the last committed state while the writer goes on. Thread-safe; a
// connection serves one caller at a time, and callers wait when all are busy.

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "controller/store/sqlite.h"

namespace tlbfleet::store {

class ReaderPool {
 public:
  // Connections are opened on first use, at most `size` of them.
  ReaderPool(std::string path, size_t size) : path_(std::move(path)), size_(size) {}

  // Runs `fn(Database&)` (returning absl::StatusOr<T> or absl::Status) inside one read
  // transaction, so all its queries see one snapshot.
  template <typename Fn>
  auto Read(Fn&& fn) -> decltype(fn(std::declval<Database&>())) {
    absl::StatusOr<std::unique_ptr<Database>> db = Acquire();
    if (!db.ok()) return db.status();
    if (absl::Status s = (*db)->Exec("BEGIN"); !s.ok()) {
      Release(*std::move(db));
      return s;
    }
    auto result = fn(**db);
    // A read transaction has nothing to undo; ending it lets the WAL be checkpointed.
    (void)(*db)->Exec("COMMIT");
    Release(*std::move(db));
    return result;
  }

 private:
  absl::StatusOr<std::unique_ptr<Database>> Acquire();
  void Release(std::unique_ptr<Database> db);

  const std::string path_;
  const size_t size_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Database>> idle_ ABSL_GUARDED_BY(mu_);
  size_t open_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tlbfleet::store
