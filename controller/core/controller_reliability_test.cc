// The core under faults, with an injected clock and the store on the calling thread: agents
// that come back after a restart (theirs or the controller's), writes that fail, reboots that
// do not come back, hosts briefly away. Each test restarts what it needs by building a new
// Controller on the same database.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "controller/core/controller_fixture_for_test.h"
#include "controller/core/fake_channel_for_test.h"

namespace tlbfleet::core {
namespace {

constexpr char kTwoJobs[] = "name: two\nbenchmark: ebizzy\niterations: 2\narms: [{name: a}]\n";
constexpr char kTwoBoots[] =
    "name: boots\nbenchmark: pipetest\nparams: {loops: 1000}\nboots: 2\narms: [{name: a}]\n";
constexpr char kTwoBootsFailIfLost[] =
    "name: boots\nbenchmark: pipetest\nparams: {loops: 1000}\nboots: 2\narms: [{name: a}]\n"
    "on_host_lost: {action: fail}\n";
constexpr char kCeiling[] =
    "name: c\nbenchmark: ebizzy\narms: [{name: low, ceiling: 1}, {name: high, ceiling: 512}]\n";

class ControllerReliabilityTest : public ControllerFixture {
 protected:
  void SetUp() override {
    options_.lease_ms = 10'000;
    options_.heartbeat_ms = 2'500;
    options_.reconnect_grace_ms = 30'000;
    options_.reboot_return_ms = 600'000;
    ControllerFixture::SetUp();
    controller_->RecoverForTest();
  }

  static v1::Hello Hello(const std::string& id, const std::string& boot = "boot-A",
                         bool writable = true) {
    v1::Hello hello;
    hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
    hello.set_agent_id(id);
    hello.mutable_host()->set_hostname("host-" + id);
    hello.mutable_host()->set_boot_id(boot);
    hello.mutable_host()->set_can_reboot(true);
    hello.mutable_host()->mutable_ceiling()->set_writable(writable);
    if (!writable) hello.mutable_host()->mutable_ceiling()->set_reason("kernel lockdown");
    return hello;
  }
  void Heartbeat(FakeChannel& channel, v1::AgentState state, const std::string& lease = "") {
    v1::AgentMessage m;
    m.mutable_heartbeat()->set_state(state);
    m.mutable_heartbeat()->set_lease_id(lease);
    agents().OnMessage(&channel, m);
  }
  void Samples(FakeChannel& channel, const v1::JobAssignment& a, int n) {
    v1::AgentMessage batch;
    batch.mutable_samples()->set_lease_id(a.lease_id());
    batch.mutable_samples()->set_job_id(a.job_id());
    for (int i = 0; i < n; ++i) {
      v1::Sample* s = batch.mutable_samples()->add_samples();
      s->set_seq(static_cast<uint64_t>(i));
      s->set_metric("records_per_sec");
      s->set_value(100 + i);
    }
    agents().OnMessage(&channel, batch);
  }
  void Complete(FakeChannel& channel, const v1::JobAssignment& a, int n,
                v1::JobStatus status = v1::JOB_STATUS_SUCCEEDED) {
    v1::AgentMessage done;
    done.mutable_complete()->set_lease_id(a.lease_id());
    done.mutable_complete()->set_job_id(a.job_id());
    done.mutable_complete()->set_status(status);
    done.mutable_complete()->set_sample_count(static_cast<uint64_t>(n));
    agents().OnMessage(&channel, done);
  }
};

TEST_F(ControllerReliabilityTest, AfterARestartLongerThanTheLeaseTheRunningJobIsKeptNotRunTwice) {
  FakeChannel before;
  ASSERT_TRUE(agents().Register(&before, Hello("a1")).ok());
  const std::string run_id = Submit(kTwoJobs);
  Heartbeat(before, v1::AGENT_STATE_IDLE);
  ASSERT_NE(before.LastAssignment(), nullptr);
  const v1::JobAssignment first = *before.LastAssignment();

  // kill -9 of the controller; it is down for three leases.
  AdvanceMs(3 * options_.lease_ms);
  Restart();
  controller_->Tick();  // the first tick after the start expires nothing
  EXPECT_EQ(runs().GetRun(run_id)->jobs().running(), 1u);

  // The agent comes back (its workload never stopped) and says so.
  FakeChannel after;
  v1::Hello hello = Hello("a1");
  hello.set_running_lease_id(first.lease_id());
  ASSERT_TRUE(agents().Register(&after, hello).ok());
  Heartbeat(after, v1::AGENT_STATE_RUNNING, first.lease_id());
  Heartbeat(after, v1::AGENT_STATE_IDLE);  // crossing: it must not get a second lease
  EXPECT_EQ(after.Count(v1::ControllerMessage::kAssignment), 0);
  Samples(after, first, 3);
  Complete(after, first, 3);
  ASSERT_EQ(after.Count(v1::ControllerMessage::kCompletionAck), 1);
  EXPECT_FALSE(after.sent[after.sent.size() - 2].completion_ack().rejected());
  ASSERT_EQ(after.Count(v1::ControllerMessage::kAssignment), 1);
  const v1::JobAssignment second = *after.LastAssignment();
  Samples(after, second, 3);
  Complete(after, second, 3);
  auto run = runs().GetRun(run_id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_SUCCEEDED) << run->error();
  EXPECT_EQ(run->samples(), 6u);
  EXPECT_EQ(first.lease_id().substr(first.lease_id().find('a')), "a1");
  EXPECT_EQ(second.lease_id().substr(second.lease_id().find('a')), "a1");  // nothing ran twice
}

TEST_F(ControllerReliabilityTest, AFinishedSpooledResultIsAcceptedAfterARestart) {
  FakeChannel before;
  ASSERT_TRUE(agents().Register(&before, Hello("a1")).ok());
  const std::string run_id = Submit(kTwoJobs);
  Heartbeat(before, v1::AGENT_STATE_IDLE);
  const v1::JobAssignment first = *before.LastAssignment();
  AdvanceMs(2 * options_.lease_ms);
  Restart();
  // Back within the grace with the result in its spool.
  AdvanceMs(options_.reconnect_grace_ms / 2);
  controller_->Tick();
  FakeChannel after;
  v1::Hello hello = Hello("a1");
  v1::SpooledLease* spooled = hello.add_spooled();
  spooled->set_lease_id(first.lease_id());
  spooled->set_complete(true);
  ASSERT_TRUE(agents().Register(&after, hello).ok());
  // Registering renewed it for a lease from now.
  AdvanceMs(options_.lease_ms / 2);
  controller_->Tick();
  Samples(after, first, 2);
  Complete(after, first, 2);
  EXPECT_EQ(after.Count(v1::ControllerMessage::kCompletionAck), 1);
  EXPECT_FALSE(after.sent.back().completion_ack().rejected());
  EXPECT_EQ(runs().GetRun(run_id)->jobs().succeeded(), 1u);
}

TEST_F(ControllerReliabilityTest, AnAgentThatLostItsLeaseGetsItBackNotASecondOneAndKeepsItsSlot) {
  FakeChannel a, b;
  ASSERT_TRUE(agents().Register(&a, Hello("a1")).ok());
  ASSERT_TRUE(agents().Register(&b, Hello("b1")).ok());
  const std::string run_id = Submit(kTwoJobs);  // one slot
  Heartbeat(a, v1::AGENT_STATE_IDLE);
  const v1::JobAssignment lost = *a.LastAssignment();
  // kill -9 of agent a mid-job; it restarts on its state dir: nothing running, nothing spooled.
  agents().Unregister(&a);
  FakeChannel restarted;
  ASSERT_TRUE(agents().Register(&restarted, Hello("a1")).ok());
  EXPECT_EQ(runs().GetRun(run_id)->jobs().running(), 0u);  // taken back at once
  // b, idle, must not take a's slot; a takes its job again, as a new attempt.
  Heartbeat(b, v1::AGENT_STATE_IDLE);
  EXPECT_EQ(b.Count(v1::ControllerMessage::kAssignment), 0);
  Heartbeat(restarted, v1::AGENT_STATE_IDLE);
  ASSERT_EQ(restarted.Count(v1::ControllerMessage::kAssignment), 1);
  const v1::JobAssignment again = *restarted.LastAssignment();
  EXPECT_EQ(again.job_id(), lost.job_id());
  EXPECT_NE(again.lease_id(), lost.lease_id());
  // The old lease's expiry time passes: nothing happens to the agent's slot or new lease.
  AdvanceMs(2 * options_.lease_ms);
  Heartbeat(restarted, v1::AGENT_STATE_RUNNING, again.lease_id());
  controller_->Tick();
  Heartbeat(b, v1::AGENT_STATE_IDLE);
  EXPECT_EQ(b.Count(v1::ControllerMessage::kAssignment), 0);
  EXPECT_EQ(runs().GetRun(run_id)->jobs().running(), 1u);
  EXPECT_EQ(restarted.Count(v1::ControllerMessage::kCancel), 0);
}

// Found by fuzz_agent_message (long run, 2026-12-01): a heartbeat naming a lease the agent does
// not hold replaced the session's own lease; the rejected completion of that stale lease then
// freed the session, and the agent was given a second lease while the first was still its.
TEST_F(ControllerReliabilityTest, AHeartbeatNamingAStaleLeaseDoesNotFreeTheAgentForASecondOne) {
  FakeChannel a;
  ASSERT_TRUE(agents().Register(&a, Hello("a1")).ok());
  const std::string run_id = Submit(kTwoJobs);
  Heartbeat(a, v1::AGENT_STATE_IDLE);
  ASSERT_EQ(a.Count(v1::ControllerMessage::kAssignment), 1);
  const v1::JobAssignment held = *a.LastAssignment();
  v1::JobAssignment stale = held;
  stale.set_lease_id("j0a1");
  stale.set_job_id(0);
  Heartbeat(a, v1::AGENT_STATE_RUNNING, stale.lease_id());
  EXPECT_EQ(a.Count(v1::ControllerMessage::kCancel), 1) << "the stale lease is cancelled";
  Complete(a, stale, 0);
  Heartbeat(a, v1::AGENT_STATE_IDLE);
  EXPECT_EQ(a.Count(v1::ControllerMessage::kAssignment), 1) << "no second lease";
  EXPECT_EQ(runs().GetRun(run_id)->jobs().running(), 1u);
  // The lease it holds still completes normally, and then it gets the next job.
  Samples(a, held, 1);
  Complete(a, held, 1);
  EXPECT_EQ(a.Count(v1::ControllerMessage::kAssignment), 2);
}

TEST_F(ControllerReliabilityTest, FailedSampleWritesCloseTheStreamAndTheCompletionIsNotJudged) {
  FakeChannel a;
  ASSERT_TRUE(agents().Register(&a, Hello("a1")).ok());
  const std::string run_id = Submit(kTwoJobs);
  Heartbeat(a, v1::AGENT_STATE_IDLE);
  const v1::JobAssignment job = *a.LastAssignment();
  store_->FailWritesForTest(store::StorageFailure(absl::StatusCode::kResourceExhausted, "full"));
  Samples(a, job, 3);
  Complete(a, job, 3);
  EXPECT_EQ(a.Count(v1::ControllerMessage::kSampleAck), 0);
  EXPECT_EQ(a.Count(v1::ControllerMessage::kCompletionAck), 0);
  EXPECT_EQ(a.closed_status().code(), absl::StatusCode::kUnavailable) << a.closed_status();
  // Writes work again; the stream is gone; the agent reconnects and resends its spool.
  store_->FailWritesForTest(absl::OkStatus());
  controller_->Tick();
  agents().Unregister(&a);
  FakeChannel again;
  v1::Hello hello = Hello("a1");
  hello.add_spooled()->set_lease_id(job.lease_id());
  ASSERT_TRUE(agents().Register(&again, hello).ok());
  Samples(again, job, 3);
  Complete(again, job, 3);
  ASSERT_EQ(again.Count(v1::ControllerMessage::kCompletionAck), 1);
  EXPECT_FALSE(again.sent.back().completion_ack().rejected());
  auto run = runs().GetRun(run_id);
  EXPECT_EQ(run->jobs().succeeded(), 1u) << run->error();
  EXPECT_EQ(run->samples(), 3u);
  EXPECT_NE(run->state(), v1::RUN_STATE_FAILED);
}

TEST_F(ControllerReliabilityTest, DuringAStorageOutageNoLeaseIsJudgedNoWorkIsLeasedAndReadsWork) {
  FakeChannel a, b;
  ASSERT_TRUE(agents().Register(&a, Hello("a1")).ok());
  const std::string run_id = Submit(kTwoJobs);
  Heartbeat(a, v1::AGENT_STATE_IDLE);
  store_->FailWritesForTest(store::StorageFailure(absl::StatusCode::kResourceExhausted, "full"));
  // New work is refused with the reason; reads go on.
  auto refused = runs().Submit(kTwoJobs, "more.yaml");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("full"), std::string::npos);
  EXPECT_TRUE(runs().GetRun(run_id).ok());
  v1::ListRunsRequest list;
  list.set_limit(10);
  EXPECT_TRUE(runs().ListRuns(list).ok());
  // The agent's renewals fail for longer than the lease: its lease is not taken back.
  for (int i = 0; i < 4; ++i) {
    AdvanceMs(options_.lease_ms);
    controller_->Tick();
  }
  store_->FailWritesForTest(absl::OkStatus());
  controller_->Tick();  // writes work: every lease gets the grace from now
  AdvanceMs(options_.reconnect_grace_ms - 1);
  controller_->Tick();
  EXPECT_EQ(runs().GetRun(run_id)->jobs().running(), 1u);
  AdvanceMs(2);
  controller_->Tick();  // nobody reported it: now it expires
  EXPECT_EQ(runs().GetRun(run_id)->jobs().running(), 0u);
}

TEST_F(ControllerReliabilityTest, ARefusedAssignmentIsRequeuedNotFailed) {
  FakeChannel a;
  ASSERT_TRUE(agents().Register(&a, Hello("a1")).ok());
  const std::string run_id = Submit(kTwoJobs);
  Heartbeat(a, v1::AGENT_STATE_IDLE);
  const v1::JobAssignment job = *a.LastAssignment();
  Complete(a, job, 0, v1::JOB_STATUS_REFUSED);
  auto run = runs().GetRun(run_id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_RUNNING) << run->error();
  EXPECT_EQ(run->jobs().queued(), 2u);
  EXPECT_EQ(a.Count(v1::ControllerMessage::kCompletionAck), 1);
  Heartbeat(a, v1::AGENT_STATE_IDLE);
  ASSERT_EQ(a.Count(v1::ControllerMessage::kAssignment), 2);
  EXPECT_EQ(a.LastAssignment()->job_id(), job.job_id());
}

TEST_F(ControllerReliabilityTest, ARunIsNotFailedWhileItsOnlyCapableHostIsBrieflyAway) {
  FakeChannel capable, locked;
  ASSERT_TRUE(agents().Register(&capable, Hello("cap", "boot-A", true)).ok());
  ASSERT_TRUE(agents().Register(&locked, Hello("lock", "boot-A", false)).ok());
  agents().Unregister(&capable);  // mid-reboot
  const std::string run_id = Submit(kCeiling);
  controller_->Tick();
  EXPECT_EQ(runs().GetRun(run_id)->state(), v1::RUN_STATE_QUEUED);
  // Away for longer than a reboot may take: now only the locked host counts.
  AdvanceMs(options_.reboot_return_ms + 1);
  controller_->Tick();
  auto run = runs().GetRun(run_id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run->error().find("kernel lockdown"), std::string::npos) << run->error();
}

TEST_F(ControllerReliabilityTest, ARebootRequestSurvivesARestartAndTheHostComingBackCompletesIt) {
  FakeChannel a;
  ASSERT_TRUE(agents().Register(&a, Hello("a1", "boot-A")).ok());
  const std::string run_id = Submit(kTwoBoots);
  Heartbeat(a, v1::AGENT_STATE_IDLE);
  const v1::JobAssignment first = *a.LastAssignment();
  Samples(a, first, 1);
  Complete(a, first, 1);
  ASSERT_EQ(a.Count(v1::ControllerMessage::kReboot), 1);
  Restart();
  // The agent, mid-reboot, reconnects to the new controller on its old boot: no work for it.
  FakeChannel going;
  ASSERT_TRUE(agents().Register(&going, Hello("a1", "boot-A")).ok());
  Heartbeat(going, v1::AGENT_STATE_REBOOTING);
  Heartbeat(going, v1::AGENT_STATE_IDLE);
  EXPECT_EQ(going.Count(v1::ControllerMessage::kAssignment), 0);
  EXPECT_EQ(runs().Snapshot()->agents.at(AgentState::kRebooting), 1u);
  agents().Unregister(&going);
  FakeChannel back;
  ASSERT_TRUE(agents().Register(&back, Hello("a1", "boot-B")).ok());
  Heartbeat(back, v1::AGENT_STATE_IDLE);
  ASSERT_EQ(back.Count(v1::ControllerMessage::kAssignment), 1);
  EXPECT_EQ(back.LastAssignment()->boot_index(), 1u);
  EXPECT_EQ(runs().GetRun(run_id)->state(), v1::RUN_STATE_RUNNING);
}

TEST_F(ControllerReliabilityTest, AHostThatNeverComesBackFromARebootFailsItsRunKeepingSamples) {
  FakeChannel a;
  ASSERT_TRUE(agents().Register(&a, Hello("a1", "boot-A")).ok());
  const std::string run_id = Submit(kTwoBootsFailIfLost);
  Heartbeat(a, v1::AGENT_STATE_IDLE);
  const v1::JobAssignment first = *a.LastAssignment();
  Samples(a, first, 4);
  Complete(a, first, 4);
  ASSERT_EQ(a.Count(v1::ControllerMessage::kReboot), 1);
  agents().Unregister(&a);  // it went down and never returns
  Restart();                // (a restart meanwhile changes nothing)
  AdvanceMs(options_.reboot_return_ms - 1);
  controller_->Tick();
  EXPECT_EQ(runs().GetRun(run_id)->state(), v1::RUN_STATE_RUNNING);
  AdvanceMs(2);
  controller_->Tick();
  auto run = runs().GetRun(run_id);
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run->error().find("did not come back within 600 s"), std::string::npos) << run->error();
  EXPECT_EQ(run->samples(), 4u);
}

TEST_F(ControllerReliabilityTest, APeerReservationSurvivesARestart) {
  constexpr char kPeer[] =
      "name: p\nbenchmark: netperf\nparams: {test: tcp_rr, seconds: 1, server: peer}\n"
      "iterations: 1\narms: [{name: a}]\nhosts: {labels: {role: client}}\n";
  constexpr char kPlain[] = "name: e\nbenchmark: ebizzy\narms: [{name: a}]\n";
  FakeChannel client, server;
  v1::Hello c = Hello("client");
  (*c.mutable_host()->mutable_labels())["role"] = "client";
  v1::Hello s = Hello("server");
  s.mutable_host()->set_netserver("127.0.0.2:12865");
  ASSERT_TRUE(agents().Register(&client, c).ok());
  ASSERT_TRUE(agents().Register(&server, s).ok());
  Submit(kPeer);
  Heartbeat(server, v1::AGENT_STATE_IDLE);
  Heartbeat(client, v1::AGENT_STATE_IDLE);
  ASSERT_EQ(client.Count(v1::ControllerMessage::kAssignment), 1);
  const v1::JobAssignment job = *client.LastAssignment();
  Restart();
  FakeChannel server_again, client_again;
  c.set_running_lease_id(job.lease_id());
  ASSERT_TRUE(agents().Register(&client_again, c).ok());
  ASSERT_TRUE(agents().Register(&server_again, s).ok());
  Submit(kPlain);
  Heartbeat(server_again, v1::AGENT_STATE_IDLE);
  EXPECT_EQ(server_again.Count(v1::ControllerMessage::kAssignment), 0);  // still serving
  Samples(client_again, job, 1);
  Complete(client_again, job, 1);  // releases the peer, which takes the waiting run
  EXPECT_EQ(server_again.Count(v1::ControllerMessage::kAssignment), 1);
}

}  // namespace
}  // namespace tlbfleet::core
