// A slot is one machine for the whole run (issue 26): its jobs never go to another agent,
// whatever happened to its lease; a lost host's slot is restarted from its first job with
// the abandoned samples kept apart; a boot cut short by an unplanned reboot is measured again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "controller/scheduler/expand.h"
#include "controller/scheduler/run_spec.h"
#include "controller/store/lease_for_test.h"
#include "controller/store/store.h"

namespace tlbfleet::store {
namespace {

class StoreSlotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-store-slots-" + std::to_string(::getpid()) + "-" +
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
        "name: s\nbenchmark: pipetest\nparams: {loops: 1000}\n"
        "arms: [{name: a}, {name: b, params: {loops: 2000}}]\n" +
            extra,
        "t.yaml");
    EXPECT_TRUE(spec.ok()) << spec.status();
    absl::StatusOr<std::string> id =
        store_->CreateRun(*spec, "", scheduler::ExpandRun(*spec), now_);
    EXPECT_TRUE(id.ok()) << id.status();
    return *id;
  }

  absl::StatusOr<LeaseResult> LeaseFor(const std::string& run, const std::string& agent,
                                       const std::string& machine, const std::string& boot) {
    LeaseRequest request;
    request.run_ids = {run};
    request.agent_id = agent;
    request.machine_id = machine;
    request.hostname = "host-" + agent;
    request.boot_id = boot;
    request.now_ms = now_;
    request.lease_ms = 60'000;
    return store_->Lease(request);
  }

  // Leases the next job for `agent` (on `machine`, `boot`); nullopt when nothing was leased.
  std::optional<v1::JobAssignment> Lease(const std::string& run, const std::string& agent,
                                         const std::string& machine = "m",
                                         const std::string& boot = "") {
    absl::StatusOr<LeaseResult> r =
        LeaseFor(run, agent, machine.empty() ? "" : machine + agent, boot);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->kind != LeaseResult::Kind::kLeased) return std::nullopt;
    return r->assignment;
  }

  void Complete(const v1::JobAssignment& a, const std::string& agent, const std::string& boot = "",
                double value = 5) {
    v1::SampleBatch batch;
    batch.set_lease_id(a.lease_id());
    batch.set_job_id(a.job_id());
    v1::Sample* sample = batch.add_samples();
    sample->set_metric("usecs_per_op");
    sample->set_value(value);
    sample->set_boot_id(boot);
    sample->set_host("host-" + agent);
    ASSERT_TRUE(store_->IngestSamples(agent, batch).ok());
    v1::JobComplete done;
    done.set_lease_id(a.lease_id());
    done.set_job_id(a.job_id());
    done.set_status(v1::JOB_STATUS_SUCCEEDED);
    done.set_sample_count(1);
    absl::StatusOr<CompletionResult> completed = store_->CompleteJob(agent, done, now_);
    ASSERT_TRUE(completed.ok() && !completed->rejected) << completed.status();
  }

  // Runs every job `agent` gets until it gets none; the (arm, iteration) of each, in order.
  std::vector<std::string> Drain(const std::string& run, const std::string& agent,
                                 const std::string& boot = "") {
    std::vector<std::string> ran;
    while (std::optional<v1::JobAssignment> a = Lease(run, agent, "m", boot)) {
      ran.push_back(a->arm() + std::to_string(a->iteration()));
      Complete(*a, agent, boot);
    }
    return ran;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
  int64_t now_ = 1'000;
};

TEST_F(StoreSlotsTest, AnExpiredLeaseNeverHandsTheSlotToAnotherAgent) {
  const std::string run = Submit("iterations: 2\n");
  std::optional<v1::JobAssignment> first = Lease(run, "hung");
  ASSERT_TRUE(first.has_value());
  // The hung host's lease expires while nobody else is connected (the order in which the lab's
  // guest lost its slot) and again after a second agent stands by.
  now_ += 120'000;
  ASSERT_EQ(store_->ExpireLeases(now_, 3)->size(), 1u);
  EXPECT_FALSE(Lease(run, "standby").has_value());
  EXPECT_FALSE(Lease(run, "same-hostname-new-id").has_value());
  // Its own agent, on its own machine, carries on with the re-queued job.
  std::optional<v1::JobAssignment> again = Lease(run, "hung");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->job_id(), first->job_id());
}

TEST_F(StoreSlotsTest, TheSameAgentIdOnAnotherMachineGetsNothingOfTheSlot) {
  const std::string run = Submit("iterations: 1\n");
  std::optional<v1::JobAssignment> a = Lease(run, "agent", "m1-");
  ASSERT_TRUE(a.has_value());
  Complete(*a, "agent");
  // A copied state directory: same agent id, another machine id.
  EXPECT_FALSE(Lease(run, "agent", "m2-").has_value());
  EXPECT_TRUE(Lease(run, "agent", "m1-").has_value());
}

TEST_F(StoreSlotsTest, ARestartedSlotIsMeasuredAgainFromItsFirstJobWithTheOldSamplesKeptApart) {
  const std::string run = Submit("iterations: 3\n");
  // The lost host finished 3 of 6 jobs and holds a fourth.
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::JobAssignment> a = Lease(run, "lost");
    ASSERT_TRUE(a.has_value());
    Complete(*a, "lost");
  }
  ASSERT_TRUE(Lease(run, "lost").has_value());
  absl::StatusOr<SlotRestart> restart =
      store_->RestartSlot(run, 0, "lost", "slot 0 restarted: lost was lost", now_);
  ASSERT_TRUE(restart.ok()) << restart.status();
  EXPECT_TRUE(restart->restarted);
  EXPECT_EQ(restart->jobs, 3u);
  EXPECT_EQ(restart->samples, 3u);
  // A second decision on a stale view does nothing.
  absl::StatusOr<SlotRestart> again = store_->RestartSlot(run, 0, "lost", "again", now_);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->restarted);

  // Another host takes the slot and measures all of it, in the original order.
  EXPECT_EQ(Drain(run, "spare"), (std::vector<std::string>{"a1", "b1", "a2", "b2", "a3", "b3"}));
  absl::StatusOr<v1::Run> done = store_->GetRun(run);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::RUN_STATE_SUCCEEDED);
  ASSERT_EQ(done->abandoned_size(), 1);
  EXPECT_EQ(done->abandoned(0).boot_index(), -1);
  EXPECT_EQ(done->abandoned(0).agent_id(), "lost");
  EXPECT_EQ(done->abandoned(0).machine_id(), "mlost");
  EXPECT_EQ(done->abandoned(0).jobs(), 3u);
  EXPECT_NE(done->stop_reason().find("not as planned: slot 0 measured again"), std::string::npos)
      << done->stop_reason();

  // Every sample is kept; the lost host's are marked and so every counted one is the spare's.
  absl::StatusOr<std::vector<v1::Sample>> samples = store_->GetSamples(run);
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 9u);
  std::map<std::string, int> counted, excluded;
  for (const v1::Sample& s : *samples) {
    EXPECT_EQ(s.slot(), 0u);
    (s.excluded().empty() ? counted : excluded)[s.agent_id()]++;
    if (!s.excluded().empty()) {
      EXPECT_EQ(s.excluded(), "slot 0 restarted: lost was lost");
    }
  }
  EXPECT_EQ(counted, (std::map<std::string, int>{{"spare", 6}}));
  EXPECT_EQ(excluded, (std::map<std::string, int>{{"lost", 3}}));
}

TEST_F(StoreSlotsTest, ARestartedSlotOfADeferredRunIsExpandedAgainForItsNextHost) {
  absl::StatusOr<v1::RunSpec> spec = scheduler::ParseRunSpec(
      "name: d\nbenchmark: ebizzy\nsweep: {threads: {policy: pow2, min: 1, max: ncpus}}\n"
      "arms: [{name: a}]\n",
      "d.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  absl::StatusOr<std::string> run = store_->CreateDeferredRun(*spec, "", now_);
  ASSERT_TRUE(run.ok());
  auto expander = [](std::vector<std::string> values) -> SlotExpander {
    return [values](const v1::RunSpec&) -> absl::StatusOr<scheduler::SlotExpansion> {
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
  };
  absl::StatusOr<std::optional<v1::JobAssignment>> a =
      LeaseNext(*store_, *run, "lost", now_, 60'000, expander({"1", "2"}));
  ASSERT_TRUE(a.ok() && a->has_value());
  Complete(**a, "lost");
  ASSERT_TRUE(store_->RestartSlot(*run, 0, "lost", "restarted", now_)->restarted);
  // The next host has another sweep: the slot is expanded for it, from scratch.
  std::vector<std::string> ran;
  for (;;) {
    absl::StatusOr<std::optional<v1::JobAssignment>> b =
        LeaseNext(*store_, *run, "spare", now_, 60'000, expander({"1", "2", "4"}));
    ASSERT_TRUE(b.ok());
    if (!b->has_value()) break;
    ran.push_back((*b)->param_value());
    Complete(**b, "spare");
  }
  EXPECT_EQ(ran, (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_EQ(store_->GetRun(*run)->state(), v1::RUN_STATE_SUCCEEDED);
}

TEST_F(StoreSlotsTest, ABootCutShortByAnUnplannedRebootIsMeasuredAgainOnTheNextBoot) {
  const std::string run = Submit("iterations: 2\nboots: 2\n");
  // Boot index 0 (4 jobs) starts on boot b1; the host crashes after 2 jobs.
  for (int i = 0; i < 2; ++i) {
    std::optional<v1::JobAssignment> a = Lease(run, "h", "m", "b1");
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->boot_index(), 0u);
    Complete(*a, "h", "b1");
  }
  // It comes back on b2 (nobody asked for a reboot): boot index 0 is measured again, whole.
  std::vector<std::string> b2;
  while (std::optional<v1::JobAssignment> a = Lease(run, "h", "m", "b2")) {
    b2.push_back(a->arm() + std::to_string(a->iteration()));
    EXPECT_EQ(a->boot_index(), 0u);
    Complete(*a, "h", "b2");
  }
  EXPECT_EQ(b2, (std::vector<std::string>{"a1", "b1", "a2", "b2"}));
  // Boot index 1 on a third boot.
  EXPECT_EQ(Drain(run, "h", "b3").size(), 4u);
  absl::StatusOr<v1::Run> done = store_->GetRun(run);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::RUN_STATE_SUCCEEDED);
  ASSERT_EQ(done->abandoned_size(), 1);
  EXPECT_EQ(done->abandoned(0).boot_index(), 0);
  EXPECT_EQ(done->abandoned(0).boot_id(), "b1");
  EXPECT_EQ(done->abandoned(0).jobs(), 2u);
  // The counted samples come from the two complete boots only; b1's are kept apart.
  std::set<std::string> counted_boots;
  absl::StatusOr<std::vector<v1::Sample>> samples = store_->GetSamples(run);
  ASSERT_TRUE(samples.ok());
  int excluded = 0;
  for (const v1::Sample& s : *samples) {
    if (!s.excluded().empty()) {
      ++excluded;
      EXPECT_EQ(s.boot_id(), "b1");
      continue;
    }
    counted_boots.insert(s.boot_id());
  }
  EXPECT_EQ(excluded, 2);
  EXPECT_EQ(counted_boots, (std::set<std::string>{"b2", "b3"}));
}

TEST_F(StoreSlotsTest, AOneBootRunIsMeasuredAgainWholeWhenItsHostRebootsMidRun) {
  const std::string run = Submit("iterations: 2\n");
  std::optional<v1::JobAssignment> a = Lease(run, "h", "m", "b1");
  ASSERT_TRUE(a.has_value());
  Complete(*a, "h", "b1");
  EXPECT_EQ(Drain(run, "h", "b2"), (std::vector<std::string>{"a1", "b1", "a2", "b2"}));
  absl::StatusOr<std::vector<v1::Sample>> samples = store_->GetSamples(run);
  ASSERT_TRUE(samples.ok());
  std::set<std::string> counted_boots;
  for (const v1::Sample& s : *samples) {
    if (s.excluded().empty()) counted_boots.insert(s.boot_id());
  }
  EXPECT_EQ(counted_boots, (std::set<std::string>{"b2"}));
}

TEST_F(StoreSlotsTest, AnAgentRestartOnTheSameBootCarriesOn) {
  const std::string run = Submit("iterations: 2\n");
  std::optional<v1::JobAssignment> a = Lease(run, "h", "m", "b1");
  ASSERT_TRUE(a.has_value());
  Complete(*a, "h", "b1");
  EXPECT_EQ(Drain(run, "h", "b1").size(), 3u);
  EXPECT_EQ(store_->GetRun(run)->abandoned_size(), 0);
}

TEST_F(StoreSlotsTest, SlotProgressCountsOnlyWhatStillCounts) {
  const std::string run = Submit("iterations: 2\n");
  for (int i = 0; i < 2; ++i) {
    std::optional<v1::JobAssignment> a = Lease(run, "h");
    ASSERT_TRUE(a.has_value());
    Complete(*a, "h");
  }
  absl::StatusOr<SlotProgress> p = store_->SlotProgressOf(run, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->jobs_done, 2u);
  EXPECT_EQ(p->jobs_total, 4u);
  EXPECT_EQ(p->samples, 2u);
  EXPECT_EQ(p->boots_touched, 1u);
  ASSERT_TRUE(store_->RestartSlot(run, 0, "h", "r", now_)->restarted);
  p = store_->SlotProgressOf(run, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->jobs_done, 0u);
  EXPECT_EQ(p->jobs_total, 4u);
  EXPECT_EQ(p->samples, 0u);
}

}  // namespace
}  // namespace tlbfleet::store
