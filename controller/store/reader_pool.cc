#include "controller/store/reader_pool.h"

namespace tlbfleet::store {

absl::StatusOr<std::unique_ptr<Database>> ReaderPool::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    auto available = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !idle_.empty() || open_ < size_;
    };
    mu_.Await(absl::Condition(&available));
    if (!idle_.empty()) {
      std::unique_ptr<Database> db = std::move(idle_.back());
      idle_.pop_back();
      return db;
    }
    ++open_;  // reserved; opened below without holding the lock
  }
  absl::StatusOr<std::unique_ptr<Database>> db = Database::Open(path_, Database::Mode::kReader);
  if (!db.ok()) {
    absl::MutexLock lock(&mu_);
    --open_;
  }
  return db;
}

void ReaderPool::Release(std::unique_ptr<Database> db) {
  absl::MutexLock lock(&mu_);
  idle_.push_back(std::move(db));
}

}  // namespace tlbfleet::store
