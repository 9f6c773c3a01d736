// Run events, the counters kept on run rows, checked blobs, indexes and agent principals.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "controller/scheduler/expand.h"
#include "controller/scheduler/run_spec.h"
#include "controller/store/lease_for_test.h"
#include "controller/store/migrations.h"
#include "controller/store/store.h"

namespace tlbfleet::store {
namespace {

using ::testing::HasSubstr;

class StoreEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-events-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "fleet.db").string();
    store_ = *Store::Open(path_);
    store_->SetEventSink([this](const std::vector<v1::RunEvent>& events) {
      sunk_.insert(sunk_.end(), events.begin(), events.end());
    });
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Create(const std::string& yaml) {
    absl::StatusOr<v1::RunSpec> spec = scheduler::ParseRunSpec(yaml, "t.yaml");
    EXPECT_TRUE(spec.ok()) << spec.status();
    absl::StatusOr<std::string> run =
        store_->CreateRun(*spec, yaml, scheduler::ExpandRun(*spec), now_);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.value_or("");
  }
  v1::JobAssignment Lease(const std::string& run, const std::string& agent) {
    absl::StatusOr<std::optional<v1::JobAssignment>> a = LeaseNext(*store_, run, agent, now_, 1000);
    EXPECT_TRUE(a.ok() && a->has_value());
    return a.ok() && a->has_value() ? **a : v1::JobAssignment();
  }
  void Finish(const v1::JobAssignment& a, const std::string& agent, int samples) {
    v1::SampleBatch batch;
    batch.set_lease_id(a.lease_id());
    for (int i = 0; i < samples; ++i) {
      v1::Sample* s = batch.add_samples();
      s->set_seq(static_cast<uint64_t>(i));
      s->set_metric("records_per_sec");
      s->set_value(1);
    }
    ASSERT_TRUE(store_->IngestSamples(agent, batch).ok());
    v1::JobComplete done;
    done.set_lease_id(a.lease_id());
    done.set_status(v1::JOB_STATUS_SUCCEEDED);
    done.set_sample_count(static_cast<uint64_t>(samples));
    done.set_elapsed_seconds(1.5);
    ASSERT_TRUE(store_->CompleteJob(agent, done, now_).ok());
  }
  // The run's counters as a plain recount of its rows sees them.
  std::string Recount(const std::string& run) {
    sqlite3* db = nullptr;
    sqlite3_open(path_.c_str(), &db);
    std::string out;
    const std::string sql =
        "SELECT state, COUNT(*) FROM jobs WHERE run_id = " + run +
        " GROUP BY state UNION ALL SELECT 'samples', COUNT(*) FROM samples WHERE run_id = " + run;
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      out += std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))) + "=" +
             std::to_string(sqlite3_column_int64(stmt, 1)) + " ";
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return out;
  }
  static std::string Counted(const v1::Run& run) {
    std::string out;
    const v1::JobCounts& c = run.jobs();
    // Same order as Recount: states alphabetically, then samples; zero counts left out.
    for (const auto& [name, n] :
         std::vector<std::pair<std::string, uint32_t>>{{"cancelled", c.cancelled()},
                                                       {"failed", c.failed()},
                                                       {"leased", c.running()},
                                                       {"queued", c.queued()},
                                                       {"succeeded", c.succeeded()}}) {
      if (n > 0) out += name + "=" + std::to_string(n) + " ";
    }
    return out + "samples=" + std::to_string(run.samples()) + " ";
  }
  void Exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  }

  std::filesystem::path dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
  std::vector<v1::RunEvent> sunk_;
  int64_t now_ = 1'000'000;
};

constexpr char kTwoJobs[] = "name: t\nbenchmark: ebizzy\narms: [{name: a}, {name: b}]\n";

TEST_F(StoreEventsTest, ALifecycleIsStoredAsEventsWithTheCountsAfterEach) {
  const std::string run = Create(kTwoJobs);
  const v1::JobAssignment first = Lease(run, "agent1");
  Finish(first, "agent1", 3);
  const v1::JobAssignment second = Lease(run, "agent1");
  Finish(second, "agent1", 2);

  absl::StatusOr<std::vector<v1::RunEvent>> events = store_->RunEventsSince(run, 0, 0);
  ASSERT_TRUE(events.ok()) << events.status();
  std::vector<std::string> kinds;
  for (const v1::RunEvent& e : *events) {
    kinds.push_back(e.has_state() ? "run:" + v1::RunState_Name(e.state().state())
                                  : "job:" + v1::JobState_Name(e.job().state()));
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"run:RUN_STATE_QUEUED", "run:RUN_STATE_RUNNING",
                                             "job:JOB_STATE_RUNNING", "job:JOB_STATE_SUCCEEDED",
                                             "job:JOB_STATE_RUNNING", "job:JOB_STATE_SUCCEEDED",
                                             "run:RUN_STATE_SUCCEEDED"}));
  for (size_t i = 1; i < events->size(); ++i) {
    EXPECT_GT((*events)[i].id(), (*events)[i - 1].id());
  }
  const v1::RunEvent& ended = (*events)[3];
  EXPECT_EQ(ended.job().lease_id(), first.lease_id());
  EXPECT_EQ(ended.job().agent_id(), "agent1");
  EXPECT_EQ(ended.job().arm(), "a");
  EXPECT_EQ(ended.job().samples(), 3u);
  EXPECT_DOUBLE_EQ(ended.job().elapsed_seconds(), 1.5);
  EXPECT_EQ(ended.jobs().succeeded(), 1u);
  EXPECT_EQ(ended.jobs().queued(), 1u);
  EXPECT_EQ(ended.samples(), 3u);
  EXPECT_EQ(events->back().jobs().succeeded(), 2u);
  EXPECT_EQ(events->back().samples(), 5u);
  EXPECT_THAT(events->back().state().reason(), HasSubstr("all done"));

  // The sink saw the same events, in the same order, with the same ids.
  ASSERT_EQ(sunk_.size(), events->size());
  for (size_t i = 0; i < sunk_.size(); ++i) EXPECT_EQ(sunk_[i].id(), (*events)[i].id());

  // Replay after an id, and paging.
  absl::StatusOr<std::vector<v1::RunEvent>> rest =
      store_->RunEventsSince(run, (*events)[4].id(), 1);
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ((*rest)[0].id(), (*events)[5].id());
  EXPECT_EQ(store_->RunEventsSince("99", 0, 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->RunEventsSince("x", 0, 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(StoreEventsTest, AnExpiredLeaseIsARequeueEventAndItsSamplesLeaveTheCount) {
  const std::string run = Create(kTwoJobs);
  const v1::JobAssignment a = Lease(run, "agent1");
  v1::SampleBatch batch;
  batch.set_lease_id(a.lease_id());
  batch.add_samples()->set_metric("records_per_sec");
  ASSERT_TRUE(store_->IngestSamples("agent1", batch).ok());
  EXPECT_EQ(store_->GetRun(run)->samples(), 1u);
  ASSERT_EQ(store_->ExpireLeases(now_ + 5000, 3)->size(), 1u);
  const v1::RunEvent& requeued = sunk_.back();
  ASSERT_TRUE(requeued.has_job());
  EXPECT_EQ(requeued.job().state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(requeued.job().lease_id(), a.lease_id());
  EXPECT_THAT(requeued.job().reason(), HasSubstr("lease expired"));
  EXPECT_EQ(requeued.samples(), 0u);
  EXPECT_EQ(requeued.jobs().queued(), 2u);
}

TEST_F(StoreEventsTest, CountersOnTheRunRowMatchARecountThroughEveryChange) {
  const std::string run = Create(
      "name: t\nbenchmark: ebizzy\niterations: 3\nhosts: {count: 2}\n"
      "arms: [{name: a}, {name: b}]\n");
  auto check = [&](const std::string& when) {
    absl::StatusOr<v1::Run> r = store_->GetRun(run);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(Counted(*r), Recount(run)) << when;
  };
  check("created");
  const v1::JobAssignment a = Lease(run, "agent1");
  const v1::JobAssignment b = Lease(run, "agent2");
  check("leased");
  Finish(a, "agent1", 4);
  check("completed");
  v1::SampleBatch partial;
  partial.set_lease_id(b.lease_id());
  partial.add_samples()->set_metric("records_per_sec");
  ASSERT_TRUE(store_->IngestSamples("agent2", partial).ok());
  ASSERT_TRUE(store_->ExpireLeases(now_ + 5000, 3).ok());
  check("expired");
  Lease(run, "agent1");
  ASSERT_TRUE(store_->CancelRun(run, now_).ok());
  check("cancelled");
  const std::string failed = Create(kTwoJobs);
  ASSERT_TRUE(store_->FailRun(failed, "broken", now_).ok());
  EXPECT_EQ(Counted(*store_->GetRun(failed)), Recount(failed));
  EXPECT_EQ(store_->GetRun(failed)->jobs().cancelled(), 2u);
}

TEST_F(StoreEventsTest, ADamagedBlobIsDataLossNotAnEmptyMessage) {
  const std::string run = Create(kTwoJobs);
  Exec("UPDATE runs SET spec = x'ffffffff' WHERE id = " + run);
  absl::StatusOr<v1::Run> r = store_->GetRun(run);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("run " + run + " spec"));
  EXPECT_EQ(store_->ActiveRuns().status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(store_->ListRuns(10).status().code(), absl::StatusCode::kDataLoss);
}

// SQLite's plan of `sql` on the database at `path`: the details of its steps, "; "-separated.
std::string QueryPlan(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string out;
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + sql).c_str(), -1, &stmt, nullptr),
            SQLITE_OK);
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    out += reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3));
    out += "; ";
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

TEST_F(StoreEventsTest, LeaseQueriesUseTheirIndexes) {
  auto plan = [this](const std::string& sql) { return QueryPlan(path_, sql); };
  // The same queries as store/dispatch.cc.
  EXPECT_THAT(plan("SELECT id, run_id, lease_id, agent_id, attempts FROM jobs"
                   " WHERE state = 'leased' AND lease_expires_ms < 5"),
              HasSubstr("USING INDEX jobs_leased_by_expiry"));
  EXPECT_THAT(plan("SELECT lease_id FROM jobs WHERE agent_id = 'a' AND state = 'leased'"
                   " ORDER BY id LIMIT 1"),
              HasSubstr("USING INDEX jobs_leased_by_agent"));
  // A lease: the agent's slot, then the slot's first queued job by one seek (never a walk of
  // the run's queue, which cost ~90,000 rows per lease under 1,000 agents).
  EXPECT_THAT(plan("SELECT slot FROM run_slots WHERE run_id = 1 AND agent_id = 'a'"),
              HasSubstr("USING INDEX sqlite_autoindex_run_slots_2 (run_id=? AND agent_id=?)"));
  EXPECT_THAT(plan("SELECT MIN(id) FROM jobs WHERE run_id = 1 AND slot = 2 AND state = 'queued'"),
              HasSubstr("USING INDEX jobs_queued_by_slot_id (run_id=? AND slot=?)"));
  // Dispatch's view of a run (runs.cc, LoadActive): its bound slots by key, and its slots with
  // queued jobs by one seek each, never a walk of its queued jobs.
  EXPECT_THAT(plan("SELECT slot, agent_id FROM run_slots WHERE run_id = 1"),
              HasSubstr("INDEX sqlite_autoindex_run_slots_"));
  const std::string work = plan(
      "WITH RECURSIVE s(slot) AS (SELECT MIN(slot) FROM jobs WHERE run_id = 1"
      " AND state = 'queued' UNION ALL SELECT (SELECT MIN(slot) FROM jobs WHERE run_id = 1"
      " AND state = 'queued' AND slot > s.slot) FROM s WHERE s.slot IS NOT NULL)"
      " SELECT slot FROM s WHERE slot IS NOT NULL");
  EXPECT_THAT(work, HasSubstr("USING INDEX jobs_queued_by_slot_id (run_id=? AND slot>?)"));
}

TEST_F(StoreEventsTest, SampleQueriesUseTheirIndexes) {
  auto plan = [this](const std::string& sql) { return QueryPlan(path_, sql); };
  // The same queries as store/results.cc and store/dispatch.cc. Ingest finds a lease's source
  // in one seek; a run's samples are read by run, then each source's values by key.
  EXPECT_THAT(plan("SELECT id FROM sample_sources WHERE job_id = 1 AND lease_id = 'l'"
                   " AND host = 'h' AND boot_id = 'b' AND kernel_release = 'k'"
                   " AND kernel_cmdline = 'c' AND microarch = 'm' AND peer_host = ''"
                   " AND boot_entry = ''"),
              HasSubstr("USING COVERING INDEX sample_sources_by_lease (job_id=? AND lease_id=? "
                        "AND host=? AND boot_id=? AND kernel_release=? AND kernel_cmdline=? "
                        "AND microarch=? AND peer_host=? AND boot_entry=?)"));
  const std::string by_run =
      plan("SELECT job_id, seq, metric, value FROM samples WHERE run_id = 1 ORDER BY job_id, seq");
  EXPECT_THAT(by_run, HasSubstr("USING INDEX sample_sources_by_run (run_id=?)"));
  EXPECT_THAT(by_run, HasSubstr("USING PRIMARY KEY (source_id=?)"));
  const std::string by_lease =
      plan("SELECT COUNT(*) FROM samples WHERE job_id = 1 AND lease_id = 'l'");
  EXPECT_THAT(by_lease,
              HasSubstr("USING COVERING INDEX sample_sources_by_lease (job_id=? AND lease_id=?)"));
  EXPECT_THAT(by_lease, HasSubstr("USING PRIMARY KEY (source_id=?)"));
  EXPECT_THAT(plan("DELETE FROM sample_values WHERE source_id IN (SELECT id FROM sample_sources"
                   " WHERE job_id = 1 AND lease_id = 'l')"),
              HasSubstr("USING PRIMARY KEY (source_id=?)"));
}

TEST_F(StoreEventsTest, AnAgentIdBelongsToThePrincipalThatFirstRegisteredIt) {
  v1::HostInfo host;
  host.set_hostname("h");
  ASSERT_TRUE(store_->RegisterHost("a1", host, "", now_).ok());  // development mode binds nothing
  ASSERT_TRUE(store_->RegisterHost("a1", host, "agent:rack-a", now_).ok());
  ASSERT_TRUE(store_->RegisterHost("a1", host, "agent:rack-a", now_).ok());
  absl::Status other = store_->RegisterHost("a1", host, "agent:rack-b", now_);
  EXPECT_EQ(other.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(other.message()), HasSubstr("agent:rack-a"));
  ASSERT_TRUE(store_->RegisterHost("a1", host, "", now_).ok());  // no auth: not checked
  absl::StatusOr<std::vector<StoredHost>> hosts = store_->ListHosts();
  ASSERT_TRUE(hosts.ok());
  ASSERT_EQ(hosts->size(), 1u);
  EXPECT_EQ((*hosts)[0].principal, "agent:rack-a");
}

TEST_F(StoreEventsTest, MigratingAVersion4DatabaseCountsItsExistingJobsAndSamples) {
  store_.reset();
  std::filesystem::remove(path_);
  {
    absl::StatusOr<std::unique_ptr<Database>> db = Database::Open(path_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(Migrate(**db, 4).ok());
    ASSERT_TRUE((*db)
                    ->Exec("INSERT INTO runs(id, name, benchmark, spec, spec_yaml, state,"
                           " created_ms) VALUES(7, 'old', 'ebizzy', x'', '', 'running', 1);"
                           "INSERT INTO jobs(run_id, slot, arm, param_name, param_value,"
                           " iteration, assignment, state) VALUES"
                           " (7, 0, 'a', '', '', 1, x'', 'succeeded'),"
                           " (7, 0, 'b', '', '', 1, x'', 'queued');"
                           "INSERT INTO samples(run_id, job_id, lease_id, seq, arm, param_name,"
                           " param_value, iteration, metric, series, value, unit, better,"
                           " agent_id, host, boot_id, kernel_release, kernel_cmdline, microarch,"
                           " ceiling_applied) VALUES (7, 1, 'j1a1', 0, 'a', '', '', 1, 'm', '',"
                           " 1, '', 1, 'x', 'h', 'b', 'k', 'c', 'u', 0);")
                    .ok());
  }
  store_ = *Store::Open(path_);
  absl::StatusOr<v1::Run> run = store_->GetRun("7");
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->jobs().total(), 2u);
  EXPECT_EQ(run->jobs().succeeded(), 1u);
  EXPECT_EQ(run->jobs().queued(), 1u);
  EXPECT_EQ(run->samples(), 1u);
}

TEST_F(StoreEventsTest, CountsForGauges) {
  const std::string run = Create(kTwoJobs);
  Lease(run, "agent1");
  Create(kTwoJobs);
  v1::HostInfo host;
  ASSERT_TRUE(store_->RegisterHost("a1", host, "", now_).ok());
  absl::StatusOr<StoreCounts> counts = store_->Counts();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->runs[v1::RUN_STATE_RUNNING], 1u);
  EXPECT_EQ(counts->runs[v1::RUN_STATE_QUEUED], 1u);
  EXPECT_EQ(counts->jobs[v1::JOB_STATE_RUNNING], 1u);
  EXPECT_EQ(counts->jobs[v1::JOB_STATE_QUEUED], 3u);
  EXPECT_EQ(counts->queued_jobs_of_active_runs, 3u);
  EXPECT_EQ(counts->hosts, 1u);
}

}  // namespace
}  // namespace tlbfleet::store
