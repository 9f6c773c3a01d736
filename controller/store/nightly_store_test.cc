// The nightly store's writes are redone safely: a redo records nothing twice (the nightly unit
// redoes a unit of work whose write failed); the writes that go together go in one
// transaction; the fault hook fails calls without touching the database.
#include "controller/store/nightly_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "controller/store/sqlite.h"
#include "controller/store/store.h"

namespace tlbfleet::store {
namespace {

class NightlyStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-nightlystore-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::string path = (dir_ / "fleet.db").string();
    auto core = Store::Open(path, {.writer_thread = false});  // migrates
    ASSERT_TRUE(core.ok()) << core.status();
    core_ = *std::move(core);
    auto store = NightlyStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override {
    store_.reset();
    core_.reset();
    std::filesystem::remove_all(dir_);
  }

  static NewPoint Point(const std::string& run_id) {
    NewPoint p;
    p.key.set_microarch("Zen 3");
    p.key.set_boot_entry("nightly");
    p.key.set_benchmark("pipetest");
    p.key.set_metric("usecs_per_op");
    p.better = v1::BETTER_LOWER;
    p.point.set_run_id(run_id);
    p.point.set_estimate(10);
    return p;
  }

  v1::Schedule AddSchedule() {
    v1::ScheduleSpec spec;
    spec.set_name("nightly");
    spec.set_cron("0 2 * * *");
    return *store_->AddSchedule(spec, "name: nightly", 0);
  }

  v1::Regression AddRegression(const std::string& series_id, const std::string& first_bad) {
    v1::Regression r;
    r.set_series_id(series_id);
    r.set_first_bad_run(first_bad);
    absl::StatusOr<v1::Regression> added = store_->AddRegression(r, 1000);
    EXPECT_TRUE(added.ok()) << added.status();
    return added.ok() ? *added : v1::Regression();
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> core_;
  std::unique_ptr<NightlyStore> store_;
};

TEST_F(NightlyStoreTest, AppendingARunAgainAppendsNothing) {
  absl::StatusOr<std::vector<std::string>> first = store_->AppendRun("7", {Point("7")}, 1);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->size(), 1u);
  absl::StatusOr<std::vector<std::string>> again = store_->AppendRun("7", {Point("7")}, 2);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->empty());
  EXPECT_EQ(store_->GetSeries((*first)[0], true)->points_size(), 1);
  EXPECT_TRUE(*store_->RunSeen("7"));
}

TEST_F(NightlyStoreTest, AChangePointIsRecordedOnceThoughItsRegressionIsAddedAgain) {
  const std::string series = (*store_->AppendRun("7", {Point("7")}, 1))[0];
  const v1::Regression first = AddRegression(series, "7");
  absl::StatusOr<v1::Regression> again = store_->AddRegression(first, 2000);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  EXPECT_EQ(store_->ListRegressions({}, 0)->size(), 1u);
  EXPECT_EQ(*store_->KnownFindings(series), std::set<std::string>({"7"}));
  // An improvement at a run already judged is not recorded over it.
  EXPECT_TRUE(store_->AddImprovement(series, "7").ok());
  EXPECT_TRUE(store_->AddImprovement(series, "8").ok());
  EXPECT_TRUE(store_->AddImprovement(series, "8").ok());
  EXPECT_EQ(*store_->KnownFindings(series), std::set<std::string>({"7", "8"}));
}

TEST_F(NightlyStoreTest, ARunRecordedAgainIsCountedOnceAndALateSlotIsNotTheLastRun) {
  const v1::Schedule s = AddSchedule();
  const std::string owner = "schedule:" + s.id();
  ASSERT_TRUE(store_->TakeSlot(s.id(), 1000, {"night-1", owner, "", ""}, 1000).ok());
  // The same slot again: refused, nothing recorded.
  EXPECT_EQ(store_->TakeSlot(s.id(), 1000, {"night-1b", owner, "", ""}, 1001).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store_->TakeSlot(s.id(), 2000, {"night-2", owner, "", ""}, 2000).ok());
  // Night 2 is recorded first (night 1's recording failed and is redone later), twice.
  ASSERT_TRUE(store_->RecordSubmission("night-2", "20", nullptr, 2001).ok());
  ASSERT_TRUE(store_->RecordSubmission("night-2", "20", nullptr, 2002).ok());
  ASSERT_TRUE(store_->RecordSubmission("night-1", "10", nullptr, 2003).ok());
  const v1::Schedule after = *store_->GetSchedule(s.id());
  EXPECT_EQ(after.runs(), 2u);
  EXPECT_EQ(after.last_run_id(), "20");
  EXPECT_TRUE(store_->PendingSubmissions()->empty());
  EXPECT_EQ((*store_->SubmissionOfRun("10"))->name, "night-1");
}

TEST_F(NightlyStoreTest, ABisectionAndTheNoteOfItsRegressionAreStoredTogether) {
  const std::string series = (*store_->AppendRun("7", {Point("7")}, 1))[0];
  const v1::Regression r = AddRegression(series, "7");
  v1::BisectState state;
  state.set_id(*store_->CreateBisect(1));
  state.set_status(v1::BISECT_RUNNING);
  state.mutable_spec()->set_regression_id("999");  // no such regression: nothing is stored
  EXPECT_EQ(store_->SaveBisectAndNoteRegression(state, "started", 2).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetBisect(state.id()).status().code(), absl::StatusCode::kNotFound);
  state.mutable_spec()->set_regression_id(r.id());
  ASSERT_TRUE(store_->SaveBisectAndNoteRegression(state, "bisect started", 3).ok());
  EXPECT_EQ(store_->GetBisect(state.id())->status(), v1::BISECT_RUNNING);
  const v1::Regression noted = *store_->GetRegression(r.id());
  EXPECT_EQ(noted.bisect_id(), state.id());
  EXPECT_EQ(noted.note(), "bisect started");
  // A user's status and the worker's note do not overwrite each other.
  ASSERT_TRUE(store_->SetRegressionStatus(r.id(), v1::REGRESSION_ACKNOWLEDGED, 4).ok());
  ASSERT_TRUE(store_->SetRegressionNote(r.id(), "first bad e5", 5).ok());
  const v1::Regression both = *store_->GetRegression(r.id());
  EXPECT_EQ(both.status(), v1::REGRESSION_ACKNOWLEDGED);
  EXPECT_EQ(both.note(), "first bad e5");
  EXPECT_EQ(both.bisect_id(), state.id());
}

TEST_F(NightlyStoreTest, FailedWritesChangeNothingAndReadsGoOn) {
  const v1::Schedule s = AddSchedule();
  store_->FailWritesForTest(StorageFailure(absl::StatusCode::kResourceExhausted, "disk full"));
  absl::Status taken = store_->TakeSlot(s.id(), 1000, {"night-1", "schedule:1", "", ""}, 1000);
  EXPECT_EQ(taken.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(IsStorageFailure(taken));
  EXPECT_FALSE(store_->AppendRun("7", {Point("7")}, 1).ok());
  EXPECT_EQ(store_->GetSchedule(s.id())->last_slot_unix(), 0);
  EXPECT_TRUE(store_->PendingSubmissions()->empty());
  EXPECT_FALSE(*store_->RunSeen("7"));
  store_->FailWritesForTest(absl::OkStatus());
  EXPECT_TRUE(store_->TakeSlot(s.id(), 1000, {"night-1", "schedule:1", "", ""}, 1000).ok());
  EXPECT_EQ(store_->PendingSubmissions()->size(), 1u);
}

}  // namespace
}  // namespace tlbfleet::store
