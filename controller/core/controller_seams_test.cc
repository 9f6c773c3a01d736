// The seams other parts of the controller build on: one live stream per agent id bound to
// its principal, observers (observer.h), run events and the gauges' snapshot.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "controller/core/controller_fixture_for_test.h"
#include "controller/core/fake_channel_for_test.h"

namespace tlbfleet::core {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// Writes down every hook as one line.
class RecordingObserver : public FleetObserver {
 public:
  void OnRunEvent(const v1::RunEvent& event) override {
    Add(absl::StrCat("event ", event.id(), " ", Kind(event)));
    absl::MutexLock lock(&mu_);
    events_.push_back(event);
  }
  void OnRunFinished(const v1::Run& run) override {
    Add(absl::StrCat("run finished ", run.id(), " ", v1::RunState_Name(run.state())));
  }
  void OnAgentConnected(const std::string& agent_id, const v1::HostInfo& host) override {
    Add(absl::StrCat("connected ", agent_id, " ", host.hostname()));
  }
  void OnAgentDisconnected(const std::string& agent_id) override {
    Add(absl::StrCat("disconnected ", agent_id));
  }
  void OnJobDispatched(const std::string& benchmark, double dispatch_seconds) override {
    Add(absl::StrCat("dispatched ", benchmark, dispatch_seconds >= 0 ? "" : " negative"));
  }
  void OnJobFinished(const std::string& benchmark, v1::JobStatus status,
                     double elapsed_seconds) override {
    Add(absl::StrCat("job finished ", benchmark, " ", v1::JobStatus_Name(status), " ",
                     elapsed_seconds));
  }
  void OnSamplesIngested(uint64_t stored, double ingest_seconds) override {
    Add(absl::StrCat("ingested ", stored));
  }
  void OnLeaseExpired(const std::string& run_id, bool requeued) override {
    Add(absl::StrCat("lease expired ", run_id, requeued ? " requeued" : " failed"));
  }
  void OnReboot(v1::RebootEvent::Kind kind) override {
    Add(absl::StrCat("reboot ", v1::RebootEvent::Kind_Name(kind)));
  }

  std::vector<std::string> lines() {
    absl::MutexLock lock(&mu_);
    return lines_;
  }
  std::vector<v1::RunEvent> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }

 private:
  static std::string Kind(const v1::RunEvent& e) {
    if (e.has_state()) return v1::RunState_Name(e.state().state());
    if (e.has_job()) return v1::JobState_Name(e.job().state());
    if (e.has_reboot()) return v1::RebootEvent::Kind_Name(e.reboot().kind());
    return "adaptive";
  }
  void Add(std::string line) {
    absl::MutexLock lock(&mu_);
    lines_.push_back(std::move(line));
  }
  absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::RunEvent> events_ ABSL_GUARDED_BY(mu_);
};

class ControllerSeamsTest : public ControllerFixture {
 protected:
  void SetUp() override {
    ControllerFixture::SetUp();
    controller_->AddObserver(&observer_);
  }

  static v1::Hello Hello(const std::string& id, const std::string& boot = "boot-A",
                         bool ceiling_writable = true) {
    v1::Hello hello;
    hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
    hello.set_agent_id(id);
    hello.mutable_host()->set_hostname("host-" + id);
    hello.mutable_host()->set_boot_id(boot);
    hello.mutable_host()->set_can_reboot(true);
    hello.mutable_host()->mutable_ceiling()->set_writable(ceiling_writable);
    return hello;
  }
  void CompleteLast(FakeChannel& channel, int samples = 1) {
    const v1::JobAssignment a = *channel.LastAssignment();
    v1::AgentMessage batch;
    batch.mutable_samples()->set_lease_id(a.lease_id());
    for (int i = 0; i < samples; ++i) {
      v1::Sample* s = batch.mutable_samples()->add_samples();
      s->set_seq(static_cast<uint64_t>(i));
      s->set_metric("usecs_per_op");
      s->set_value(5);
    }
    agents().OnMessage(&channel, batch);
    v1::AgentMessage done;
    done.mutable_complete()->set_lease_id(a.lease_id());
    done.mutable_complete()->set_status(v1::JOB_STATUS_SUCCEEDED);
    done.mutable_complete()->set_sample_count(static_cast<uint64_t>(samples));
    done.mutable_complete()->set_elapsed_seconds(2);
    agents().OnMessage(&channel, done);
  }

  RecordingObserver observer_;
};

constexpr char kOneJob[] =
    "name: one\nbenchmark: pipetest\nparams: {loops: 1000}\n"
    "arms: [{name: a}]\n";
constexpr char kTwoBoots[] =
    "name: boots\nbenchmark: pipetest\nparams: {loops: 1000}\nboots: 2\n"
    "arms: [{name: a}]\n";

TEST_F(ControllerSeamsTest, ASecondLiveStreamOfAnAgentIsRefusedUntilTheFirstCloses) {
  FakeChannel first("first"), second("second");
  ASSERT_TRUE(agents().Register(&first, Hello("a1")).ok());
  absl::Status again = agents().Register(&second, Hello("a1"));
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(again.message()), HasSubstr("first"));
  EXPECT_EQ(second.Count(v1::ControllerMessage::kWelcome), 0);

  // The first stream keeps the agent: it gets the work, the refused one nothing.
  Submit(kOneJob);
  Idle(second);
  Idle(first);
  EXPECT_EQ(first.Count(v1::ControllerMessage::kAssignment), 1);
  EXPECT_EQ(second.Count(v1::ControllerMessage::kAssignment), 0);
  agents().Unregister(&second);  // the refused stream closing changes nothing
  EXPECT_TRUE(runs().ListHosts()->hosts(0).connected());

  agents().Unregister(&first);
  ASSERT_TRUE(agents().Register(&second, Hello("a1")).ok());
  EXPECT_EQ(second.Count(v1::ControllerMessage::kWelcome), 1);
}

TEST_F(ControllerSeamsTest, AStreamFromAnEarlierBootOfTheHostIsReplaced) {
  FakeChannel old_boot("old"), new_boot("new");
  ASSERT_TRUE(agents().Register(&old_boot, Hello("a1", "boot-A")).ok());
  ASSERT_TRUE(agents().Register(&new_boot, Hello("a1", "boot-B")).ok());
  Submit(kOneJob);
  Idle(old_boot);
  EXPECT_EQ(old_boot.Count(v1::ControllerMessage::kAssignment), 0);
  agents().Unregister(&old_boot);  // its late close must not drop the new stream
  Idle(new_boot);
  EXPECT_EQ(new_boot.Count(v1::ControllerMessage::kAssignment), 1);
  EXPECT_TRUE(runs().ListHosts()->hosts(0).connected());
}

TEST_F(ControllerSeamsTest, AnAgentIdStaysWithThePrincipalThatRegisteredItFirst) {
  FakeChannel one, two, three;
  ASSERT_TRUE(agents().Register(&one, Hello("a1"), "agent:rack-a").ok());
  agents().Unregister(&one);
  absl::Status stolen = agents().Register(&two, Hello("a1"), "agent:rack-b");
  EXPECT_EQ(stolen.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(two.Count(v1::ControllerMessage::kWelcome), 0);
  EXPECT_TRUE(agents().Register(&three, Hello("a1"), "agent:rack-a").ok());
}

TEST_F(ControllerSeamsTest, ObserversHearEveryHookAfterTheChangeIsStored) {
  FakeChannel channel;
  ASSERT_TRUE(agents().Register(&channel, Hello("a1")).ok());
  Idle(channel);
  const std::string run = Submit(kOneJob);
  ASSERT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 1);
  CompleteLast(channel, 3);
  agents().Unregister(&channel);
  // Nothing is delivered on the caller's thread (tests without Start() deliver explicitly).
  EXPECT_TRUE(observer_.lines().empty());
  controller_->DeliverObserverCallsForTest();

  const std::vector<std::string> lines = observer_.lines();
  EXPECT_THAT(lines, Contains("connected a1 host-a1"));
  EXPECT_THAT(lines, Contains("dispatched pipetest"));
  EXPECT_THAT(lines, Contains("ingested 3"));
  EXPECT_THAT(lines, Contains("job finished pipetest JOB_STATUS_SUCCEEDED 2"));
  EXPECT_THAT(lines, Contains("run finished " + run + " RUN_STATE_SUCCEEDED"));
  EXPECT_EQ(lines.back(), "disconnected a1");

  // Run events: as stored, in id order, ending with the run's success.
  absl::StatusOr<std::vector<v1::RunEvent>> stored = runs().RunEventsSince(run, 0, 0);
  ASSERT_TRUE(stored.ok());
  const std::vector<v1::RunEvent> heard = observer_.events();
  ASSERT_EQ(heard.size(), stored->size());
  for (size_t i = 0; i < heard.size(); ++i) EXPECT_EQ(heard[i].id(), (*stored)[i].id());
  ASSERT_FALSE(heard.empty());
  EXPECT_EQ(heard.back().state().state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(heard.back().samples(), 3u);
}

TEST_F(ControllerSeamsTest, ExpiredLeasesAndRebootsAreStoredAndHeard) {
  FakeChannel first;
  ASSERT_TRUE(agents().Register(&first, Hello("a1", "boot-A")).ok());
  const std::string run = Submit(kTwoBoots);
  Idle(first);
  AdvanceMs(ControllerOptions{}.lease_ms + 1);
  controller_->Tick();  // the silent host's lease expires and its job is queued again
  Idle(first);
  ASSERT_EQ(first.Count(v1::ControllerMessage::kAssignment), 2);
  CompleteLast(first);  // boot 0 done: a reboot is asked for
  ASSERT_EQ(first.Count(v1::ControllerMessage::kReboot), 1);
  agents().Unregister(&first);
  FakeChannel second;
  ASSERT_TRUE(agents().Register(&second, Hello("a1", "boot-B")).ok());
  controller_->DeliverObserverCallsForTest();

  const std::vector<std::string> lines = observer_.lines();
  EXPECT_THAT(lines, Contains("lease expired " + run + " requeued"));
  EXPECT_THAT(lines, Contains("reboot KIND_REQUESTED"));
  EXPECT_THAT(lines, Contains("reboot KIND_COMPLETED"));
  absl::StatusOr<std::vector<v1::RunEvent>> stored = runs().RunEventsSince(run, 0, 0);
  ASSERT_TRUE(stored.ok());
  std::vector<std::string> reboots;
  for (const v1::RunEvent& e : *stored) {
    if (!e.has_reboot()) continue;
    reboots.push_back(absl::StrCat(v1::RebootEvent::Kind_Name(e.reboot().kind()), " ",
                                   e.reboot().from_boot_id(), ">", e.reboot().to_boot_id()));
  }
  EXPECT_EQ(reboots,
            (std::vector<std::string>{"KIND_REQUESTED boot-A>", "KIND_COMPLETED boot-A>boot-B"}));
}

// What the Fleet page shows of a host: the job it runs (run, job, benchmark, arm,
// iteration), then "rebooting" from the request until it is back on a new boot, with the
// lease gone once its job completed.
TEST_F(ControllerSeamsTest, HostsSayWhichJobTheyRunAndWhetherTheyAreRebooting) {
  FakeChannel first;
  ASSERT_TRUE(agents().Register(&first, Hello("a1", "boot-A")).ok());
  const std::string run = Submit(kTwoBoots);
  Idle(first);
  ASSERT_EQ(first.Count(v1::ControllerMessage::kAssignment), 1);
  const v1::JobAssignment a = *first.LastAssignment();
  v1::Host host = runs().ListHosts()->hosts(0);
  EXPECT_TRUE(host.connected());
  EXPECT_EQ(host.current_lease(), a.lease_id());
  EXPECT_EQ(host.current_run_id(), run);
  EXPECT_EQ(host.current_job_id(), absl::StrCat(a.job_id()));
  EXPECT_EQ(host.current_benchmark(), "pipetest");
  EXPECT_EQ(host.current_arm(), "a");
  EXPECT_EQ(host.current_iteration(), 1u);
  EXPECT_FALSE(host.rebooting());

  CompleteLast(first);  // boot 0 done: a reboot is asked for
  ASSERT_EQ(first.Count(v1::ControllerMessage::kReboot), 1);
  host = runs().ListHosts()->hosts(0);
  EXPECT_TRUE(host.rebooting());
  EXPECT_EQ(host.rebooting_for_run(), run);
  EXPECT_TRUE(host.current_run_id().empty()) << host.ShortDebugString();
  agents().Unregister(&first);
  host = runs().ListHosts()->hosts(0);
  EXPECT_FALSE(host.connected());
  EXPECT_TRUE(host.rebooting()) << "away, but asked to reboot: not lost yet";

  FakeChannel second;
  ASSERT_TRUE(agents().Register(&second, Hello("a1", "boot-B")).ok());
  host = runs().ListHosts()->hosts(0);
  EXPECT_TRUE(host.connected());
  EXPECT_FALSE(host.rebooting()) << host.ShortDebugString();
  EXPECT_TRUE(host.rebooting_for_run().empty());
}

TEST_F(ControllerSeamsTest, SnapshotCountsAgentsRunsJobsAndTheQueue) {
  FakeChannel connecting, idle, running, locked, gone;
  ASSERT_TRUE(agents().Register(&gone, Hello("gone")).ok());
  agents().Unregister(&gone);
  ASSERT_TRUE(agents().Register(&connecting, Hello("connecting")).ok());
  ASSERT_TRUE(agents().Register(&running, Hello("running")).ok());
  Idle(running);
  Submit(
      "name: two\nbenchmark: pipetest\nparams: {loops: 1000}\niterations: 3\n"
      "arms: [{name: a}]\n");
  ASSERT_EQ(running.Count(v1::ControllerMessage::kAssignment), 1);
  ASSERT_TRUE(agents().Register(&idle, Hello("idle")).ok());
  ASSERT_TRUE(agents().Register(&locked, Hello("locked", "boot-A", false)).ok());

  absl::StatusOr<FleetSnapshot> snapshot = runs().Snapshot();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  // "idle" took no job: the run's one slot belongs to "running". Without an idle heartbeat
  // both it and "locked" are still connecting.
  EXPECT_EQ(snapshot->agents[AgentState::kConnecting], 3u);
  EXPECT_EQ(snapshot->agents[AgentState::kRunning], 1u);
  EXPECT_EQ(snapshot->agents[AgentState::kIdle], 0u);
  EXPECT_EQ(snapshot->agents[AgentState::kDisconnected], 1u);
  EXPECT_EQ(snapshot->agents_degraded, 1u);
  EXPECT_EQ(snapshot->runs[v1::RUN_STATE_RUNNING], 1u);
  EXPECT_EQ(snapshot->runs[v1::RUN_STATE_FAILED], 0u);  // every state is there
  EXPECT_EQ(snapshot->jobs[v1::JOB_STATE_RUNNING], 1u);
  EXPECT_EQ(snapshot->jobs[v1::JOB_STATE_QUEUED], 2u);
  EXPECT_EQ(snapshot->queue_depth, 2u);

  Idle(idle);
  snapshot = runs().Snapshot();
  EXPECT_EQ(snapshot->agents[AgentState::kIdle], 1u);
  EXPECT_EQ(AgentStateName(AgentState::kDisconnected), "disconnected");
}

// With the threads running: observers are called on the hub's thread, outside the
// controller's lock, so they may call back into the controller.
class ReentrantObserver : public FleetObserver {
 public:
  explicit ReentrantObserver(Controller*& controller) : controller_(controller) {}
  void OnAgentConnected(const std::string& agent_id, const v1::HostInfo&) override {
    absl::StatusOr<v1::ListHostsResponse> hosts = controller_->runs().ListHosts();
    absl::MutexLock lock(&mu_);
    hosts_seen_ = hosts.ok() ? hosts->hosts_size() : -1;
  }
  void OnRunFinished(const v1::Run& run) override {
    absl::StatusOr<v1::Run> again = controller_->runs().GetRun(run.id());
    absl::MutexLock lock(&mu_);
    finished_ = again.ok() ? again->state() : v1::RUN_STATE_UNSPECIFIED;
  }
  bool AwaitDone(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return hosts_seen_ == 1 && finished_ == v1::RUN_STATE_SUCCEEDED;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
  }

 private:
  Controller*& controller_;
  absl::Mutex mu_;
  int hosts_seen_ ABSL_GUARDED_BY(mu_) = 0;
  v1::RunState finished_ ABSL_GUARDED_BY(mu_) = v1::RUN_STATE_UNSPECIFIED;
};

TEST_F(ControllerSeamsTest, ObserversMayCallTheControllerFromTheirThread) {
  controller_.reset();
  Controller* self = nullptr;
  ReentrantObserver observer(self);
  controller_ = std::make_unique<ControllerImpl>(*store_, ControllerOptions{}, clock_);
  self = controller_.get();
  controller_->AddObserver(&observer);
  controller_->Start();
  FakeChannel channel;
  ASSERT_TRUE(agents().Register(&channel, Hello("a1")).ok());
  Idle(channel);
  Submit(kOneJob);
  ASSERT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 1);
  CompleteLast(channel);
  EXPECT_TRUE(observer.AwaitDone(absl::Seconds(30)));
  controller_->Stop();
}

}  // namespace
}  // namespace tlbfleet::core
