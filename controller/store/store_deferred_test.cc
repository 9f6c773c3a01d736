// Runs whose sweep depends on the host: stored without jobs, expanded slot by slot in
// Store::Lease when a host takes a slot (docs/architecture.md, "Host-dependent sweeps").

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "controller/store/lease_for_test.h"
#include "controller/store/store.h"

namespace tlbfleet::store {
namespace {

class DeferredRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-deferred-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open((dir_ / "fleet.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static v1::RunSpec Spec(uint32_t hosts) {
    v1::RunSpec spec;
    spec.set_name("t");
    spec.set_benchmark("ebizzy");
    spec.set_iterations(1);
    spec.add_arms()->set_name("a");
    spec.mutable_sweep()->set_param("threads");
    spec.mutable_sweep()->set_policy("topology");
    spec.mutable_hosts()->set_count(hosts);
    return spec;
  }

  // An expander that sweeps threads over `values` (one job per value), counting its calls.
  SlotExpander Expander(std::vector<std::string> values) {
    return [this, values](const v1::RunSpec&) -> absl::StatusOr<scheduler::SlotExpansion> {
      ++expansions_;
      scheduler::SlotExpansion e;
      e.basis = "threads=";
      for (const std::string& v : values) {
        e.basis += v + ",";
        scheduler::JobPlan p;
        p.arm = "a";
        p.param_name = "threads";
        p.param_value = v;
        p.iteration = 1;
        p.params = {{"threads", v}};
        p.timeout_seconds = 30;
        e.jobs.push_back(p);
      }
      return e;
    };
  }

  std::optional<v1::JobAssignment> Lease(const std::string& run, const std::string& agent,
                                         const SlotExpander& expander, int64_t now = 1000) {
    absl::StatusOr<std::optional<v1::JobAssignment>> a =
        LeaseNext(*store_, run, agent, now, 60'000, expander);
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *a : std::nullopt;
  }

  void Finish(const v1::JobAssignment& a, const std::string& agent) {
    v1::SampleBatch batch;
    batch.set_lease_id(a.lease_id());
    batch.add_samples()->set_metric("m");
    ASSERT_TRUE(store_->IngestSamples(agent, batch).ok());
    v1::JobComplete c;
    c.set_lease_id(a.lease_id());
    c.set_status(v1::JOB_STATUS_SUCCEEDED);
    c.set_sample_count(1);
    absl::StatusOr<CompletionResult> r = store_->CompleteJob(agent, c, 2000);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_FALSE(r->rejected) << r->reason;
  }

  v1::Run Run(const std::string& id) {
    absl::StatusOr<v1::Run> run = store_->GetRun(id);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.value_or(v1::Run());
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
  int expansions_ = 0;
};

TEST_F(DeferredRunTest, EachSlotIsExpandedForTheHostThatTakesIt) {
  absl::StatusOr<std::string> run = store_->CreateDeferredRun(Spec(2), "yaml", 0);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(Run(*run).jobs().total(), 0u);

  std::optional<v1::JobAssignment> a = Lease(*run, "small", Expander({"1", "2"}));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->param_value(), "1");
  EXPECT_EQ(a->params().at("threads"), "1");
  EXPECT_EQ(Run(*run).jobs().total(), 2u);
  EXPECT_EQ(Run(*run).state(), v1::RUN_STATE_RUNNING);

  std::optional<v1::JobAssignment> b = Lease(*run, "big", Expander({"1", "2", "4", "8"}));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(Run(*run).jobs().total(), 6u);

  // The small host finishes its slot; the run is not done until the big one is.
  Finish(*a, "small");
  std::optional<v1::JobAssignment> a2 = Lease(*run, "small", Expander({"1", "2"}));
  ASSERT_TRUE(a2.has_value());
  EXPECT_EQ(a2->param_value(), "2");
  Finish(*a2, "small");
  EXPECT_FALSE(Lease(*run, "small", Expander({"1", "2"})).has_value());
  EXPECT_EQ(Run(*run).state(), v1::RUN_STATE_RUNNING);

  std::vector<std::string> big_values = {b->param_value()};
  Finish(*b, "big");
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::JobAssignment> next = Lease(*run, "big", Expander({"1", "2", "4", "8"}));
    ASSERT_TRUE(next.has_value());
    big_values.push_back(next->param_value());
    Finish(*next, "big");
  }
  EXPECT_EQ(big_values, (std::vector<std::string>{"1", "2", "4", "8"}));
  EXPECT_EQ(Run(*run).state(), v1::RUN_STATE_SUCCEEDED);
}

TEST_F(DeferredRunTest, OneSlotRunWaitsForNoSecondSlot) {
  absl::StatusOr<std::string> run = store_->CreateDeferredRun(Spec(1), "yaml", 0);
  ASSERT_TRUE(run.ok());
  std::optional<v1::JobAssignment> a = Lease(*run, "h", Expander({"3"}));
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(Lease(*run, "other", Expander({"3"})).has_value());  // the only slot is bound
  Finish(*a, "h");
  EXPECT_EQ(Run(*run).state(), v1::RUN_STATE_SUCCEEDED);
}

TEST_F(DeferredRunTest, ASilentHostKeepsItsSlotUntilTheSlotIsRestarted) {
  absl::StatusOr<std::string> run = store_->CreateDeferredRun(Spec(1), "yaml", 0);
  ASSERT_TRUE(run.ok());
  std::optional<v1::JobAssignment> first = Lease(*run, "a", Expander({"1", "2"}), 1000);
  ASSERT_TRUE(first.has_value());
  Finish(*first, "a");
  std::optional<v1::JobAssignment> second = Lease(*run, "a", Expander({"1", "2"}), 1000);
  ASSERT_TRUE(second.has_value());
  // Host a goes silent: its lease expires, and its slot stays its own (issue 26: a slot is
  // one machine; a half-measured slot is never finished by another host).
  absl::StatusOr<std::vector<ExpiredLease>> expired = store_->ExpireLeases(100'000, 3);
  ASSERT_TRUE(expired.ok());
  ASSERT_EQ(expired->size(), 1u);
  EXPECT_FALSE(Lease(*run, "twin", Expander({"1", "2"}), 100'000).has_value());
  // Restarted (on_host_lost: restart), the slot is expanded anew for the next host.
  ASSERT_TRUE(store_->RestartSlot(*run, 0, "a", "slot 0 restarted", 100'000)->restarted);
  std::optional<v1::JobAssignment> b = Lease(*run, "b", Expander({"1", "2", "4"}), 100'000);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->param_value(), "1");
  // a's finished job is kept (abandoned) beside b's three.
  EXPECT_EQ(Run(*run).jobs().total(), 4u);
}

TEST_F(DeferredRunTest, ExpansionErrorFailsTheRun) {
  absl::StatusOr<std::string> run = store_->CreateDeferredRun(Spec(1), "yaml", 0);
  ASSERT_TRUE(run.ok());
  SlotExpander bad = [](const v1::RunSpec&) -> absl::StatusOr<scheduler::SlotExpansion> {
    return absl::InvalidArgumentError("host h: sweep.threads.max: too big");
  };
  EXPECT_FALSE(Lease(*run, "h", bad).has_value());
  const v1::Run failed = Run(*run);
  EXPECT_EQ(failed.state(), v1::RUN_STATE_FAILED);
  EXPECT_EQ(failed.error(), "host h: sweep.threads.max: too big");
}

TEST_F(DeferredRunTest, NoExpanderLeasesNothing) {
  absl::StatusOr<std::string> run = store_->CreateDeferredRun(Spec(1), "yaml", 0);
  ASSERT_TRUE(run.ok());
  EXPECT_FALSE(Lease(*run, "h", nullptr).has_value());
  EXPECT_EQ(Run(*run).state(), v1::RUN_STATE_QUEUED);
}

TEST_F(DeferredRunTest, ExpandsOncePerLease) {
  absl::StatusOr<std::string> run = store_->CreateDeferredRun(Spec(3), "yaml", 0);
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(Lease(*run, "h", Expander({"1"})).has_value());
  EXPECT_EQ(expansions_, 1);
}

}  // namespace
}  // namespace tlbfleet::store
