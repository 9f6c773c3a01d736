// Runs whose arms name boot entries: every boot index runs on a boot the controller asked
// for, into that index's entry, also across a controller restart; samples keep their entry.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/run_spec.h"
#include "controller/store/store.h"

namespace tlbfleet::store {
namespace {

class StoreBootEntriesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-store-entries-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Reopen();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Reopen() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open((dir_ / "fleet.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  std::string Submit(const std::string& old_entry = "e-old",
                     const std::string& new_entry = "e-new") {
    absl::StatusOr<v1::RunSpec> spec = scheduler::ParseRunSpec(
        "name: k\nbenchmark: pipetest\nparams: {loops: 1000}\niterations: 1\nboots: 2\n"
        "arms: [{name: old, boot_entry: " +
            old_entry + "}, {name: new, boot_entry: " + new_entry + "}]\n",
        "t.yaml");
    EXPECT_TRUE(spec.ok()) << spec.status();
    absl::StatusOr<std::string> id =
        store_->CreateRun(*spec, "", scheduler::ExpandRun(*spec), 1000);
    EXPECT_TRUE(id.ok()) << id.status();
    return *id;
  }

  // `entry`: what the agent says the boot is; `failed`: its check of a selected entry failed.
  LeaseResult Lease(const std::string& run, const std::string& boot, const std::string& entry = "",
                    bool failed = false) {
    return LeaseFrom({run}, boot, entry, failed);
  }
  LeaseResult LeaseFrom(const std::vector<std::string>& runs, const std::string& boot,
                        const std::string& entry = "", bool failed = false) {
    LeaseRequest request;
    request.run_ids = runs;
    request.agent_id = "agent1";
    request.boot_id = boot;
    request.boot_entry = entry;
    request.boot_entry_failed = failed;
    request.now_ms = 2000;
    request.lease_ms = 60'000;
    absl::StatusOr<LeaseResult> result = store_->Lease(request);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : LeaseResult();
  }

  void Complete(const v1::JobAssignment& a, const std::string& boot, const std::string& entry) {
    v1::SampleBatch batch;
    batch.set_lease_id(a.lease_id());
    batch.set_job_id(a.job_id());
    v1::Sample* sample = batch.add_samples();
    sample->set_metric("usecs_per_op");
    sample->set_value(5);
    sample->set_boot_id(boot);
    sample->set_boot_entry(entry);
    ASSERT_TRUE(store_->IngestSamples("agent1", batch).ok());
    v1::JobComplete done;
    done.set_lease_id(a.lease_id());
    done.set_job_id(a.job_id());
    done.set_status(v1::JOB_STATUS_SUCCEEDED);
    done.set_sample_count(1);
    ASSERT_TRUE(store_->CompleteJob("agent1", done, 3000).ok());
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(StoreBootEntriesTest, EveryBootIndexIsAFreshBootIntoItsEntryInABBAOrder) {
  const std::string run = Submit();
  // The host's current boot is not one the run asked for: reboot into e-old first.
  LeaseResult r = Lease(run, "boot-0");
  ASSERT_EQ(r.kind, LeaseResult::Kind::kNeedsReboot);
  EXPECT_EQ(r.reboot_entry, "e-old");
  EXPECT_NE(r.reboot_reason.find("needs a fresh boot into boot entry e-old"), std::string::npos)
      << r.reboot_reason;
  // Asking again from the same boot changes nothing.
  EXPECT_EQ(Lease(run, "boot-0").kind, LeaseResult::Kind::kNeedsReboot);

  const std::vector<std::string> expected = {"e-old", "e-new", "e-new", "e-old"};
  std::string boot = "boot-0";
  for (size_t index = 0; index < expected.size(); ++index) {
    const std::string next = "boot-" + std::to_string(index + 1);
    if (index == 2) Reopen();  // a controller restart while the host reboots
    r = Lease(run, next, expected[index]);
    ASSERT_EQ(r.kind, LeaseResult::Kind::kLeased) << index << " " << r.reboot_reason;
    EXPECT_EQ(r.assignment.boot_index(), index);
    EXPECT_EQ(r.assignment.boot_entry(), expected[index]);
    EXPECT_EQ(r.assignment.arm(), expected[index] == "e-old" ? "old" : "new");
    Complete(r.assignment, next, expected[index]);
    boot = next;
    r = Lease(run, boot, expected[index]);
    if (index + 1 < expected.size()) {
      ASSERT_EQ(r.kind, LeaseResult::Kind::kNeedsReboot) << index;
      EXPECT_EQ(r.reboot_entry, expected[index + 1]);
    } else {
      EXPECT_EQ(r.kind, LeaseResult::Kind::kNothing);
    }
  }
  absl::StatusOr<v1::Run> done = store_->GetRun(run);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::RUN_STATE_SUCCEEDED);
  absl::StatusOr<std::vector<v1::Sample>> samples = store_->GetSamples(run);
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 4u);
  for (const v1::Sample& s : *samples) {
    EXPECT_EQ(s.boot_entry(), s.arm() == "old" ? "e-old" : "e-new") << s.boot_id();
  }
}

TEST_F(StoreBootEntriesTest, OnlyTheBootAskedForIntoItsEntryTakesTheIndex) {
  const std::string run = Submit();
  ASSERT_EQ(Lease(run, "boot-0", "e-old").kind, LeaseResult::Kind::kNeedsReboot);
  // A new boot of another entry (a reboot another run asked for) is not this run's boot.
  LeaseResult r = Lease(run, "boot-1", "e-new");
  ASSERT_EQ(r.kind, LeaseResult::Kind::kNeedsReboot);
  EXPECT_EQ(r.reboot_entry, "e-old");
  r = Lease(run, "boot-2", "e-old");  // the requested boot: index 0
  ASSERT_EQ(r.kind, LeaseResult::Kind::kLeased);
  Complete(r.assignment, "boot-2", "e-old");
  ASSERT_EQ(Lease(run, "boot-2", "e-old").kind, LeaseResult::Kind::kNeedsReboot);
  // The agent selected e-new, but its check of the new boot failed: the boot takes the index,
  // so that the job fails naming both (an agent's refusal), instead of rebooting for ever.
  r = Lease(run, "boot-3", "", /*failed=*/true);
  ASSERT_EQ(r.kind, LeaseResult::Kind::kLeased);
  EXPECT_EQ(r.assignment.boot_index(), 1u);
  EXPECT_EQ(r.assignment.boot_entry(), "e-new");
  Complete(r.assignment, "boot-3", "");
  // It crashed before the controller asked for index 2's reboot: boot-4 was not asked for,
  // so it reboots again, into index 2's entry.
  r = Lease(run, "boot-4", "e-new");
  ASSERT_EQ(r.kind, LeaseResult::Kind::kNeedsReboot);
  EXPECT_EQ(r.reboot_entry, "e-new");
  r = Lease(run, "boot-5", "e-new");
  ASSERT_EQ(r.kind, LeaseResult::Kind::kLeased);
  EXPECT_EQ(r.assignment.boot_index(), 2u);
}

// Two runs queued on one host, each wanting its own entries: the host reboots for the first,
// and its boots into the first's entries are no misses of the second, which was never asked
// for (found when a nightly run waited behind a bisection's and failed "asked 3 times").
TEST_F(StoreBootEntriesTest, AnotherRunsRebootIsNoMissOfARunWaitingBehindIt) {
  const std::string first = Submit("a-old", "a-new");
  const std::string second = Submit("b-old", "b-new");
  int boot = 0;
  for (int index = 0; index < 4; ++index) {
    LeaseResult r = LeaseFrom({first, second}, absl::StrCat("boot-", boot));
    ASSERT_EQ(r.kind, LeaseResult::Kind::kNeedsReboot) << index;
    ASSERT_EQ(r.run_id, first);
    ++boot;
    r = LeaseFrom({first, second}, absl::StrCat("boot-", boot), r.reboot_entry);
    ASSERT_EQ(r.kind, LeaseResult::Kind::kLeased) << index;
    ASSERT_EQ(r.run_id, first);
    Complete(r.assignment, absl::StrCat("boot-", boot), r.assignment.boot_entry());
  }
  // The second run's turn: it is still queued, and its first reboot is asked for now.
  LeaseResult r = LeaseFrom({first, second}, absl::StrCat("boot-", boot), "a-new");
  ASSERT_EQ(r.kind, LeaseResult::Kind::kNeedsReboot);
  ASSERT_EQ(r.run_id, second);
  ++boot;
  r = LeaseFrom({first, second}, absl::StrCat("boot-", boot), r.reboot_entry);
  ASSERT_EQ(r.kind, LeaseResult::Kind::kLeased);
  EXPECT_EQ(r.run_id, second);
}

}  // namespace
}  // namespace tlbfleet::store
