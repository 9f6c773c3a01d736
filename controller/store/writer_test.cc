#include "controller/store/writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "absl/synchronization/notification.h"

namespace tlbfleet::store {
namespace {

class WriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-writer-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "w.db").string();
    std::unique_ptr<Database> db = *Database::Open(path_);
    ASSERT_TRUE(db->Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)").ok());
    writer_ = std::make_unique<Writer>(std::move(db), Writer::Options{});
  }
  void TearDown() override {
    writer_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Inserts v; `fail` makes the operation fail after inserting (so its insert must be undone).
  static WriteOp Insert(int v, std::function<void(absl::Status)> done, bool fail = false) {
    WriteOp op;
    op.apply = [v, fail](Database& db, EventBatch&) -> absl::Status {
      absl::StatusOr<Statement> q = db.Prepare("INSERT INTO t(v) VALUES(?1)");
      if (!q.ok()) return q.status();
      if (absl::Status s = q->Bind(1, static_cast<int64_t>(v)).Run(); !s.ok()) return s;
      return fail ? absl::InvalidArgumentError("refused") : absl::OkStatus();
    };
    op.done = std::move(done);
    return op;
  }
  std::vector<int64_t> Values() {
    std::unique_ptr<Database> db = *Database::Open(path_, Database::Mode::kReader);
    Statement q = *db->Prepare("SELECT v FROM t ORDER BY id");
    std::vector<int64_t> out;
    while (*q.Step()) out.push_back(q.Int(0));
    return out;
  }

  std::filesystem::path dir_;
  std::string path_;
  std::unique_ptr<Writer> writer_;
};

TEST_F(WriterTest, ConcurrentWritesShareTransactionsAndKeepTheirOrder) {
  constexpr int kThreads = 4, kEach = 100;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        writer_->Submit(Insert(t * 1000 + i, [&](absl::Status s) { ok += s.ok() ? 1 : 0; }));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  writer_.reset();  // applies what is queued, delivers every callback
  EXPECT_EQ(ok.load(), kThreads * kEach);
  std::vector<int64_t> values = Values();
  ASSERT_EQ(values.size(), static_cast<size_t>(kThreads * kEach));
  // Each thread's writes in the order it submitted them.
  std::map<int64_t, int64_t> last;
  for (int64_t v : values) {
    auto [it, fresh] = last.emplace(v / 1000, v);
    if (!fresh) {
      EXPECT_GT(v, it->second);
      it->second = v;
    }
  }
}

TEST_F(WriterTest, ManyWritesWaitingAreCommittedInFewTransactions) {
  // No time budget: a slow machine (or a sanitizer) must not split the batch.
  writer_.reset();
  Writer::Options options;
  options.max_batch_ms = 0;
  writer_ = std::make_unique<Writer>(*Database::Open(path_), options);
  // Hold the writer busy so that the next writes queue up behind it.
  absl::Notification release;
  WriteOp blocker;
  blocker.apply = [&](Database&, EventBatch&) {
    release.WaitForNotification();
    return absl::OkStatus();
  };
  writer_->Submit(std::move(blocker));
  std::atomic<int> done{0};
  std::atomic<uint64_t> transactions{0};
  Writer* writer = writer_.get();  // writer_ is null while reset() stops it
  for (int i = 0; i < 300; ++i) {
    writer_->Submit(Insert(i, [&, writer](absl::Status) {
      if (++done == 300) transactions = writer->transactions();
    }));
  }
  release.Notify();
  writer_.reset();
  EXPECT_EQ(done.load(), 300);
  EXPECT_EQ(Values().size(), 300u);
  // The blocker's transaction and one more: not one per write.
  EXPECT_LE(transactions.load(), 2u);
}

// Holds the writer in a transaction of its own until released.
class Blocker {
 public:
  explicit Blocker(Writer& writer) {
    WriteOp op;
    op.apply = [this](Database&, EventBatch&) {
      started_.Notify();
      release_.WaitForNotification();
      return absl::OkStatus();
    };
    writer.Submit(std::move(op));
    started_.WaitForNotification();
  }
  void Release() { release_.Notify(); }

 private:
  absl::Notification started_, release_;
};

TEST_F(WriterTest, UrgentWritesGoAheadOfTheOrdinaryOnesWaiting) {
  Blocker blocker(*writer_);
  for (int v : {1, 2, 3}) writer_->Submit(Insert(v, nullptr));
  for (int v : {100, 101}) {
    WriteOp urgent = Insert(v, nullptr);
    urgent.urgent = true;
    writer_->Submit(std::move(urgent));
  }
  writer_->Submit(Insert(4, nullptr));
  blocker.Release();
  writer_.reset();
  EXPECT_EQ(Values(), (std::vector<int64_t>{100, 101, 1, 2, 3, 4}));
}

TEST_F(WriterTest, ATransactionTakesNoMoreWritesOnceItsTimeIsUp) {
  writer_.reset();
  Writer::Options options;
  options.max_batch_ms = 20;
  writer_ = std::make_unique<Writer>(*Database::Open(path_), options);
  Writer* writer = writer_.get();
  Blocker blocker(*writer_);
  // The first write outlasts the budget, so its transaction closes after it; an urgent write
  // submitted meanwhile then runs before the ordinary ones that were already in that batch.
  WriteOp slow = Insert(1, nullptr);
  slow.apply = [writer, insert = std::move(slow.apply)](Database& db, EventBatch& events) {
    WriteOp urgent = Insert(100, nullptr);
    urgent.urgent = true;
    writer->Submit(std::move(urgent));
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    return insert(db, events);
  };
  writer_->Submit(std::move(slow));
  std::atomic<int> done{0};
  for (int v : {2, 3}) writer_->Submit(Insert(v, [&](absl::Status s) { done += s.ok(); }));
  blocker.Release();
  writer_.reset();
  EXPECT_EQ(Values(), (std::vector<int64_t>{1, 100, 2, 3}));
  EXPECT_EQ(done.load(), 2) << "the writes put back were applied and reported once";
}

TEST_F(WriterTest, AFailingWriteIsUndoneAloneAndItsChainStops) {
  auto chain = std::make_shared<WriteChain>();
  absl::Status first, failing, after_in_chain, other;
  absl::Notification hold;
  WriteOp blocker;  // so that all four land in one transaction
  blocker.apply = [&](Database&, EventBatch&) {
    hold.WaitForNotification();
    return absl::OkStatus();
  };
  writer_->Submit(std::move(blocker));
  writer_->Submit(Insert(1, [&](absl::Status s) { first = s; }));
  WriteOp bad = Insert(
      2, [&](absl::Status s) { failing = s; }, /*fail=*/true);
  bad.chain = chain;
  writer_->Submit(std::move(bad));
  WriteOp behind = Insert(3, [&](absl::Status s) { after_in_chain = s; });
  behind.chain = chain;
  writer_->Submit(std::move(behind));
  writer_->Submit(Insert(4, [&](absl::Status s) { other = s; }));
  hold.Notify();
  writer_.reset();
  EXPECT_TRUE(first.ok());
  EXPECT_EQ(failing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(after_in_chain.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(other.ok());
  EXPECT_TRUE(chain->failed());
  EXPECT_EQ(Values(), (std::vector<int64_t>{1, 4}));
}

TEST_F(WriterTest, StorageFailuresAreReportedUntilAChangeCommits) {
  writer_->FailWritesForTest(StorageFailure(absl::StatusCode::kResourceExhausted, "disk full"));
  absl::Notification failed;
  absl::Status status;
  writer_->Submit(Insert(1, [&](absl::Status s) {
    status = s;
    failed.Notify();
  }));
  failed.WaitForNotification();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(writer_->failing());
  EXPECT_NE(writer_->last_failure().message().find("disk full"), std::string::npos);
  writer_->FailWritesForTest(absl::OkStatus());
  absl::Notification written;
  WriteOp op = Insert(2, [&](absl::Status) { written.Notify(); });
  op.sync = true;
  writer_->Submit(std::move(op));
  written.WaitForNotification();
  EXPECT_FALSE(writer_->failing());
}

TEST_F(WriterTest, ASynchronousWriterIsWokenEvenWhileTheCallbackThreadIsBlocked) {
  // A callback that waits for a synchronous write made elsewhere (as a core callback blocked
  // on the core's lock, held by a thread that waits for the store): must not deadlock.
  absl::Notification callback_running, sync_done;
  writer_->Submit(Insert(1, [&](absl::Status) {
    callback_running.Notify();
    sync_done.WaitForNotification();
  }));
  callback_running.WaitForNotification();
  WriteOp sync = Insert(2, [&](absl::Status) { sync_done.Notify(); });
  sync.sync = true;
  writer_->Submit(std::move(sync));
  EXPECT_TRUE(sync_done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  // The callback thread may still be inside sync_done's wait: stop it before the notifications
  // go out of scope (a clean-clone run hung here, the callback spinning on a dead Notification).
  writer_.reset();
}

}  // namespace
}  // namespace tlbfleet::store
