#include "controller/core/active_runs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "controller/scheduler/run_spec.h"
#include "controller/store/lease_for_test.h"

namespace tlbfleet::core {
namespace {

class ActiveRunSnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-active-runs-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    store_ = *store::Store::Open((dir_ / "fleet.db").string(), {.writer_thread = false});
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string Submit(const std::string& name) {
    v1::RunSpec spec;
    spec.set_name(name);
    spec.set_benchmark("ebizzy");
    spec.set_iterations(1);
    spec.add_arms()->set_name("a");
    spec.mutable_hosts()->set_count(1);
    scheduler::JobPlan plan;
    plan.arm = "a";
    plan.iteration = 1;
    plan.timeout_seconds = 30;
    return *store_->CreateRun(spec, "yaml", {plan}, 1000);
  }

  std::vector<std::string> Current(int64_t now_ms) {
    std::vector<std::string> ids;
    for (const store::ActiveRun& r : snapshot_.Current(*store_, now_ms)) ids.push_back(r.run_id);
    return ids;
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  ActiveRunSnapshot snapshot_;
};

using Ids = std::vector<std::string>;

TEST_F(ActiveRunSnapshotTest, ReadsOnlyTheRunsMarkedStale) {
  std::vector<std::string> runs;
  for (int i = 0; i < 12; ++i) runs.push_back(Submit("r" + std::to_string(i)));
  EXPECT_EQ(Current(1000).size(), 12u);
  EXPECT_EQ(snapshot_.full_reads(), 1);

  // Unmarked changes are not seen: the snapshot follows events, not the table.
  ASSERT_TRUE(store_->FailRun(runs[3], "gone", 2000).ok());
  const std::string added = Submit("late");
  EXPECT_EQ(Current(2000).size(), 12u);
  EXPECT_EQ(snapshot_.partial_reads(), 0);

  // Marked: the failed run leaves, the new one joins in id order (run ids 10, 11 and 13
  // would sort wrongly as text), and nothing else is read.
  snapshot_.MarkStale(runs[3]);
  snapshot_.MarkStale(added);
  Ids expected;
  for (int i = 0; i < 12; ++i) {
    if (i != 3) expected.push_back(runs[i]);
  }
  expected.push_back(added);
  EXPECT_EQ(Current(3000), expected);
  EXPECT_EQ(snapshot_.full_reads(), 1);
  EXPECT_EQ(snapshot_.partial_reads(), 1);
  // Nothing stale: no read at all.
  EXPECT_EQ(Current(4000), expected);
  EXPECT_EQ(snapshot_.partial_reads(), 1);
}

TEST_F(ActiveRunSnapshotTest, AStaleRunsSlotsAreReadAgain) {
  const std::string run = Submit("r");
  const std::string other = Submit("other");
  ASSERT_EQ(Current(1000), (Ids{run, other}));
  EXPECT_EQ(snapshot_.Current(*store_, 1000)[0].slots_with_work.size(), 1u);
  // The run's only job is leased: its slot is bound to the agent and has no work left.
  auto leased = store::LeaseNext(*store_, run, "agent1", 2000, 60000);
  ASSERT_TRUE(leased.ok() && leased->has_value());
  snapshot_.MarkStale(other);
  EXPECT_EQ(snapshot_.Current(*store_, 2000)[0].slots_with_work.size(), 1u)
      << "only `other` was marked";
  snapshot_.MarkStale(run);
  const store::ActiveRun& fresh = snapshot_.Current(*store_, 2000)[0];
  ASSERT_EQ(fresh.run_id, run);
  EXPECT_TRUE(fresh.slots_with_work.empty());
  EXPECT_EQ(fresh.slot_of.at("agent1"), 0);
  // It fails: it leaves the snapshot once marked.
  ASSERT_TRUE(store_->FailRun(run, "gone", 3000).ok());
  snapshot_.MarkStale(run);
  EXPECT_EQ(Current(3000), (Ids{other}));
}

TEST_F(ActiveRunSnapshotTest, SlotsWithWorkAreThoseWithQueuedJobs) {
  v1::RunSpec spec;
  spec.set_name("three");
  spec.set_benchmark("ebizzy");
  spec.set_iterations(2);
  spec.add_arms()->set_name("a");
  spec.mutable_hosts()->set_count(3);
  std::vector<scheduler::JobPlan> plans;
  for (uint32_t slot : {0u, 0u, 1u, 2u, 2u}) {
    scheduler::JobPlan plan;
    plan.slot = slot;
    plan.arm = "a";
    plan.iteration = 1;
    plan.timeout_seconds = 30;
    plans.push_back(plan);
  }
  const std::string run = *store_->CreateRun(spec, "yaml", plans, 1000);
  EXPECT_EQ(snapshot_.Current(*store_, 1000)[0].slots_with_work, (std::set<int64_t>{0, 1, 2}));
  // Slot 0 keeps one queued job; slot 1's only job is leased.
  auto first = store::LeaseNext(*store_, run, "agent1", 2000, 60000);
  ASSERT_TRUE(first.ok() && first->has_value());
  auto second = store::LeaseNext(*store_, run, "agent2", 2000, 60000);
  ASSERT_TRUE(second.ok() && second->has_value());
  snapshot_.MarkStale(run);
  const store::ActiveRun& fresh = snapshot_.Current(*store_, 2000)[0];
  EXPECT_EQ(fresh.slot_of.at("agent1"), 0);
  EXPECT_EQ(fresh.slot_of.at("agent2"), 1);
  EXPECT_EQ(fresh.slots_with_work, (std::set<int64_t>{0, 2}));
}

TEST_F(ActiveRunSnapshotTest, MarkAllStaleAndTheMinuteReadEverything) {
  const std::string first = Submit("r1");
  EXPECT_EQ(Current(1000), (Ids{first}));
  const std::string second = Submit("r2");
  snapshot_.MarkAllStale();
  EXPECT_EQ(Current(2000), (Ids{first, second}));
  EXPECT_EQ(snapshot_.full_reads(), 2);
  // A change without an event is picked up by the whole-list read a minute later.
  ASSERT_TRUE(store_->FailRun(first, "gone", 3000).ok());
  EXPECT_EQ(Current(2000 + ActiveRunSnapshot::kFullReadEveryMs - 1), (Ids{first, second}));
  EXPECT_EQ(Current(2000 + ActiveRunSnapshot::kFullReadEveryMs), (Ids{second}));
  EXPECT_EQ(snapshot_.full_reads(), 3);
}

}  // namespace
}  // namespace tlbfleet::core
