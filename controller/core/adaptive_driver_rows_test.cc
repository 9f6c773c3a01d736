// The adaptive driver with stop: verdict, whose rows stop on their own: a row decided at a
// look keeps its verdict, its (sweep value, arm) gets no more jobs while the others grow,
// and the rows are kept with the run so that a new driver on the reopened store (a
// controller restart) goes on from them. docs/statistics.md#rows-that-stop-on-their-own.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "common/clock.h"
#include "controller/core/adaptive_driver.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/run_spec.h"
#include "controller/store/lease_for_test.h"
#include "controller/store/store.h"

namespace tlbfleet::core {
namespace {

class AdaptiveDriverRowsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-driver-rows-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Reopen();
  }
  void TearDown() override {
    driver_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A new store on the same file and a new driver on it: what a controller restart has.
  void Reopen() {
    driver_.reset();
    store_.reset();
    absl::StatusOr<std::unique_ptr<store::Store>> s =
        store::Store::Open((dir_ / "fleet.db").string());
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = *std::move(s);
    driver_ = std::make_unique<AdaptiveDriver>(
        *store_, clock_, [this](const std::string& run) { extended_.push_back(run); });
  }

  // usecs_per_op of one job: at loops=1000 arm b takes twice as long as a, with 0.1 %
  // noise (decided at the first look); at loops=3000 both arms alternate 4 and 6 (open).
  static double Value(const v1::JobAssignment& a) {
    if (a.param_value() == "1000") {
      const double noise = 1 + 0.001 * static_cast<double>(static_cast<int>(a.iteration() % 3) - 1);
      return (a.arm() == "b" ? 10.0 : 5.0) * noise;
    }
    return a.iteration() % 2 == 0 ? 4.0 : 6.0;
  }

  // Runs every queued job of `run` on one host and boot; "value/arm" -> jobs run.
  std::map<std::string, int> RunQueued(const std::string& run) {
    std::map<std::string, int> ran;
    for (;;) {
      absl::StatusOr<std::optional<v1::JobAssignment>> a =
          store::LeaseNext(*store_, run, "agent1", now_, 60'000, nullptr, "boot-1");
      EXPECT_TRUE(a.ok()) << a.status();
      if (!a.ok() || !a->has_value()) break;
      v1::SampleBatch batch;
      batch.set_lease_id((*a)->lease_id());
      batch.set_job_id((*a)->job_id());
      v1::Sample* sample = batch.add_samples();
      sample->set_metric("usecs_per_op");
      sample->set_value(Value(**a));
      sample->set_better(v1::BETTER_LOWER);
      sample->set_boot_id("boot-1");
      EXPECT_TRUE(store_->IngestSamples("agent1", batch).ok());
      v1::JobComplete done;
      done.set_lease_id((*a)->lease_id());
      done.set_job_id((*a)->job_id());
      done.set_status(v1::JOB_STATUS_SUCCEEDED);
      done.set_sample_count(1);
      absl::StatusOr<store::CompletionResult> completed = store_->CompleteJob("agent1", done, now_);
      EXPECT_TRUE(completed.ok() && !completed->rejected);
      ++ran[(*a)->param_value() + "/" + (*a)->arm()];
    }
    return ran;
  }

  static const v1::AdaptiveRow* RowAt(const v1::Run& run, const std::string& value) {
    for (const v1::AdaptiveRow& row : run.adaptive_rows()) {
      if (row.param_value() == value) return &row;
    }
    return nullptr;
  }

  std::filesystem::path dir_;
  FakeClock clock_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<AdaptiveDriver> driver_;
  std::vector<std::string> extended_;
  int64_t now_ = 1'000'000;
};

TEST_F(AdaptiveDriverRowsTest, ADecidedRowStopsGettingJobsAndStaysDecidedAcrossARestart) {
  absl::StatusOr<v1::RunSpec> spec = scheduler::ParseRunSpec(
      "name: rows\nbenchmark: pipetest\nsweep: {loops: [1000, 3000]}\n"
      "iterations: {min: 10, max: 80}\nadaptive: {stop: verdict, spending: pocock}\n"
      "arms: [{name: a}, {name: b}]\n",
      "rows.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<std::string> run = store_->CreateRun(*spec, "", scheduler::ExpandRun(*spec), now_);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(RunQueued(*run), (std::map<std::string, int>{
                                 {"1000/a", 10}, {"1000/b", 10}, {"3000/a", 10}, {"3000/b", 10}}));

  // Look 1: loops=1000 is decided (worse: b takes twice as long), loops=3000 is open, so the
  // run grows to 20 iterations at loops=3000 only.
  driver_->DecideOnce();
  EXPECT_EQ(extended_, std::vector<std::string>{*run});
  absl::StatusOr<v1::Run> r = store_->GetRun(*run);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->state(), v1::RUN_STATE_RUNNING);
  EXPECT_EQ(r->iterations_per_boot(), 20u);
  EXPECT_EQ(r->jobs().queued(), 20u);
  ASSERT_EQ(r->adaptive_rows_size(), 2);
  const v1::AdaptiveRow* decided = RowAt(*r, "1000");
  ASSERT_NE(decided, nullptr);
  EXPECT_EQ(decided->metric(), "usecs_per_op");
  EXPECT_EQ(decided->param_name(), "loops");
  EXPECT_EQ(decided->arm(), "b");
  EXPECT_TRUE(decided->decided());
  EXPECT_EQ(decided->verdict(), "worse");
  EXPECT_FALSE(decided->measuring());
  EXPECT_EQ(decided->decided_round(), 0u);
  EXPECT_EQ(decided->arm_samples(), 10u);
  EXPECT_EQ(decided->base_samples(), 10u);
  EXPECT_NEAR(decided->ratio(), 2.0, 0.01);
  EXPECT_LT(decided->p(), decided->look_alpha());
  EXPECT_GT(decided->look_alpha(), 0);
  EXPECT_NE(decided->reason().find("no more jobs"), std::string::npos) << decided->reason();
  const v1::AdaptiveRow* open = RowAt(*r, "3000");
  ASSERT_NE(open, nullptr);
  EXPECT_FALSE(open->decided());
  EXPECT_EQ(open->verdict(), "");
  EXPECT_TRUE(open->measuring());
  EXPECT_NE(open->reason().find("open"), std::string::npos) << open->reason();

  // A controller restart between the looks: the new driver reads the rows back.
  Reopen();
  EXPECT_EQ(RunQueued(*run), (std::map<std::string, int>{{"3000/a", 10}, {"3000/b", 10}}));
  driver_->DecideOnce();
  r = store_->GetRun(*run);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->adaptive_rounds(), 2u);
  EXPECT_EQ(r->iterations_per_boot(), 40u);
  EXPECT_EQ(r->jobs().queued(), 40u);
  decided = RowAt(*r, "1000");
  ASSERT_NE(decided, nullptr);
  // Kept as decided at its look, with what it used then.
  EXPECT_EQ(decided->verdict(), "worse");
  EXPECT_EQ(decided->decided_round(), 0u);
  EXPECT_EQ(decided->arm_samples(), 10u);
  EXPECT_FALSE(decided->measuring());
  open = RowAt(*r, "3000");
  ASSERT_NE(open, nullptr);
  EXPECT_FALSE(open->decided());
  EXPECT_EQ(open->arm_samples(), 20u);
  EXPECT_EQ(open->base_samples(), 20u);
  EXPECT_EQ(RunQueued(*run), (std::map<std::string, int>{{"3000/a", 20}, {"3000/b", 20}}));
}

TEST_F(AdaptiveDriverRowsTest, APrecisionRunStillGrowsEverySweepValueAndArm) {
  absl::StatusOr<v1::RunSpec> spec = scheduler::ParseRunSpec(
      "name: p\nbenchmark: pipetest\nsweep: {loops: [1000, 3000]}\n"
      "iterations: {min: 10, max: 80, target_ci: 0.1%}\narms: [{name: a}, {name: b}]\n",
      "p.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<std::string> run = store_->CreateRun(*spec, "", scheduler::ExpandRun(*spec), now_);
  ASSERT_TRUE(run.ok()) << run.status();
  RunQueued(*run);
  driver_->DecideOnce();
  absl::StatusOr<v1::Run> r = store_->GetRun(*run);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->adaptive_rounds(), 1u);
  EXPECT_EQ(r->adaptive_rows_size(), 0);
  std::map<std::string, int> ran = RunQueued(*run);
  EXPECT_EQ(ran.size(), 4u);  // every (sweep value, arm) got the new iterations
}

}  // namespace
}  // namespace tlbfleet::core
