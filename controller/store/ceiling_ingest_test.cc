// The store keeps what each sample says about the flush ceiling and the netperf peer, and
// fails a job whose samples did not run under the ceiling its arm asked for, with both values.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "controller/store/lease_for_test.h"
#include "controller/store/store.h"

namespace tlbfleet::store {
namespace {

class CeilingIngestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-ceiling-ingest-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    store_ = *Store::Open((dir_ / "fleet.db").string());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // One job of arm "c512" (ceiling 512), leased to agent1.
  v1::JobAssignment LeaseOne(const std::string& ceiling) {
    v1::RunSpec spec;
    spec.set_name("t");
    spec.set_benchmark("netperf");
    spec.set_iterations(1);
    v1::ArmSpec* arm = spec.add_arms();
    arm->set_name("c512");
    arm->set_ceiling(ceiling);
    spec.mutable_hosts()->set_count(1);
    scheduler::JobPlan p;
    p.arm = "c512";
    p.iteration = 1;
    p.ceiling = ceiling;
    p.timeout_seconds = 30;
    run_id_ = *store_->CreateRun(spec, "yaml", {p}, 1000);
    return **LeaseNext(*store_, run_id_, "agent1", 2000, 60000);
  }

  // Two samples with the given ceilings; applied when `applied`.
  absl::StatusOr<CompletionResult> Finish(const v1::JobAssignment& a, bool applied,
                                          std::vector<int64_t> ceilings) {
    v1::SampleBatch batch;
    batch.set_lease_id(a.lease_id());
    batch.set_job_id(a.job_id());
    for (size_t i = 0; i < ceilings.size(); ++i) {
      v1::Sample* s = batch.add_samples();
      s->set_seq(i);
      s->set_metric("trans_per_sec");
      s->set_value(100);
      s->set_ceiling_applied(applied);
      s->set_ceiling_observed(true);
      s->set_ceiling(ceilings[i]);
      s->set_peer_host("b2-07");
    }
    EXPECT_TRUE(store_->IngestSamples("agent1", batch).ok());
    v1::JobComplete c;
    c.set_lease_id(a.lease_id());
    c.set_job_id(a.job_id());
    c.set_status(v1::JOB_STATUS_SUCCEEDED);
    c.set_sample_count(ceilings.size());
    return store_->CompleteJob("agent1", c, 3000);
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
  std::string run_id_;
};

TEST_F(CeilingIngestTest, ObservedCeilingAndPeerAreStoredWithEverySample) {
  v1::JobAssignment a = LeaseOne("");
  ASSERT_TRUE(Finish(a, false, {33, 33}).ok());
  EXPECT_EQ(store_->GetRun(run_id_)->state(), v1::RUN_STATE_SUCCEEDED);
  auto samples = *store_->GetSamples(run_id_);
  ASSERT_EQ(samples.size(), 2u);
  for (const v1::Sample& s : samples) {
    EXPECT_FALSE(s.ceiling_applied());
    EXPECT_TRUE(s.ceiling_observed());
    EXPECT_EQ(s.ceiling(), 33);
    EXPECT_EQ(s.peer_host(), "b2-07");
  }
}

TEST_F(CeilingIngestTest, MatchingCeilingSucceeds) {
  v1::JobAssignment a = LeaseOne("512");
  ASSERT_TRUE(Finish(a, true, {512, 512}).ok());
  EXPECT_EQ(store_->GetRun(run_id_)->state(), v1::RUN_STATE_SUCCEEDED);
}

TEST_F(CeilingIngestTest, SampleUnderAnotherCeilingFailsTheJobWithBothValues) {
  v1::JobAssignment a = LeaseOne("512");
  auto done = Finish(a, true, {512, 500});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(done->run_finished);
  v1::Run run = *store_->GetRun(run_id_);
  EXPECT_EQ(run.state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run.error().find("arm c512 asked for flush ceiling 512 but sample 1 ran under 500"),
            std::string::npos)
      << run.error();
}

TEST_F(CeilingIngestTest, SampleThatClaimsNoCeilingFailsACeilingJob) {
  v1::JobAssignment a = LeaseOne("default");
  ASSERT_TRUE(Finish(a, false, {33, 33}).ok());
  v1::Run run = *store_->GetRun(run_id_);
  EXPECT_EQ(run.state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run.error().find("says the agent did not set the ceiling"), std::string::npos)
      << run.error();
}

}  // namespace
}  // namespace tlbfleet::store
