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
  // The run index of migration 14 exists.
  auto idx = (*db)->Prepare("SELECT name FROM sqlite_master WHERE name = 'sample_sources_by_run'");
  ASSERT_TRUE(idx.ok());
  EXPECT_TRUE(*idx->Step());
}

TEST_F(StoreTest, Migrations13And14KeepEverySampleAndEveryColumn) {
  // Migration 13 rebuilt `samples`; 14 splits it into sample_sources (what a lease's samples
  // share) and sample_values, behind a view with the old columns.
  auto exec_sample = [](Database& db, const std::string& lease, int seq, const std::string& boot) {
    return db.Exec(absl::StrCat(
        "INSERT OR IGNORE INTO samples(run_id, job_id, lease_id, seq, arm, param_name,"
        " param_value, iteration, metric, series, value, unit, better, agent_id, host, boot_id,"
        " kernel_release, kernel_cmdline, microarch, ceiling_applied, ceiling, ceiling_observed,"
        " peer_host, boot_entry) VALUES(1, ",
        lease == "j1a1" ? 1 : 2, ", '", lease, "', ", seq, ", '", lease == "j1a1" ? "base" : "test",
        "', 'threads', '4', 1, 'm', '', ", seq, ".5, 'us', 1, 'a1', 'h1', '", boot,
        "', '6.1', 'pti=on', 'ivybridge', 1, 33, 1, 'peer', 'e1')"));
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
                           " VALUES(1, 0, 'base', 'threads', '4', 1, x'', 'leased', 1, 'j1a1',"
                           " 'a1'), (1, 0, 'test', 'threads', '4', 1, x'', 'leased', 1, 'j2a1',"
                           " 'a1')")
                    .ok());
    for (int seq : {1, 2, 3}) ASSERT_TRUE(exec_sample(**db, "j1a1", seq, "b1").ok());
    ASSERT_TRUE(Migrate(**db, 13).ok());
    // Lease j2a1's samples came from two boots (two sources after migration 14).
    for (int seq : {1, 2}) ASSERT_TRUE(exec_sample(**db, "j2a1", seq, "b1").ok());
    ASSERT_TRUE(exec_sample(**db, "j2a1", 3, "b2").ok());
  }
  ASSERT_TRUE(Store::Open(path_).ok());
  auto db = *Database::Open(path_);
  EXPECT_EQ(*SchemaVersion(*db), LatestSchemaVersion());
  // Every row and column came across.
  auto rows = *db->Prepare(
      "SELECT lease_id, seq, run_id, job_id, arm, param_name, param_value, iteration, metric,"
      " series, value, unit, better, agent_id, host, boot_id, kernel_release, kernel_cmdline,"
      " microarch, ceiling_applied, ceiling, ceiling_observed, peer_host, boot_entry"
      " FROM samples ORDER BY lease_id, seq");
  for (const std::string lease : {"j1a1", "j2a1"}) {
    for (int seq : {1, 2, 3}) {
      SCOPED_TRACE(lease + " " + std::to_string(seq));
      ASSERT_TRUE(*rows.Step());
      EXPECT_EQ(rows.Text(0), lease);
      EXPECT_EQ(rows.Int(1), seq);
      EXPECT_EQ(rows.Int(2), 1);
      EXPECT_EQ(rows.Int(3), lease == "j1a1" ? 1 : 2);
      EXPECT_EQ(rows.Text(4), lease == "j1a1" ? "base" : "test");
      EXPECT_EQ(rows.Text(5), "threads");
      EXPECT_EQ(rows.Text(6), "4");
      EXPECT_EQ(rows.Int(7), 1);
      EXPECT_EQ(rows.Text(8), "m");
      EXPECT_EQ(rows.Text(9), "");
      EXPECT_DOUBLE_EQ(rows.Double(10), seq + 0.5);
      EXPECT_EQ(rows.Text(11), "us");
      EXPECT_EQ(rows.Int(12), 1);
      EXPECT_EQ(rows.Text(13), "a1");
      EXPECT_EQ(rows.Text(14), "h1");
      EXPECT_EQ(rows.Text(15), lease == "j2a1" && seq == 3 ? "b2" : "b1");
      EXPECT_EQ(rows.Text(16), "6.1");
      EXPECT_EQ(rows.Text(17), "pti=on");
      EXPECT_EQ(rows.Text(18), "ivybridge");
      EXPECT_EQ(rows.Int(19), 1);
      EXPECT_EQ(rows.Int(20), 33);
      EXPECT_EQ(rows.Int(21), 1);
      EXPECT_EQ(rows.Text(22), "peer");
      EXPECT_EQ(rows.Text(23), "e1");
    }
  }
  EXPECT_FALSE(*rows.Step());
  // One source per lease and provenance; the old table is gone.
  auto sources = *db->Prepare(
      "SELECT group_concat(lease_id || '/' || boot_id, ' ') FROM (SELECT lease_id, boot_id"
      " FROM sample_sources ORDER BY id)");
  ASSERT_TRUE(*sources.Step());
  EXPECT_EQ(sources.Text(0), "j1a1/b1 j2a1/b1 j2a1/b2");
  auto kinds = *db->Prepare(
      "SELECT group_concat(type || ':' || name, ' ') FROM (SELECT type, name FROM sqlite_master"
      " WHERE tbl_name IN ('samples', 'sample_values', 'sample_sources') ORDER BY name)");
  ASSERT_TRUE(*kinds.Step());
  // sample_values is its own index (WITHOUT ROWID, keyed by source and seq): no other.
  EXPECT_EQ(kinds.Text(0),
            "table:sample_sources index:sample_sources_by_lease index:sample_sources_by_run"
            " table:sample_values view:samples");
  // The key still refuses a replayed sample.
  ASSERT_TRUE(db->Exec("INSERT OR IGNORE INTO sample_values(source_id, seq, metric, series,"
                       " value, unit, better, ceiling_applied, ceiling, ceiling_observed)"
                       " VALUES(1, 2, 'm', '', 9, 'us', 1, 1, 33, 1)")
                  .ok());
  EXPECT_EQ(db->Changes(), 0);
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

TEST_F(StoreTest, ExpiredLeaseRequeuesForItsOwnAgentAndDropsPartialSamples) {
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

  // The slot is still agent1's (issue 26: a slot is one machine): agent2 gets nothing, and
  // agent1 runs the job again as a new attempt.
  EXPECT_FALSE(LeaseNext(*store, run_id, "agent2", 3700, 1000)->has_value());
  auto second = LeaseNext(*store, run_id, "agent1", 3700, 1000);
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_EQ((*second)->job_id(), first.job_id());
  EXPECT_NE((*second)->lease_id(), first.lease_id());
  // A late replay of the expired attempt is rejected.
  EXPECT_TRUE(store->IngestSamples("agent1", Batch(first, 1))->rejected);
  EXPECT_FALSE(store->RenewLease(first.lease_id(), "agent1", 3800, 1000).value());
}

TEST_F(StoreTest, ABatchsSharedOriginIsEverySamplesAndASamplesOwnFieldWins) {
  auto store = *Store::Open(path_);
  auto run_id = *store->CreateRun(Spec(), "yaml", Plans(), 1000);
  auto a = **LeaseNext(*store, run_id, "agent1", 2000, 60000);
  v1::SampleBatch batch = Batch(a, 3);
  v1::SampleOrigin* shared = batch.mutable_shared_origin();
  shared->set_host("h1");
  shared->set_boot_id("boot-a");
  shared->set_kernel_release("6.1.0-28-amd64");
  shared->set_kernel_cmdline("ro quiet");
  shared->set_microarch("IvyBridge");
  shared->set_boot_entry("lab-6.1");
  batch.mutable_samples(2)->set_boot_id("boot-b");  // its own: wins
  batch.mutable_samples(2)->set_peer_host("peer-1");
  ASSERT_EQ(store->IngestSamples("agent1", batch)->stored, 3u);
  // A replay of the whole batch stores nothing (each sample is found under its source).
  ASSERT_EQ(store->IngestSamples("agent1", batch)->stored, 0u);
  ASSERT_FALSE(store->CompleteJob("agent1", Done(a, 3), 3000)->rejected);
  absl::StatusOr<std::vector<v1::Sample>> samples = store->GetSamples(run_id);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 3u);
  for (const v1::Sample& s : *samples) {
    SCOPED_TRACE(s.seq());
    EXPECT_EQ(s.host(), "h1");
    EXPECT_EQ(s.boot_id(), s.seq() == 2 ? "boot-b" : "boot-a");
    EXPECT_EQ(s.kernel_release(), "6.1.0-28-amd64");
    EXPECT_EQ(s.kernel_cmdline(), "ro quiet");
    EXPECT_EQ(s.microarch(), "IvyBridge");
    EXPECT_EQ(s.peer_host(), s.seq() == 2 ? "peer-1" : "");
    EXPECT_EQ(s.boot_entry(), "lab-6.1");
    EXPECT_EQ(s.agent_id(), "agent1");
    EXPECT_EQ(s.arm(), a.arm());
    EXPECT_EQ(s.lease_id(), a.lease_id());
  }
  auto db = *Database::Open(path_);
  auto sources = *db->Prepare("SELECT COUNT(*) FROM sample_sources");
  ASSERT_TRUE(*sources.Step());
  EXPECT_EQ(sources.Int(0), 2) << "one per distinct origin of the lease";
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
