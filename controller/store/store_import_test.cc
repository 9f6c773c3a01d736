// Store::ImportRun: an imported run is stored finished, with its samples and their provenance,
// in one transaction; the same digest twice is one run.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/temp_dir_for_test.h"
#include "controller/store/store.h"

namespace tlbfleet::store {
namespace {

using ::testing::HasSubstr;

class StoreImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions options;
    options.writer_thread = false;
    store_ = *Store::Open(dir_.path() + "/fleet.db", options);
    store_->SetEventSink([this](const std::vector<v1::RunEvent>& events) {
      sunk_.insert(sunk_.end(), events.begin(), events.end());
    });
  }

  static v1::Sample Sample(int64_t job, const std::string& arm, uint32_t iteration, double value,
                           const std::string& series = "") {
    v1::Sample s;
    s.set_job_id(job);
    s.set_arm(arm);
    s.set_param_name("threads");
    s.set_param_value("4");
    s.set_iteration(iteration);
    s.set_metric("records_per_sec");
    s.set_series(series);
    s.set_value(value);
    s.set_unit("records/s");
    s.set_better(v1::BETTER_HIGHER);
    s.set_host("ivy1");
    s.set_kernel_release(arm == "old" ? "6.1.0" : "6.6.0");
    s.set_boot_id(arm + "-boot");
    s.set_machine_id("4c4c4544");
    s.set_commit(arm == "old" ? "" : "a1b2c3");
    s.set_build_id(arm == "old" ? "" : "b9");
    s.set_ceiling_observed(true);
    s.set_ceiling(33);
    return s;
  }

  ImportedRunRecord Record() const {
    ImportedRunRecord r;
    r.spec.set_name("mmtests ebizzy: old,new");
    r.spec.set_benchmark("ebizzy");
    r.spec.add_arms()->set_name("old");
    r.spec.add_arms()->set_name("new");
    r.spec_yaml = "# imported\n";
    r.samples = {Sample(1, "old", 1, 3000), Sample(1, "old", 1, 1500, "thread0"),
                 Sample(2, "old", 2, 3010), Sample(3, "new", 1, 3100), Sample(4, "new", 2, 3110)};
    r.created_ms = 1700000000000;
    r.finished_ms = 1700000500000;
    r.digest = "d1";
    r.format = "mmtests";
    r.source = "/results/ebizzy";
    return r;
  }

  TempDir dir_{"tlbfleet-store-import"};
  std::unique_ptr<Store> store_;
  std::vector<v1::RunEvent> sunk_;
};

TEST_F(StoreImportTest, StoresAFinishedRunWithItsSamplesAndProvenance) {
  absl::StatusOr<ImportedRunResult> r = store_->ImportRun(Record(), 1800000000000);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->already_imported);
  EXPECT_EQ(r->samples, 5u);

  absl::StatusOr<v1::Run> run = store_->GetRun(r->run_id);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(run->created_unix(), 1700000000);
  EXPECT_EQ(run->finished_unix(), 1700000500);
  EXPECT_EQ(run->samples(), 5u);
  EXPECT_EQ(run->jobs().total(), 4u);
  EXPECT_EQ(run->jobs().succeeded(), 4u);
  EXPECT_EQ(run->spec().benchmark(), "ebizzy");
  EXPECT_THAT(run->stop_reason(), HasSubstr("imported from mmtests"));

  absl::StatusOr<std::vector<v1::Sample>> samples = store_->GetSamples(r->run_id);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 5u);
  const std::vector<v1::Sample> want = Record().samples;
  for (size_t i = 0; i < want.size(); ++i) {
    const v1::Sample& got = (*samples)[i];
    EXPECT_EQ(got.arm(), want[i].arm());
    EXPECT_EQ(got.param_value(), want[i].param_value());
    EXPECT_EQ(got.iteration(), want[i].iteration());
    EXPECT_EQ(got.series(), want[i].series());
    EXPECT_EQ(got.value(), want[i].value());
    EXPECT_EQ(got.unit(), want[i].unit());
    EXPECT_EQ(got.better(), want[i].better());
    EXPECT_EQ(got.host(), want[i].host());
    EXPECT_EQ(got.kernel_release(), want[i].kernel_release());
    EXPECT_EQ(got.boot_id(), want[i].boot_id());
    EXPECT_EQ(got.machine_id(), want[i].machine_id());
    EXPECT_EQ(got.commit(), want[i].commit());
    EXPECT_EQ(got.build_id(), want[i].build_id());
    EXPECT_TRUE(got.ceiling_observed());
    EXPECT_EQ(got.ceiling(), 33);
    EXPECT_EQ(got.excluded(), "");
  }
  // One terminal event, so observers (nightly's history) take it as any finished run.
  ASSERT_EQ(sunk_.size(), 1u);
  EXPECT_EQ(sunk_[0].state().state(), v1::RUN_STATE_SUCCEEDED);
}

TEST_F(StoreImportTest, TheSameDigestTwiceIsOneRun) {
  absl::StatusOr<ImportedRunResult> first = store_->ImportRun(Record(), 1);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<ImportedRunResult> second = store_->ImportRun(Record(), 2);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->already_imported);
  EXPECT_EQ(second->run_id, first->run_id);
  EXPECT_EQ(second->samples, 0u);
  absl::StatusOr<std::vector<v1::Run>> runs = store_->ListRuns(0);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 1u);

  ImportedRunRecord other = Record();
  other.digest = "d2";
  absl::StatusOr<ImportedRunResult> third = store_->ImportRun(other, 3);
  ASSERT_TRUE(third.ok());
  EXPECT_NE(third->run_id, first->run_id);
}

TEST_F(StoreImportTest, AnImportThatFailsHalfWayStoresNothing) {
  ImportedRunRecord r = Record();
  r.samples.push_back(Sample(0, "new", 3, 1));  // after four good jobs: no job number
  absl::StatusOr<ImportedRunResult> result = store_->ImportRun(r, 1);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);

  // A failure inside the transaction, after the run row and four jobs with their samples: the
  // last value is NaN, which SQLite stores as NULL and samples' NOT NULL refuses.
  r = Record();
  r.samples.push_back(Sample(5, "new", 3, std::nan("")));
  EXPECT_FALSE(store_->ImportRun(r, 1).ok());

  absl::StatusOr<std::vector<v1::Run>> runs = store_->ListRuns(0);
  ASSERT_TRUE(runs.ok());
  EXPECT_TRUE(runs->empty());
  EXPECT_TRUE(sunk_.empty());
  // And the digest is free: the same files import once the storage is back.
  absl::StatusOr<ImportedRunResult> again = store_->ImportRun(Record(), 2);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->already_imported);
}

}  // namespace
}  // namespace tlbfleet::store
