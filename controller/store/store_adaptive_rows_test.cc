// Adaptive runs whose rows stop on their own (docs/statistics.md#rows-that-stop-on-their-own):
// ExtendRun grows only the (sweep value, arm) still measured, and the rows of each look are
// kept with the run (migration 18) across a reopen.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "controller/scheduler/expand.h"
#include "controller/scheduler/run_spec.h"
#include "controller/store/lease_for_test.h"
#include "controller/store/migrations.h"
#include "controller/store/store.h"

namespace tlbfleet::store {
namespace {

class StoreAdaptiveRowsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-store-rows-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "fleet.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Open() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  // Two hosts, two sweep values, two arms, boots adaptive: each slot has 4 (sweep value,
  // arm) x 2 iterations in boot 1.
  std::string Submit() {
    absl::StatusOr<v1::RunSpec> spec = scheduler::ParseRunSpec(
        "name: s\nbenchmark: pipetest\nsweep: {loops: [1000, 3000]}\niterations: 2\n"
        "boots: {min: 1, max: 4}\nadaptive: {stop: verdict}\nhosts: {count: 2}\n"
        "arms: [{name: a}, {name: b}]\n",
        "t.yaml");
    EXPECT_TRUE(spec.ok()) << spec.status();
    absl::StatusOr<std::string> id =
        store_->CreateRun(*spec, "", scheduler::ExpandRun(*spec), now_);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : "";
  }

  // Leases the next job for `agent` on `boot` and completes it with one sample; nullopt when
  // nothing was leased (`reboot` then says why, if a reboot is due).
  std::optional<v1::JobAssignment> RunOne(const std::string& run, const std::string& agent,
                                          const std::string& boot, std::string* reboot = nullptr) {
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

  // Every job `agent` gets on `boot` until none is left: "arm/value/boot index" of each.
  std::multiset<std::string> RunAll(const std::string& run, const std::string& agent,
                                    const std::string& boot) {
    std::multiset<std::string> got;
    while (std::optional<v1::JobAssignment> a = RunOne(run, agent, boot)) {
      got.insert(a->arm() + "/" + a->param_value() + "/" + std::to_string(a->boot_index()));
    }
    return got;
  }

  static v1::AdaptiveRow Row(const std::string& value, const std::string& verdict, bool measuring) {
    v1::AdaptiveRow row;
    row.set_metric("usecs_per_op");
    row.set_param_name("loops");
    row.set_param_value(value);
    row.set_arm("b");
    row.set_verdict(verdict);
    row.set_decided(!verdict.empty());
    row.set_measuring(measuring);
    row.set_ratio(verdict.empty() ? 1.001 : 0.5);
    row.set_reason(verdict.empty() ? "open" : "better at round 0");
    return row;
  }

  std::filesystem::path dir_;
  std::string path_;
  std::unique_ptr<Store> store_;
  int64_t now_ = 1'000'000;
};

TEST_F(StoreAdaptiveRowsTest, ANewBootGoesOnlyToTheSweepValuesAndArmsStillMeasured) {
  Open();
  const std::string run = Submit();
  for (const char* agent : {"agent1", "agent2"}) {
    EXPECT_EQ(RunAll(run, agent, std::string(agent) + "-boot1").size(), 8u) << agent;
  }
  ASSERT_EQ(store_->AdaptiveRunsAwaitingDecision()->size(), 1u);

  // loops=1000 is decided: only loops=3000 (arm b and the baseline a) gets boot 2.
  RunExtension boot;
  boot.add_boot = true;
  boot.note = "adding boot 2";
  boot.measured.emplace();
  boot.measured->emplace("loops", "3000", "a");
  boot.measured->emplace("loops", "3000", "b");
  boot.rows = {Row("1000", "better", false), Row("3000", "", true)};
  ASSERT_TRUE(store_->ExtendRun(run, boot, now_).ok());
  absl::StatusOr<v1::Run> r = store_->GetRun(run);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->boots(), 2u);
  EXPECT_EQ(r->jobs().total(), 16u + 2u * 2u * 2u);
  ASSERT_EQ(r->adaptive_rows_size(), 2);
  EXPECT_EQ(r->adaptive_rows(0).verdict(), "better");
  EXPECT_FALSE(r->adaptive_rows(0).measuring());
  EXPECT_TRUE(r->adaptive_rows(1).measuring());

  for (const char* agent : {"agent1", "agent2"}) {
    std::string reboot;
    EXPECT_FALSE(RunOne(run, agent, std::string(agent) + "-boot1", &reboot).has_value());
    EXPECT_NE(reboot.find("boot 2 needs a fresh boot"), std::string::npos) << reboot;
    EXPECT_EQ(RunAll(run, agent, std::string(agent) + "-boot2"),
              (std::multiset<std::string>{"a/3000/1", "a/3000/1", "b/3000/1", "b/3000/1"}))
        << agent;
  }
  // Fewer jobs in some (sweep value, arm) still end the round: the run awaits a decision.
  r = store_->GetRun(run);
  EXPECT_EQ(r->jobs().succeeded(), r->jobs().total());
  EXPECT_EQ(r->state(), v1::RUN_STATE_RUNNING);
  ASSERT_EQ(store_->AdaptiveRunsAwaitingDecision()->size(), 1u);

  // A boot of only arm b at loops=3000 (a subset the driver never asks for, but the store
  // takes): one job per iteration and host, none of the baseline.
  RunExtension only_b;
  only_b.add_boot = true;
  only_b.iterations_per_boot = 1;
  only_b.measured.emplace();
  only_b.measured->emplace("loops", "3000", "b");
  ASSERT_TRUE(store_->ExtendRun(run, only_b, now_).ok());
  EXPECT_EQ(store_->GetRun(run)->jobs().total(), 24u + 2u);
  // Rows not given: the stored ones stay.
  EXPECT_EQ(store_->GetRun(run)->adaptive_rows_size(), 2);
  EXPECT_EQ(RunAll(run, "agent1", "agent1-boot3"), (std::multiset<std::string>{"b/3000/2"}));
}

TEST_F(StoreAdaptiveRowsTest, ASubsetWithNothingToCopyIsRefusedAndStoresNothing) {
  Open();
  const std::string run = Submit();
  for (const char* agent : {"agent1", "agent2"}) RunAll(run, agent, "boot1");
  RunExtension none;
  none.add_boot = true;
  none.measured.emplace();
  none.measured->emplace("loops", "5000", "b");  // no such sweep value
  none.rows = {Row("1000", "better", false)};
  absl::Status s = store_->ExtendRun(run, none, now_);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("of the 1 (sweep value, arm) still measured"), std::string::npos) << s;
  absl::StatusOr<v1::Run> r = store_->GetRun(run);
  EXPECT_EQ(r->jobs().total(), 16u);
  EXPECT_EQ(r->adaptive_rounds(), 0u);
  EXPECT_EQ(r->adaptive_rows_size(), 0);
}

TEST_F(StoreAdaptiveRowsTest, RowsSurviveAReopenAndTheFinalLookReplacesThem) {
  Open();
  const std::string run = Submit();
  for (const char* agent : {"agent1", "agent2"}) RunAll(run, agent, "boot1");
  RunExtension boot;
  boot.add_boot = true;
  boot.rows = {Row("1000", "better", false), Row("3000", "", true)};
  ASSERT_TRUE(store_->ExtendRun(run, boot, now_).ok());

  Open();  // a controller restart
  absl::StatusOr<v1::Run> r = store_->GetRun(run);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->adaptive_rows_size(), 2);
  EXPECT_EQ(r->adaptive_rows(0).param_value(), "1000");
  EXPECT_TRUE(r->adaptive_rows(0).decided());
  EXPECT_DOUBLE_EQ(r->adaptive_rows(0).ratio(), 0.5);
  EXPECT_FALSE(r->adaptive_rows(1).decided());
  EXPECT_TRUE(r->adaptive_rows(1).has_ratio());
  // ListRuns reads the same columns.
  absl::StatusOr<std::vector<v1::Run>> list = store_->ListRuns(10);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].adaptive_rows_size(), 2);

  ASSERT_TRUE(store_
                  ->FinishAdaptiveRun(run, "verdict reached", now_,
                                      {Row("1000", "better", false), Row("3000", "same", false)})
                  .ok());
  r = store_->GetRun(run);
  EXPECT_EQ(r->state(), v1::RUN_STATE_SUCCEEDED);
  ASSERT_EQ(r->adaptive_rows_size(), 2);
  EXPECT_EQ(r->adaptive_rows(1).verdict(), "same");
  EXPECT_FALSE(r->adaptive_rows(1).measuring());
}

TEST_F(StoreAdaptiveRowsTest, ARunThatEndedMeasuresNoRowWhateverItsLastLookSaid) {
  Open();
  const std::string run = Submit();
  for (const char* agent : {"agent1", "agent2"}) RunAll(run, agent, "boot1");
  RunExtension boot;
  boot.add_boot = true;
  boot.rows = {Row("1000", "better", false), Row("3000", "", true)};
  ASSERT_TRUE(store_->ExtendRun(run, boot, now_).ok());
  EXPECT_TRUE(store_->GetRun(run)->adaptive_rows(1).measuring());
  ASSERT_TRUE(store_->CancelRun(run, now_).ok());
  absl::StatusOr<v1::Run> r = store_->GetRun(run);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->state(), v1::RUN_STATE_CANCELLED);
  ASSERT_EQ(r->adaptive_rows_size(), 2);
  EXPECT_FALSE(r->adaptive_rows(1).measuring());
  EXPECT_EQ(r->adaptive_rows(0).verdict(), "better");
}

TEST_F(StoreAdaptiveRowsTest, Migration18AddsTheRowsColumnToExistingRuns) {
  {
    absl::StatusOr<std::unique_ptr<Database>> db = Database::Open(path_);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(Migrate(**db, 17).ok());
    ASSERT_TRUE((*db)
                    ->Exec("INSERT INTO runs(name, benchmark, spec, spec_yaml, state, created_ms)"
                           " VALUES('old', 'ebizzy', x'', 'name: old', 'succeeded', 1000)")
                    .ok());
  }
  Open();
  absl::StatusOr<v1::Run> old = store_->GetRun("1");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(old->adaptive_rows_size(), 0);
  absl::StatusOr<std::unique_ptr<Database>> db = Database::Open(path_);
  ASSERT_TRUE(db.ok());
  EXPECT_GE(*SchemaVersion(**db), 18);
  absl::StatusOr<Statement> q = (*db)->Prepare("SELECT adaptive_rows IS NULL FROM runs");
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_TRUE(*q->Step());
  EXPECT_EQ(q->Int(0), 1);
}

}  // namespace
}  // namespace tlbfleet::store
