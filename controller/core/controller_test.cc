#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <vector>

#include "controller/core/controller_fixture_for_test.h"
#include "controller/core/fake_channel_for_test.h"

namespace tlbfleet::core {
namespace {

class ControllerTest : public ControllerFixture {
 protected:
  void SetUp() override { ControllerFixture::SetUp(); }

  static v1::Hello Hello(const std::string& id, bool ceiling_writable,
                         std::map<std::string, std::string> labels = {}) {
    v1::Hello hello;
    hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
    hello.set_agent_id(id);
    hello.mutable_host()->set_hostname("host-" + id);
    hello.mutable_host()->mutable_ceiling()->set_writable(ceiling_writable);
    if (!ceiling_writable)
      hello.mutable_host()->mutable_ceiling()->set_reason("kernel lockdown (integrity)");
    hello.mutable_host()->mutable_labels()->insert(labels.begin(), labels.end());
    return hello;
  }
  static v1::AgentMessage Idle() {
    v1::AgentMessage m;
    m.mutable_heartbeat()->set_state(v1::AGENT_STATE_IDLE);
    return m;
  }
};

constexpr char kCeilingSpec[] =
    "name: c\nbenchmark: ebizzy\nparams: {seconds: 1}\narms:\n"
    "  - {name: low, ceiling: 1}\n  - {name: high, ceiling: 512}\n";

TEST_F(ControllerTest, CeilingRunFailsAtOnceWhenTheOnlyHostIsLockedDown) {
  FakeChannel channel;
  ASSERT_TRUE(agents().Register(&channel, Hello("a1", /*ceiling_writable=*/false)).ok());
  agents().OnMessage(&channel, Idle());
  auto submitted = runs().Submit(kCeilingSpec, "c.yaml");
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  auto run = runs().GetRun(submitted->run_id());
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run->error().find("kernel lockdown (integrity)"), std::string::npos) << run->error();
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 0);
}

TEST_F(ControllerTest, CeilingRunGoesOnlyToTheHostThatCanWriteIt) {
  FakeChannel locked, open;
  ASSERT_TRUE(agents().Register(&locked, Hello("locked", false)).ok());
  ASSERT_TRUE(agents().Register(&open, Hello("open", true)).ok());
  agents().OnMessage(&locked, Idle());
  auto submitted = runs().Submit(kCeilingSpec, "c.yaml");
  ASSERT_TRUE(submitted.ok());
  EXPECT_EQ(runs().GetRun(submitted->run_id())->state(), v1::RUN_STATE_QUEUED);
  agents().OnMessage(&open, Idle());
  EXPECT_EQ(locked.Count(v1::ControllerMessage::kAssignment), 0);
  ASSERT_NE(open.LastAssignment(), nullptr);
  EXPECT_EQ(open.LastAssignment()->ceiling(), "1");
}

TEST_F(ControllerTest, RunWaitsForAHostWithTheSelectedLabel) {
  FakeChannel channel;
  ASSERT_TRUE(agents().Register(&channel, Hello("a1", true, {{"rack", "b"}})).ok());
  agents().OnMessage(&channel, Idle());
  auto submitted = runs().Submit(
      "name: l\nbenchmark: ebizzy\narms: [{name: a}]\nhosts: {labels: {rack: a}}\n", "l.yaml");
  ASSERT_TRUE(submitted.ok());
  controller_->Tick();
  EXPECT_EQ(runs().GetRun(submitted->run_id())->state(), v1::RUN_STATE_QUEUED);
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 0);
}

TEST_F(ControllerTest, OneJobAtATimeAndTheNextAfterCompletion) {
  FakeChannel channel;
  ASSERT_TRUE(agents().Register(&channel, Hello("a1", true)).ok());
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kWelcome), 1);
  auto submitted =
      runs().Submit("name: two\nbenchmark: ebizzy\niterations: 2\narms: [{name: a}]\n", "two.yaml");
  ASSERT_TRUE(submitted.ok());
  // Not dispatched before the agent says it is idle (it may still be replaying its spool).
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 0);
  agents().OnMessage(&channel, Idle());
  agents().OnMessage(&channel, Idle());
  controller_->Tick();
  ASSERT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 1);
  const v1::JobAssignment first = *channel.LastAssignment();

  v1::AgentMessage batch;
  batch.mutable_samples()->set_lease_id(first.lease_id());
  v1::Sample* s = batch.mutable_samples()->add_samples();
  s->set_metric("records_per_sec");
  s->set_value(5);
  agents().OnMessage(&channel, batch);
  v1::AgentMessage done;
  done.mutable_complete()->set_lease_id(first.lease_id());
  done.mutable_complete()->set_status(v1::JOB_STATUS_SUCCEEDED);
  done.mutable_complete()->set_sample_count(1);
  agents().OnMessage(&channel, done);
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kSampleAck), 1);
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kCompletionAck), 1);
  ASSERT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 2);
  EXPECT_NE(channel.LastAssignment()->lease_id(), first.lease_id());
}

TEST_F(ControllerTest, ExpiredLeaseIsCancelledOnTheAgentAndRequeued) {
  FakeChannel channel;
  ASSERT_TRUE(agents().Register(&channel, Hello("a1", true)).ok());
  auto submitted = runs().Submit("name: e\nbenchmark: ebizzy\narms: [{name: a}]\n", "e.yaml");
  agents().OnMessage(&channel, Idle());
  ASSERT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 1);
  AdvanceMs(ControllerOptions{}.lease_ms + 1);
  controller_->Tick();
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kCancel), 1);
  auto run = runs().GetRun(submitted->run_id());
  EXPECT_EQ(run->jobs().queued() + run->jobs().running(), 1u);
}

TEST_F(ControllerTest, RefusesOtherProtocolVersionsAndEmptyIds) {
  FakeChannel channel;
  v1::Hello hello = Hello("a1", true);
  hello.set_protocol_version(v1::PROTOCOL_VERSION_UNSPECIFIED);
  EXPECT_EQ(agents().Register(&channel, hello).code(), absl::StatusCode::kFailedPrecondition);
  hello = Hello("", true);
  EXPECT_EQ(agents().Register(&channel, hello).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ControllerTest, CompareRefusesAnUnknownBaselineNamingTheField) {
  auto submitted =
      runs().Submit("name: b\nbenchmark: ebizzy\narms: [{name: a}, {name: b}]\n", "b.yaml");
  ASSERT_TRUE(submitted.ok());
  auto compare = runs().Compare(submitted->run_id(), "zzz");
  ASSERT_FALSE(compare.ok());
  EXPECT_NE(compare.status().message().find("baseline"), std::string::npos);
}

// --- boots and reboots ----------------------------------------------------------------------

constexpr char kTwoBootSpec[] =
    "name: boots\nbenchmark: pipetest\nparams: {loops: 1000}\nboots: 2\n"
    "arms: [{name: a}, {name: b, params: {loops: 2000}}]\n";

v1::Hello RebootableHello(const std::string& id, const std::string& boot) {
  v1::Hello hello;
  hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
  hello.set_agent_id(id);
  hello.mutable_host()->set_hostname("host-" + id);
  hello.mutable_host()->set_boot_id(boot);
  hello.mutable_host()->set_can_reboot(true);
  return hello;
}

// Completes the channel's last assignment with one sample of `value`.
void CompleteLast(Controller& controller, FakeChannel& channel, const std::string& metric,
                  double value, const std::string& boot = "") {
  const v1::JobAssignment a = *channel.LastAssignment();
  v1::AgentMessage batch;
  batch.mutable_samples()->set_lease_id(a.lease_id());
  v1::Sample* s = batch.mutable_samples()->add_samples();
  s->set_metric(metric);
  s->set_value(value);
  s->set_better(v1::BETTER_LOWER);
  s->set_boot_id(boot);  // the agent stamps its boot on every sample
  controller.agents().OnMessage(&channel, batch);
  v1::AgentMessage done;
  done.mutable_complete()->set_lease_id(a.lease_id());
  done.mutable_complete()->set_status(v1::JOB_STATUS_SUCCEEDED);
  done.mutable_complete()->set_sample_count(1);
  controller.agents().OnMessage(&channel, done);
}

TEST_F(ControllerTest, MultiBootRunFailsAtOnceWhenNoSelectedHostCanReboot) {
  FakeChannel channel;
  ASSERT_TRUE(agents().Register(&channel, Hello("a1", true)).ok());
  agents().OnMessage(&channel, Idle());
  auto submitted = runs().Submit(kTwoBootSpec, "b.yaml");
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  auto run = runs().GetRun(submitted->run_id());
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run->error().find("cannot reboot (its agent has no --reboot-command)"),
            std::string::npos)
      << run->error();
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 0);
}

TEST_F(ControllerTest, HostRebootsBetweenBootsAndRunsTheNextBootOnTheNewOne) {
  FakeChannel first;
  ASSERT_TRUE(agents().Register(&first, RebootableHello("a1", "boot-A")).ok());
  auto submitted = runs().Submit(kTwoBootSpec, "b.yaml");
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  agents().OnMessage(&first, Idle());
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(first.Count(v1::ControllerMessage::kAssignment), i + 1);
    EXPECT_EQ(first.LastAssignment()->boot_index(), 0u);
    CompleteLast(*controller_, first, "usecs_per_op", 5, "boot-A");
  }
  // Boot 0 is done: the host is asked to reboot, and idle heartbeats do not change that.
  ASSERT_EQ(first.Count(v1::ControllerMessage::kReboot), 1);
  EXPECT_EQ(first.sent.back().reboot().boot_id(), "boot-A");
  agents().OnMessage(&first, Idle());
  controller_->Tick();
  EXPECT_EQ(first.Count(v1::ControllerMessage::kAssignment), 2);
  EXPECT_EQ(first.Count(v1::ControllerMessage::kReboot), 1);

  agents().Unregister(&first);
  FakeChannel second;
  ASSERT_TRUE(agents().Register(&second, RebootableHello("a1", "boot-B")).ok());
  agents().OnMessage(&second, Idle());
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(second.Count(v1::ControllerMessage::kAssignment), i + 1);
    EXPECT_EQ(second.LastAssignment()->boot_index(), 1u);
    CompleteLast(*controller_, second, "usecs_per_op", 5, "boot-B");
  }
  EXPECT_EQ(second.Count(v1::ControllerMessage::kReboot), 0);
  auto run = runs().GetRun(submitted->run_id());
  EXPECT_EQ(run->state(), v1::RUN_STATE_SUCCEEDED);
  auto samples = runs().GetResults(submitted->run_id());
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->samples_size(), 4);
  std::set<std::string> boots;
  for (const v1::Sample& s : samples->samples()) boots.insert(s.boot_id());
  EXPECT_EQ(boots, (std::set<std::string>{"boot-A", "boot-B"}));
}

// A rebootable host on boot-A, a two-boot run, its first boot done: the host has been asked
// to reboot once.
class ControllerRebootTest : public ControllerTest {
 protected:
  void RunFirstBootUntilRebootRequest(FakeChannel& channel, std::string* run_id) {
    ASSERT_TRUE(agents().Register(&channel, RebootableHello("a1", "boot-A")).ok());
    auto submitted = runs().Submit(kTwoBootSpec, "b.yaml");
    ASSERT_TRUE(submitted.ok()) << submitted.status();
    *run_id = submitted->run_id();
    agents().OnMessage(&channel, Idle());
    CompleteLast(*controller_, channel, "usecs_per_op", 5);
    CompleteLast(*controller_, channel, "usecs_per_op", 5);
    ASSERT_EQ(channel.Count(v1::ControllerMessage::kReboot), 1);
  }
};

TEST_F(ControllerRebootTest, AHostThatKeepsComingBackOnTheSameBootFailsTheRun) {
  FakeChannel channel;
  std::string run_id;
  ASSERT_NO_FATAL_FAILURE(RunFirstBootUntilRebootRequest(channel, &run_id));
  for (int reconnect = 0; reconnect < 2; ++reconnect) {
    agents().Unregister(&channel);
    channel.sent.clear();
    ASSERT_TRUE(agents().Register(&channel, RebootableHello("a1", "boot-A")).ok());
    agents().OnMessage(&channel, Idle());
  }
  auto run = runs().GetRun(run_id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run->error().find("did not reboot"), std::string::npos) << run->error();
}

TEST_F(ControllerRebootTest, AnAgentThatCannotCarryOutTheRebootFailsTheRunWithItsReason) {
  FakeChannel channel;
  std::string run_id;
  ASSERT_NO_FATAL_FAILURE(RunFirstBootUntilRebootRequest(channel, &run_id));
  v1::AgentMessage note;
  note.mutable_progress()->set_message("reboot failed: reboot(2): Operation not permitted");
  agents().OnMessage(&channel, note);
  auto run = runs().GetRun(run_id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run->error().find("could not reboot: reboot failed: reboot(2)"), std::string::npos)
      << run->error();
}

TEST_F(ControllerRebootTest, ARebootThatNeverHappensFailsTheRunAfterTheTimeout) {
  FakeChannel channel;
  std::string run_id;
  ASSERT_NO_FATAL_FAILURE(RunFirstBootUntilRebootRequest(channel, &run_id));
  AdvanceMs(ControllerOptions{}.reboot_timeout_ms - 1);
  controller_->Tick();
  EXPECT_EQ(runs().GetRun(run_id)->state(), v1::RUN_STATE_RUNNING);
  AdvanceMs(2);
  controller_->Tick();
  auto run = runs().GetRun(run_id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run->error().find("did not reboot within 180 s"), std::string::npos) << run->error();
}

// --- adaptive runs -------------------------------------------------------------------------

TEST_F(ControllerTest, AdaptiveRunStopsAtOnceWhenTheArmsAreExactlyAlike) {
  FakeChannel channel;
  ASSERT_TRUE(agents().Register(&channel, Hello("a1", true)).ok());
  auto submitted = runs().Submit(
      "name: ad\nbenchmark: pipetest\nparams: {loops: 1000}\n"
      "iterations: {min: 10, max: 30, target_ci: 1%}\n"
      "arms: [{name: a}, {name: b, params: {loops: 2000}}]\n",
      "ad.yaml");
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  agents().OnMessage(&channel, Idle());
  // A one-boot row settles only with 10 iterations per arm (docs/statistics.md).
  for (int i = 0; i < 20; ++i) CompleteLast(*controller_, channel, "usecs_per_op", 5);
  EXPECT_EQ(runs().GetRun(submitted->run_id())->state(), v1::RUN_STATE_RUNNING);
  controller_->DecideAdaptiveRunsForTest();
  auto run = runs().GetRun(submitted->run_id());
  EXPECT_EQ(run->state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(run->adaptive_rounds(), 0u);
  EXPECT_NE(run->stop_reason().find("after 10 iterations x 1 boot per arm"), std::string::npos)
      << run->stop_reason();
}

TEST_F(ControllerTest, AdaptiveRunAddsIterationsWhileTheComparisonIsOpenThenStopsAtMax) {
  FakeChannel channel;
  ASSERT_TRUE(agents().Register(&channel, Hello("a1", true)).ok());
  auto submitted = runs().Submit(
      "name: ad\nbenchmark: pipetest\nparams: {loops: 1000}\n"
      "iterations: {min: 2, max: 5, target_ci: 0.1%}\n"
      "arms: [{name: a}, {name: b, params: {loops: 2000}}]\n",
      "ad.yaml");
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  agents().OnMessage(&channel, Idle());
  // Noisy and overlapping: 4, 6, 4, 6, ... in both arms.
  int done = 0;
  auto complete_all = [&] {
    while (channel.Count(v1::ControllerMessage::kAssignment) > done) {
      CompleteLast(*controller_, channel, "usecs_per_op", done % 4 < 2 ? 4 : 6);
      ++done;
    }
  };
  complete_all();
  EXPECT_EQ(done, 4);
  for (int round = 0; round < 4; ++round) {
    controller_->DecideAdaptiveRunsForTest();
    complete_all();
  }
  auto run = runs().GetRun(submitted->run_id());
  EXPECT_EQ(run->state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(run->iterations_per_boot(), 5u);
  EXPECT_GE(run->adaptive_rounds(), 1u);
  EXPECT_EQ(done, 10);
  EXPECT_NE(run->stop_reason().find("maximum reached (5 iterations x 1 boot per arm)"),
            std::string::npos)
      << run->stop_reason();
}

}  // namespace
}  // namespace tlbfleet::core
