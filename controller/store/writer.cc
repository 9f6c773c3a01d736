#include "controller/store/writer.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::store {

Writer::Writer(std::unique_ptr<Database> db, Options options) : options_(options) {
  {
    absl::MutexLock lock(&db_mu_);
    db_ = std::move(db);
  }
  if (options_.thread) {
    writer_ = std::thread(&Writer::WriterLoop, this);
    callback_thread_ = std::thread(&Writer::CallbackLoop, this);
  }
}

Writer::~Writer() {
  {
    absl::MutexLock lock(&queue_mu_);
    stopping_ = true;
  }
  if (writer_.joinable()) writer_.join();
  if (callback_thread_.joinable()) callback_thread_.join();
}

void Writer::SetEventSink(EventSink sink) {
  absl::MutexLock lock(&db_mu_);
  sink_ = std::move(sink);
}

absl::Status Writer::last_failure() const {
  absl::MutexLock lock(&failure_mu_);
  return last_failure_;
}

void Writer::FailWritesForTest(absl::Status status) {
  absl::MutexLock lock(&db_mu_);
  fail_for_test_ = std::move(status);
}

void Writer::Submit(WriteOp op) {
  if (options_.thread) {
    absl::MutexLock lock(&queue_mu_);
    if (!writer_done_) {
      (op.urgent ? urgent_ : queue_).push_back(std::move(op));
      return;
    }
    // Stopped (a callback delivered during shutdown wrote again): applied on this thread.
  }
  std::vector<WriteOp> batch;
  batch.push_back(std::move(op));
  std::vector<absl::Status> results;
  {
    absl::MutexLock lock(&db_mu_);
    results = ApplyBatch(batch, /*apply_all=*/true);
  }
  Deliver(batch, results, /*on_this_thread=*/true);
}

void Writer::WriterLoop() {
  for (;;) {
    std::vector<WriteOp> batch;
    {
      absl::MutexLock lock(&queue_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(queue_mu_) {
        return stopping_ || !queue_.empty() || !urgent_.empty();
      };
      queue_mu_.Await(absl::Condition(&ready));
      if (queue_.empty() && urgent_.empty()) {  // stopping, and everything has been applied
        writer_done_ = true;
        return;
      }
      for (std::deque<WriteOp>* from : {&urgent_, &queue_}) {
        while (!from->empty() && batch.size() < options_.max_batch) {
          batch.push_back(std::move(from->front()));
          from->pop_front();
        }
      }
    }
    std::vector<absl::Status> results;
    {
      absl::MutexLock lock(&db_mu_);
      results = ApplyBatch(batch, /*apply_all=*/false);
    }
    if (results.size() < batch.size()) {
      // Out of time: what did not run goes back to the front of its queue, in order.
      absl::MutexLock lock(&queue_mu_);
      for (size_t i = batch.size(); i-- > results.size();) {
        (batch[i].urgent ? urgent_ : queue_).push_front(std::move(batch[i]));
      }
      batch.resize(results.size());
    }
    Deliver(batch, results, /*on_this_thread=*/false);
  }
}

void Writer::CallbackLoop() {
  for (;;) {
    std::function<void()> callback;
    {
      absl::MutexLock lock(&queue_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(queue_mu_) {
        return writer_done_ || !callbacks_.empty();
      };
      queue_mu_.Await(absl::Condition(&ready));
      if (callbacks_.empty()) return;  // the writer has stopped and nothing is left
      callback = std::move(callbacks_.front());
      callbacks_.pop_front();
    }
    callback();
  }
}

void Writer::Deliver(std::vector<WriteOp>& batch, std::vector<absl::Status>& results,
                     bool on_this_thread) {
  std::vector<std::function<void()>> later;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!batch[i].done) continue;
    if (batch[i].sync || on_this_thread) {
      batch[i].done(std::move(results[i]));
    } else {
      later.push_back([done = std::move(batch[i].done), s = std::move(results[i])]() mutable {
        done(std::move(s));
      });
    }
  }
  if (later.empty()) return;
  absl::MutexLock lock(&queue_mu_);
  for (auto& callback : later) callbacks_.push_back(std::move(callback));
}

std::vector<absl::Status> Writer::ApplyBatch(std::vector<WriteOp>& batch, bool apply_all) {
  std::vector<absl::Status> results(batch.size());
  const auto started = std::chrono::steady_clock::now();
  const auto budget = std::chrono::milliseconds(options_.max_batch_ms);
  ++transactions_;
  auto fail_all = [&](const absl::Status& s, size_t from) {
    for (size_t i = from; i < batch.size(); ++i) {
      results[i] = s;
      if (batch[i].chain) batch[i].chain->Fail();
    }
  };
  bool storage_failed = false;
  auto record_failure = [&](const absl::Status& s) {
    if (!IsStorageFailure(s)) return;
    storage_failed = true;
    if (!failing_.exchange(true)) spdlog::error("store: writes fail: {}", s.ToString());
    absl::MutexLock lock(&failure_mu_);
    last_failure_ = s;
  };
  if (!fail_for_test_.ok()) {
    fail_all(fail_for_test_, 0);
    record_failure(fail_for_test_);
    return results;
  }
  Database& db = *db_;
  const int64_t changes_before = sqlite3_total_changes64(db.raw());
  absl::Status begin = db.Exec("BEGIN IMMEDIATE");
  if (!begin.ok()) {
    fail_all(begin, 0);
    record_failure(begin);
    return results;
  }
  EventBatch events;
  for (size_t i = 0; i < batch.size(); ++i) {
    WriteOp& op = batch[i];
    if (op.chain && op.chain->failed()) {
      results[i] = absl::FailedPreconditionError(
          "an earlier write of this agent stream failed; this one was not applied");
      continue;
    }
    absl::Status s = db.Exec("SAVEPOINT op");
    EventBatch op_events;
    if (s.ok()) s = op.apply(db, op_events);
    if (s.ok()) s = db.Exec("RELEASE op");
    if (s.ok()) {
      events.insert(events.end(), std::make_move_iterator(op_events.begin()),
                    std::make_move_iterator(op_events.end()));
      if (!apply_all && options_.max_batch_ms > 0 && i + 1 < batch.size() &&
          std::chrono::steady_clock::now() - started >= budget) {
        results.resize(i + 1);  // the rest wait for the next transaction
        break;
      }
      continue;
    }
    results[i] = s;
    if (op.chain) op.chain->Fail();
    record_failure(s);
    if (db.InOpenTransaction()) {
      (void)db.Exec("ROLLBACK TO op");
      (void)db.Exec("RELEASE op");
      continue;
    }
    // SQLite rolled the whole transaction back on its own (a full disk, an I/O error): the
    // operations before this one are undone too. Those after it get a fresh transaction.
    for (size_t j = 0; j < i; ++j) {
      if (results[j].ok()) {
        results[j] = s;
        if (batch[j].chain) batch[j].chain->Fail();
      }
    }
    events.clear();
    if (absl::Status again = db.Exec("BEGIN IMMEDIATE"); !again.ok()) {
      fail_all(again, i + 1);
      record_failure(again);
      return results;
    }
  }
  absl::Status commit = db.Exec("COMMIT");
  if (!commit.ok()) {
    if (db.InOpenTransaction()) (void)db.Exec("ROLLBACK");
    record_failure(commit);
    for (size_t i = 0; i < results.size(); ++i) {
      if (!results[i].ok()) continue;
      results[i] = commit;
      if (batch[i].chain) batch[i].chain->Fail();
    }
    return results;
  }
  if (!storage_failed && sqlite3_total_changes64(db.raw()) > changes_before &&
      failing_.exchange(false)) {
    spdlog::info("store: writes succeed again");
  }
  if (!events.empty() && sink_) sink_(events);
  return results;
}

}  // namespace tlbfleet::store
