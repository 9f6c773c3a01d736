#include "controller/store/store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "controller/store/lease_for_test.h"
#include "controller/store/migrations.h"

namespace tlbfleet::store {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-store-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "fleet.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static v1::RunSpec Spec() {
    v1::RunSpec spec;
    spec.set_name("t");
    spec.set_benchmark("ebizzy");
    spec.set_iterations(1);
    spec.add_arms()->set_name("a");
    spec.add_arms()->set_name("b");
    spec.mutable_hosts()->set_count(1);
    return spec;
  }
  // Two jobs (arms a and b), one slot.
  static std::vector<scheduler::JobPlan> Plans(int slots = 1) {
    std::vector<scheduler::JobPlan> plans;
    for (int slot = 0; slot < slots; ++slot) {
      for (const char* arm : {"a", "b"}) {
        scheduler::JobPlan p;
        p.slot = static_cast<uint32_t>(slot);
        p.arm = arm;
        p.param_name = "threads";
        p.param_value = "1";
        p.iteration = 1;
        p.params = {{"threads", "1"}};
        p.timeout_seconds = 30;
        plans.push_back(p);
      }
    }
    return plans;
  }
  static v1::SampleBatch Batch(const v1::JobAssignment& a, int n) {
    v1::SampleBatch batch;
    batch.set_lease_id(a.lease_id());
    batch.set_job_id(a.job_id());
    for (int i = 0; i < n; ++i) {
      v1::Sample* s = batch.add_samples();
      s->set_seq(static_cast<uint64_t>(i));
      s->set_metric("records_per_sec");
      s->set_value(100 + i);
      s->set_better(v1::BETTER_HIGHER);
      s->set_arm("forged-arm");  // the store must take the arm from the job, not the agent
    }
    return batch;
  }
  static v1::JobComplete Done(const v1::JobAssignment& a, uint64_t n) {
    v1::JobComplete c;
    c.set_lease_id(a.lease_id());
    c.set_job_id(a.job_id());
    c.set_status(v1::JOB_STATUS_SUCCEEDED);
    c.set_sample_count(n);
    return c;
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(StoreTest, MigratesEmptyDatabaseToLatest) {
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto db = Database::Open(path_);
  ASSERT_TRUE(db.ok());
  auto version = SchemaVersion(**db);
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(*version, LatestSchemaVersion());
  auto wal = (*db)->Prepare("PRAGMA journal_mode");
  ASSERT_TRUE(wal.ok());
  ASSERT_TRUE(*wal->Step());
  EXPECT_EQ(wal->Text(0), "wal");
}

TEST_F(StoreTest, MigratesExistingVersion1DatabaseKeepingData) {
  {
    auto db = Database::Open(path_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(Migrate(**db, 1).ok());
    ASSERT_TRUE((*db)
                    ->Exec("INSERT INTO runs(name, benchmark, spec, spec_yaml, state, created_ms)"
                           " VALUES('old', 'ebizzy', x'', 'name: old', 'succeeded', 1000)")
                    .ok());
    EXPECT_EQ(*SchemaVersion(**db), 1);
  }
  auto store = Store::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  auto run = (*store)->GetRun("1");
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->state(), v1::RUN_STATE_SUCCEEDED);
  auto db = Database::Open(path_);
  EXPECT_EQ(*SchemaVersion(**db), LatestSchemaVersion());
  // The index of migration 2 exists.
  auto idx = (*db)->Prepare("SELECT name FROM sqlite_master WHERE name = 'samples_by_run'");
  ASSERT_TRUE(idx.ok());
  EXPECT_TRUE(*idx->Step());
}

TEST_F(StoreTest, Migration13KeepsEverySampleAndStillRefusesAReplay) {
  // Migration 13 rebuilds `samples` (one index on job, lease and seq; no AUTOINCREMENT).
  auto exec_sample = [](Database& db, int seq) {
    return db.Exec(absl::StrCat(
        "INSERT OR IGNORE INTO samples(run_id, job_id, lease_id, seq, arm, param_name,"
        " param_value, iteration, metric, series, value, unit, better, agent_id, host, boot_id,"
        " kernel_release, kernel_cmdline, microarch, ceiling_applied, ceiling, ceiling_observed,"
        " peer_host, boot_entry) VALUES(1, 1, 'j1a1', ",
        seq, ", 'base', '', '', 1, 'm', '', ", seq,
        ".5, 'us', 1, 'a1', 'h1', 'b1', '6.1', 'pti=on', 'ivybridge', 1, 33, 1, 'peer', 'e1')"));
  };
  {
    auto db = Database::Open(path_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(Migrate(**db, 12).ok());
    ASSERT_TRUE((*db)
                    ->Exec("INSERT INTO runs(name, benchmark, spec, spec_yaml, state, created_ms)"
                           " VALUES('old', 'ebizzy', x'', 'name: old', 'running', 1000);"
                           "INSERT INTO jobs(run_id, slot, arm, param_name, param_value, iteration,"
                           " assignment, state, attempts, lease_id, agent_id)"
                           " VALUES(1, 0, 'base', '', '', 1, x'', 'leased', 1, 'j1a1', 'a1')")
                    .ok());
    for (int seq : {1, 2, 3}) ASSERT_TRUE(exec_sample(**db, seq).ok());
  }
  ASSERT_TRUE(Store::Open(path_).ok());
  auto db = *Database::Open(path_);
  EXPECT_EQ(*SchemaVersion(*db), LatestSchemaVersion());
  // Every row and column came across.
  auto rows = *db->Prepare(
      "SELECT COUNT(*), SUM(value), MIN(id), MAX(id), MIN(ceiling), MIN(peer_host),"
      " MIN(boot_entry), MIN(kernel_cmdline) FROM samples");
  ASSERT_TRUE(*rows.Step());
  EXPECT_EQ(rows.Int(0), 3);
  EXPECT_DOUBLE_EQ(rows.Double(1), 1.5 + 2.5 + 3.5);
  EXPECT_EQ(rows.Int(2), 1);
  EXPECT_EQ(rows.Int(3), 3);
  EXPECT_EQ(rows.Int(4), 33);
  EXPECT_EQ(rows.Text(5), "peer");
  EXPECT_EQ(rows.Text(6), "e1");
  EXPECT_EQ(rows.Text(7), "pti=on");
  // A replayed sample is still ignored; a new one is stored.
  ASSERT_TRUE(exec_sample(*db, 2).ok());
  EXPECT_EQ(db->Changes(), 0);
  ASSERT_TRUE(exec_sample(*db, 4).ok());
  EXPECT_EQ(db->Changes(), 1);
  // The indexes ingest keeps up: two, and no sqlite_sequence row for samples.
  auto indexes = *db->Prepare(
      "SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_master WHERE type = 'index'"
      " AND tbl_name = 'samples' ORDER BY name)");
  ASSERT_TRUE(*indexes.Step());
  EXPECT_EQ(indexes.Text(0), "samples_by_job_lease samples_by_run");
  auto sequence = *db->Prepare("SELECT COUNT(*) FROM sqlite_sequence WHERE name = 'samples'");
  ASSERT_TRUE(*sequence.Step());
  EXPECT_EQ(sequence.Int(0), 0);
}

TEST_F(StoreTest, RefusesDatabaseFromNewerController) {
  {
    auto db = Database::Open(path_);
    ASSERT_TRUE((*db)->Exec("PRAGMA user_version = 999").ok());
  }
  auto store = Store::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(StoreTest, RunLifecycleStoresExactlyTheSamplesSent) {
  auto store = *Store::Open(path_);
  auto run_id = store->CreateRun(Spec(), "yaml", Plans(), 1000);
  ASSERT_TRUE(run_id.ok()) << run_id.status();
  EXPECT_EQ(store->GetRun(*run_id)->jobs().total(), 2u);

  for (int i = 0; i < 2; ++i) {
    auto a = LeaseNext(*store, *run_id, "agent1", 2000, 60000);
    ASSERT_TRUE(a.ok() && a->has_value());
    EXPECT_EQ((*a)->arm(), i == 0 ? "a" : "b");
    auto ingest = store->IngestSamples("agent1", Batch(**a, 3));
    ASSERT_TRUE(ingest.ok());
    EXPECT_FALSE(ingest->rejected);
    EXPECT_EQ(ingest->stored, 3u);
    // A replay (reconnect) stores nothing new.
    auto replay = store->IngestSamples("agent1", Batch(**a, 3));
    EXPECT_EQ(replay->stored, 0u);
    auto done = store->CompleteJob("agent1", Done(**a, 3), 3000);
    ASSERT_TRUE(done.ok());
    EXPECT_FALSE(done->rejected);
    EXPECT_EQ(done->run_finished, i == 1);
  }
  EXPECT_EQ(store->GetRun(*run_id)->state(), v1::RUN_STATE_SUCCEEDED);
  auto samples = store->GetSamples(*run_id);
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 6u);
  EXPECT_EQ((*samples)[0].arm(), "a");
  EXPECT_EQ((*samples)[5].arm(), "b");
  EXPECT_FALSE(LeaseNext(*store, *run_id, "agent1", 4000, 60000)->has_value());
}

TEST_F(StoreTest, SamplesForALeaseNotHeldAreRejectedAndNotStored) {
  auto store = *Store::Open(path_);
  auto run_id = *store->CreateRun(Spec(), "yaml", Plans(), 1000);
  auto a = **LeaseNext(*store, run_id, "agent1", 2000, 60000);
  auto ingest = store->IngestSamples("intruder", Batch(a, 2));
  ASSERT_TRUE(ingest.ok());
  EXPECT_TRUE(ingest->rejected);
  v1::JobAssignment bogus = a;
  bogus.set_lease_id("j999a1");
  EXPECT_TRUE(store->IngestSamples("agent1", Batch(bogus, 2))->rejected);
  EXPECT_TRUE(store->CompleteJob("intruder", Done(a, 0), 3000)->rejected);
  EXPECT_EQ(store->GetSamples(run_id)->size(), 0u);
}

TEST_F(StoreTest, ExpiredLeaseRequeuesToAnotherAgentAndDropsPartialSamples) {
  auto store = *Store::Open(path_);
  auto run_id = *store->CreateRun(Spec(), "yaml", Plans(), 1000);
  auto first = **LeaseNext(*store, run_id, "agent1", 2000, 1000);
  ASSERT_FALSE(store->IngestSamples("agent1", Batch(first, 1))->rejected);
  // The slot belongs to agent1: agent2 gets nothing while agent1 holds it.
  EXPECT_FALSE(LeaseNext(*store, run_id, "agent2", 2100, 1000)->has_value());
  // A heartbeat renews the lease.
  EXPECT_TRUE(*store->RenewLease(first.lease_id(), "agent1", 2500, 1000));
  EXPECT_TRUE(store->ExpireLeases(3000, 3)->empty());
  auto expired = store->ExpireLeases(3600, 3);
  ASSERT_TRUE(expired.ok());
  ASSERT_EQ(expired->size(), 1u);
  EXPECT_TRUE((*expired)[0].requeued);
  EXPECT_EQ(store->GetSamples(run_id)->size(), 0u);

  auto second = LeaseNext(*store, run_id, "agent2", 3700, 1000);
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_EQ((*second)->job_id(), first.job_id());
  EXPECT_NE((*second)->lease_id(), first.lease_id());
  // The dead agent's late replay is rejected.
  EXPECT_TRUE(store->IngestSamples("agent1", Batch(first, 1))->rejected);
  EXPECT_FALSE(store->RenewLease(first.lease_id(), "agent1", 3800, 1000).value());
}

TEST_F(StoreTest, TooManyExpiriesFailTheRun) {
  auto store = *Store::Open(path_);
  auto run_id = *store->CreateRun(Spec(), "yaml", Plans(), 1000);
  int64_t now = 2000;
  for (int attempt = 1; attempt <= 2; ++attempt) {
    ASSERT_TRUE(LeaseNext(*store, run_id, "agent1", now, 10)->has_value());
    now += 100;
    auto expired = *store->ExpireLeases(now, 2);
    ASSERT_EQ(expired.size(), 1u);
    EXPECT_EQ(expired[0].requeued, attempt < 2);
  }
  auto run = *store->GetRun(run_id);
  EXPECT_EQ(run.state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run.error().find("lease expired"), std::string::npos);
}

TEST_F(StoreTest, FailedJobFailsRunWithReasonAndCancelsTheRest) {
  auto store = *Store::Open(path_);
  auto run_id = *store->CreateRun(Spec(), "yaml", Plans(), 1000);
  auto a = **LeaseNext(*store, run_id, "agent1", 2000, 60000);
  v1::JobComplete c = Done(a, 0);
  c.set_status(v1::JOB_STATUS_FAILED);
  c.set_error("cannot allocate memory");
  auto done = *store->CompleteJob("agent1", c, 3000);
  EXPECT_TRUE(done.run_finished);
  auto run = *store->GetRun(run_id);
  EXPECT_EQ(run.state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run.error().find("cannot allocate memory"), std::string::npos);
  EXPECT_EQ(run.jobs().cancelled(), 1u);
}

TEST_F(StoreTest, TwoSlotsGoToTwoDifferentHosts) {
  auto store = *Store::Open(path_);
  v1::RunSpec spec = Spec();
  spec.mutable_hosts()->set_count(2);
  auto run_id = *store->CreateRun(spec, "yaml", Plans(2), 1000);
  auto a1 = **LeaseNext(*store, run_id, "agent1", 2000, 60000);
  ASSERT_FALSE(store->IngestSamples("agent1", Batch(a1, 1))->rejected);
  ASSERT_FALSE(store->CompleteJob("agent1", Done(a1, 1), 2100)->rejected);
  auto a2 = **LeaseNext(*store, run_id, "agent1", 2200, 60000);
  auto b1 = **LeaseNext(*store, run_id, "agent2", 2200, 60000);
  EXPECT_EQ(a2.arm(), "b");  // agent1 stays on its slot
  EXPECT_EQ(b1.arm(), "a");  // agent2 takes the other slot from its start
  EXPECT_FALSE(LeaseNext(*store, run_id, "agent3", 2300, 60000)->has_value());
}

TEST_F(StoreTest, CancelReturnsRunningLeases) {
  auto store = *Store::Open(path_);
  auto run_id = *store->CreateRun(Spec(), "yaml", Plans(), 1000);
  auto a = **LeaseNext(*store, run_id, "agent1", 2000, 60000);
  auto running = store->CancelRun(run_id, 2500);
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->size(), 1u);
  EXPECT_EQ((*running)[0].second, a.lease_id());
  EXPECT_EQ(store->GetRun(run_id)->state(), v1::RUN_STATE_CANCELLED);
  EXPECT_EQ(store->GetRun("999").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store->GetRun("x1").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tlbfleet::store
