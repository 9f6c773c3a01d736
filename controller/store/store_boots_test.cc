// Runs with several boots per arm, and adaptive runs: which boot takes which jobs, when a
// host must reboot, and how a run grows and stops.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "controller/scheduler/expand.h"
#include "controller/scheduler/run_spec.h"
#include "controller/store/lease_for_test.h"
#include "controller/store/store.h"

namespace tlbfleet::store {
namespace {

class StoreBootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-store-boots-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open((dir_ / "fleet.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Submit(const std::string& extra) {
    absl::StatusOr<v1::RunSpec> spec = scheduler::ParseRunSpec(
        std::string("name: b\nbenchmark: pipetest\nparams: {loops: 1000}\n"
                    "arms: [{name: a}, {name: b, params: {loops: 2000}}]\n") +
            (extra.find("iterations:") == std::string::npos ? "iterations: 2\n" : "") + extra,
        "t.yaml");
    EXPECT_TRUE(spec.ok()) << spec.status();
    absl::StatusOr<std::string> id =
        store_->CreateRun(*spec, "", scheduler::ExpandRun(*spec), now_);
    EXPECT_TRUE(id.ok()) << id.status();
    return *id;
  }

  // Leases the next job for `agent` on `boot` and completes it at once with one sample.
  // nullopt when nothing was leased; `reboot` gets the reboot reason.
  std::optional<v1::JobAssignment> LeaseAndComplete(const std::string& run,
                                                    const std::string& agent,
                                                    const std::string& boot,
                                                    std::string* reboot = nullptr) {
    std::string why;
    absl::StatusOr<std::optional<v1::JobAssignment>> a =
        LeaseNext(*store_, run, agent, now_, 60'000, nullptr, boot, &why);
    EXPECT_TRUE(a.ok()) << a.status();
    if (reboot != nullptr) *reboot = why;
    if (!a.ok() || !a->has_value()) return std::nullopt;
    v1::SampleBatch batch;
    batch.set_lease_id((*a)->lease_id());
    batch.set_job_id((*a)->job_id());
    v1::Sample* sample = batch.add_samples();
    sample->set_metric("usecs_per_op");
    sample->set_value(5);
    sample->set_boot_id(boot);
    EXPECT_TRUE(store_->IngestSamples(agent, batch).ok());
    v1::JobComplete done;
    done.set_lease_id((*a)->lease_id());
    done.set_job_id((*a)->job_id());
    done.set_status(v1::JOB_STATUS_SUCCEEDED);
    done.set_sample_count(1);
    absl::StatusOr<CompletionResult> completed = store_->CompleteJob(agent, done, now_);
    EXPECT_TRUE(completed.ok() && !completed->rejected);
    return **a;
  }

  // The boot index of the job LeaseAndComplete ran, -1 when nothing was leased.
  int RunOne(const std::string& run, const std::string& agent, const std::string& boot,
             std::string* reboot = nullptr) {
    std::optional<v1::JobAssignment> a = LeaseAndComplete(run, agent, boot, reboot);
    return a.has_value() ? static_cast<int>(a->boot_index()) : -1;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
  int64_t now_ = 1'000'000;
};

TEST_F(StoreBootsTest, EachBootIndexRunsOnItsOwnBootAndTheHostIsToldToReboot) {
  const std::string run = Submit("boots: 2\n");
  // Boot index 0: 2 iterations x 2 arms on boot A.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(RunOne(run, "agent1", "boot-A"), 0) << i;
  std::string reboot;
  EXPECT_EQ(RunOne(run, "agent1", "boot-A", &reboot), -1);
  EXPECT_NE(reboot.find("boot 2 needs a fresh boot"), std::string::npos) << reboot;
  // After the reboot, index 1 runs on boot B.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(RunOne(run, "agent1", "boot-B"), 1) << i;
  absl::StatusOr<v1::Run> r = store_->GetRun(run);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(r->boots(), 2u);
  EXPECT_EQ(r->stop_reason(), "planned: 2 iterations x 2 boots per arm, all done");
}

TEST_F(StoreBootsTest, ABootThatEndsEarlyIsMeasuredAgainWholeOnTheNextBoot) {
  const std::string run = Submit("boots: 2\n");
  EXPECT_EQ(RunOne(run, "agent1", "boot-A"), 0);
  // The host crashed and came back on boot C: boot A did not complete index 0, so all four of
  // its jobs run again on C (issue 26), not only the three left; index 1 still needs a boot.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(RunOne(run, "agent1", "boot-C"), 0) << i;
  std::string reboot;
  EXPECT_EQ(RunOne(run, "agent1", "boot-C", &reboot), -1);
  EXPECT_FALSE(reboot.empty());
  EXPECT_EQ(RunOne(run, "agent1", "boot-D"), 1);
}

TEST_F(StoreBootsTest, AOneBootRunIsMeasuredOnOneBoot) {
  const std::string run = Submit("");
  EXPECT_EQ(RunOne(run, "agent1", "boot-A"), 0);
  // An unplanned reboot: the run's one boot starts again on boot B.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(RunOne(run, "agent1", "boot-B"), 0) << i;
  EXPECT_EQ(RunOne(run, "agent1", "boot-B"), -1);
  EXPECT_EQ(store_->GetRun(run)->state(), v1::RUN_STATE_SUCCEEDED);
  const std::vector<v1::Sample> samples = *store_->GetSamples(run);
  for (const v1::Sample& s : samples) {
    EXPECT_EQ(s.boot_id(), s.excluded().empty() ? "boot-B" : "boot-A");
  }
}

TEST_F(StoreBootsTest, AdaptiveRunWaitsForADecisionThenGrowsAndStops) {
  const std::string run = Submit(
      "iterations: {min: 2, max: 8, target_ci: 1%}\nboots: {min: 1, max: 3, target_ci: 1%}\n");
  ASSERT_TRUE(store_->AdaptiveRunsAwaitingDecision()->empty());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(RunOne(run, "agent1", "boot-A"), 0);
  // Plan done: not succeeded yet, waiting for the controller.
  EXPECT_EQ(store_->GetRun(run)->state(), v1::RUN_STATE_RUNNING);
  absl::StatusOr<std::vector<ActiveRun>> waiting = store_->AdaptiveRunsAwaitingDecision();
  ASSERT_TRUE(waiting.ok());
  ASSERT_EQ(waiting->size(), 1u);
  EXPECT_EQ((*waiting)[0].run_id, run);

  // More iterations go to the latest boot, which the host is still on.
  RunExtension more;
  more.iterations_per_boot = 3;
  more.note = "growing";
  ASSERT_TRUE(store_->ExtendRun(run, more, now_).ok());
  EXPECT_TRUE(store_->AdaptiveRunsAwaitingDecision()->empty());
  EXPECT_EQ(RunOne(run, "agent1", "boot-A"), 0);
  EXPECT_EQ(RunOne(run, "agent1", "boot-A"), 0);

  // A new boot repeats 3 iterations of both arms, after a reboot.
  RunExtension boot;
  boot.add_boot = true;
  ASSERT_TRUE(store_->ExtendRun(run, boot, now_).ok());
  std::string reboot;
  EXPECT_EQ(RunOne(run, "agent1", "boot-A", &reboot), -1);
  EXPECT_FALSE(reboot.empty());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(RunOne(run, "agent1", "boot-B"), 1) << i;
  EXPECT_EQ(RunOne(run, "agent1", "boot-B"), -1);

  absl::StatusOr<v1::Run> r = store_->GetRun(run);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->iterations_per_boot(), 3u);
  EXPECT_EQ(r->boots(), 2u);
  EXPECT_EQ(r->adaptive_rounds(), 2u);
  EXPECT_EQ(r->jobs().total(), 4u + 2u + 6u);
  EXPECT_EQ(r->state(), v1::RUN_STATE_RUNNING);

  // A new boot may get another iteration count (the Kalibera–Jones optimum), which later
  // boots inherit.
  RunExtension fewer;
  fewer.add_boot = true;
  fewer.iterations_per_boot = 2;
  ASSERT_TRUE(store_->ExtendRun(run, fewer, now_).ok());
  EXPECT_EQ(RunOne(run, "agent1", "boot-B", &reboot), -1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(RunOne(run, "agent1", "boot-C"), 2) << i;
  EXPECT_EQ(RunOne(run, "agent1", "boot-C"), -1);
  r = store_->GetRun(run);
  EXPECT_EQ(r->iterations_per_boot(), 2u);
  EXPECT_EQ(r->boots(), 3u);
  EXPECT_EQ(r->jobs().total(), 4u + 2u + 6u + 4u);

  ASSERT_TRUE(store_->FinishAdaptiveRun(run, "target reached", now_).ok());
  r = store_->GetRun(run);
  EXPECT_EQ(r->state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(r->stop_reason(), "target reached");
  EXPECT_TRUE(store_->AdaptiveRunsAwaitingDecision()->empty());
}

TEST_F(StoreBootsTest, ExtendingCopiesEverySlotsJobsWithTheirSweepValues) {
  absl::StatusOr<v1::RunSpec> spec = scheduler::ParseRunSpec(
      "name: s\nbenchmark: pipetest\nsweep: {loops: [1000, 3000]}\n"
      "iterations: {min: 1, max: 4, target_ci: 1%}\nhosts: {count: 2}\n"
      "arms: [{name: a}, {name: b}]\n",
      "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<std::string> run = store_->CreateRun(*spec, "", scheduler::ExpandRun(*spec), now_);
  ASSERT_TRUE(run.ok());
  // Each host runs its slot's 4 jobs (2 sweep values x 2 arms).
  for (const char* agent : {"agent1", "agent2"}) {
    for (int i = 0; i < 4; ++i) EXPECT_EQ(RunOne(*run, agent, "boot-1"), 0) << agent << i;
  }
  ASSERT_EQ(store_->AdaptiveRunsAwaitingDecision()->size(), 1u);
  RunExtension more;
  more.iterations_per_boot = 3;
  ASSERT_TRUE(store_->ExtendRun(*run, more, now_).ok());
  EXPECT_EQ(store_->GetRun(*run)->jobs().total(), 8u + 2u * 8u);
  // Each host gets iterations 2 and 3 of its own slot, for every sweep value and arm.
  for (const char* agent : {"agent1", "agent2"}) {
    std::multiset<std::string> got;
    while (std::optional<v1::JobAssignment> a = LeaseAndComplete(*run, agent, "boot-1")) {
      got.insert(a->arm() + "/" + a->param_value() + "/" + std::to_string(a->iteration()));
      EXPECT_EQ(a->params().at("loops"), a->param_value());
    }
    EXPECT_EQ(got, (std::multiset<std::string>{"a/1000/2", "b/1000/2", "a/3000/2", "b/3000/2",
                                               "a/1000/3", "b/1000/3", "a/3000/3", "b/3000/3"}))
        << agent;
  }
  EXPECT_EQ(store_->GetRun(*run)->jobs().succeeded(), 24u);
  EXPECT_EQ(store_->AdaptiveRunsAwaitingDecision()->size(), 1u);
}

TEST_F(StoreBootsTest, ExtendingRefusesAPlanThatDoesNotGrowOrAFinishedRun) {
  const std::string run = Submit("iterations: {min: 2, max: 8, target_ci: 1%}\n");
  RunExtension same;
  same.iterations_per_boot = 2;
  EXPECT_EQ(store_->ExtendRun(run, same, now_).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(store_->FinishAdaptiveRun(run, "stopped", now_).ok());
  RunExtension more;
  more.iterations_per_boot = 4;
  EXPECT_EQ(store_->ExtendRun(run, more, now_).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->GetRun(run)->jobs().total(), 4u);
}

}  // namespace
}  // namespace tlbfleet::store
