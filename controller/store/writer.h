#pragma once
// The store's one writer. Write operations queue up; a thread applies them in the order they
// were submitted, as many as are waiting in one transaction, so one COMMIT (one fsync of the
// WAL) serves them all. Each operation runs inside a SAVEPOINT of its own: one that fails is
// undone alone and the others still commit. Readers use other connections (WAL snapshots)
// and never wait for this one.
//
// Urgent operations (a lease an idle agent waits for) go ahead of the ordinary ones waiting,
// in their own submission order, and a transaction closes once it has run for
// Options::max_batch_ms, so an urgent write waits for at most about that long behind bulk
// ingest instead of for the whole queue (docs/performance.md, "Leases ahead of ingest").
//
// Thread-safe. Where completions run:
//   - a synchronous caller (WriteOp::sync) is woken by the writer thread itself, so a caller
//     may wait while holding its own locks: the writer never takes a lock of its callers;
//   - any other completion runs on the writer's callback thread, one at a time, in commit
//     order, never under a lock of the writer. Callbacks may submit more writes.
// Without a thread (Options::thread false, unit tests) an operation runs on the submitting
// thread, and its completion runs there right after, once the writer's lock is released.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "controller/store/internal.h"
#include "controller/store/sqlite.h"

namespace tlbfleet::store {

// Writes that depend on each other (those of one agent stream: a completion is checked
// against the samples stored before it). Once one of them fails, the later ones fail at once
// without running, so a completion is never judged without the samples it counts.
class WriteChain {
 public:
  bool failed() const { return failed_.load(); }
  void Fail() { failed_.store(true); }

 private:
  std::atomic<bool> failed_{false};
};

struct WriteOp {
  // Runs inside the batch's transaction; records run events in `events`.
  std::function<absl::Status(Database& db, EventBatch& events)> apply;
  // Called once with OK after COMMIT, or with the operation's error (or the batch's, when the
  // transaction could not be committed). See `sync` for where.
  std::function<void(absl::Status)> done;
  // true: `done` runs on the writer thread and must only wake a waiting caller.
  bool sync = false;
  // Applied ahead of every ordinary operation still waiting. Only for writes that depend on
  // nothing queued before them by the same caller (a lease asked after the agent's completion
  // committed); never in a chain.
  bool urgent = false;
  std::shared_ptr<WriteChain> chain;  // optional
};

class Writer {
 public:
  struct Options {
    bool thread = true;       // false: apply on the submitting thread (unit tests)
    size_t max_batch = 1024;  // operations per transaction, at most
    // A transaction takes no further operation once it has run this long (the one running
    // finishes; the rest wait for the next transaction, ahead of later submissions).
    int64_t max_batch_ms = 20;
  };
  using EventSink = std::function<void(const EventBatch& events)>;

  Writer(std::unique_ptr<Database> db, Options options);
  // Applies what is queued, delivers every completion, then stops the threads.
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Called after every COMMIT that recorded run events, with them in id order, on the writer
  // thread (or the submitting one), so calls never overlap and never reorder. Must be quick
  // and must not write to the store.
  void SetEventSink(EventSink sink);

  void Submit(WriteOp op);

  // Whether the last transaction failed for a storage reason (disk full, I/O error, read-only,
  // busy), and why. Cleared by the next transaction that commits a change.
  bool failing() const { return failing_.load(); }
  absl::Status last_failure() const;

  // Every write fails with `status` until called again with OK (unit tests of outages).
  void FailWritesForTest(absl::Status status);
  // Transactions committed or attempted so far, and operations in them (batching tests).
  uint64_t transactions() const { return transactions_.load(); }

 private:
  void WriterLoop();
  void CallbackLoop();
  // Applies `batch` in one transaction; returns the status of each operation applied: the
  // first results.size() of `batch`, fewer than all when the time budget ran out (with no
  // budget, `apply_all`, every one).
  std::vector<absl::Status> ApplyBatch(std::vector<WriteOp>& batch, bool apply_all)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(db_mu_);
  // Hands each completion to its place (see the class comment); `on_this_thread`: run them
  // all here (no writer thread, or it has stopped).
  void Deliver(std::vector<WriteOp>& batch, std::vector<absl::Status>& results,
               bool on_this_thread);

  const Options options_;

  // The connection and everything done with it: held by the one thread applying a batch.
  absl::Mutex db_mu_;
  std::unique_ptr<Database> db_ ABSL_GUARDED_BY(db_mu_);
  EventSink sink_ ABSL_GUARDED_BY(db_mu_);
  absl::Status fail_for_test_ ABSL_GUARDED_BY(db_mu_);

  absl::Mutex queue_mu_;
  std::deque<WriteOp> urgent_ ABSL_GUARDED_BY(queue_mu_);
  std::deque<WriteOp> queue_ ABSL_GUARDED_BY(queue_mu_);
  std::deque<std::function<void()>> callbacks_ ABSL_GUARDED_BY(queue_mu_);
  bool stopping_ ABSL_GUARDED_BY(queue_mu_) = false;
  bool writer_done_ ABSL_GUARDED_BY(queue_mu_) = false;

  mutable absl::Mutex failure_mu_;
  absl::Status last_failure_ ABSL_GUARDED_BY(failure_mu_);
  std::atomic<bool> failing_{false};
  std::atomic<uint64_t> transactions_{0};

  std::thread writer_;
  std::thread callback_thread_;
};

}  // namespace tlbfleet::store
