// A lost host never splices another machine into a run (issue 26), through the whole core:
// fake agent streams, an injected clock, the store on the calling thread. Both orders of a hung
// host's stream drop and lease expiry, each on_host_lost action, and an agent replaced by a new
// one of the same hostname.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "controller/core/controller_fixture_for_test.h"
#include "controller/core/fake_channel_for_test.h"

namespace tlbfleet::core {
namespace {

class ControllerLostHostTest : public ControllerFixture {
 protected:
  void SetUp() override {
    options_.lease_ms = 10'000;
    options_.heartbeat_ms = 2'500;  // silent after 6 s without a message
    options_.reconnect_grace_ms = 1'000;
    ControllerFixture::SetUp();
    controller_->RecoverForTest();
  }

  static v1::Hello Hello(const std::string& id, const std::string& hostname,
                         const std::string& machine) {
    v1::Hello hello;
    hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
    hello.set_agent_id(id);
    hello.mutable_host()->set_hostname(hostname);
    hello.mutable_host()->set_machine_id(machine);
    hello.mutable_host()->set_boot_id("boot-" + id);
    return hello;
  }
  // Runs the job last assigned on `channel` to completion with one sample.
  void RunLast(FakeChannel& channel) {
    const v1::JobAssignment a = *channel.LastAssignment();
    v1::AgentMessage batch;
    batch.mutable_samples()->set_lease_id(a.lease_id());
    batch.mutable_samples()->set_job_id(a.job_id());
    v1::Sample* s = batch.mutable_samples()->add_samples();
    s->set_metric("records_per_sec");
    s->set_value(100);
    s->set_host("vm1");  // every agent of these tests runs on a host named vm1
    agents().OnMessage(&channel, batch);
    v1::AgentMessage done;
    done.mutable_complete()->set_lease_id(a.lease_id());
    done.mutable_complete()->set_job_id(a.job_id());
    done.mutable_complete()->set_status(v1::JOB_STATUS_SUCCEEDED);
    done.mutable_complete()->set_sample_count(1);
    agents().OnMessage(&channel, done);
  }
  // Advances the clock in steps of a second, ticking, keeping the agents in `alive` talking.
  void Pass(int64_t ms, const std::vector<FakeChannel*>& alive = {}) {
    for (int64_t t = 0; t < ms; t += 1'000) {
      AdvanceMs(1'000);
      for (FakeChannel* c : alive) Idle(*c);
      controller_->Tick();
    }
  }
  std::string Submit(const std::string& policy) {
    auto submitted = runs().Submit(
        "name: r\nbenchmark: ebizzy\niterations: 3\narms: [{name: a}, {name: b}]\n" + policy,
        "spec.yaml");
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    return submitted.ok() ? submitted->run_id() : "";
  }
  // Samples that count, per agent.
  std::map<std::string, int> CountedByAgent(const std::string& run_id) {
    std::map<std::string, int> out;
    const v1::GetResultsResponse results = *runs().GetResults(run_id);
    for (const v1::Sample& s : results.samples()) {
      if (s.excluded().empty()) out[s.agent_id()]++;
    }
    return out;
  }
};

TEST_F(ControllerLostHostTest, LeaseExpiresWhileTheStreamIsOpenThenItDropsAndTheSlotIsNotSpliced) {
  FakeChannel hung, standby;
  ASSERT_TRUE(agents().Register(&hung, Hello("agent-hung", "vm1", "m-1")).ok());
  const std::string run_id = Submit("on_host_lost: {action: restart, after: 60}\n");
  Idle(hung);
  RunLast(hung);  // one job done
  ASSERT_EQ(hung.Count(v1::ControllerMessage::kAssignment), 2);
  // A second machine, same hostname, another agent id, stands by.
  ASSERT_TRUE(agents().Register(&standby, Hello("agent-other", "vm1", "m-2")).ok());
  Idle(standby);
  // The hung host is silent; its lease (10 s) expires with the stream still open...
  Pass(15'000, {&standby});
  EXPECT_EQ(standby.Count(v1::ControllerMessage::kAssignment), 0);
  v1::Run run = *runs().GetRun(run_id);
  ASSERT_EQ(run.waiting_for_size(), 1);
  EXPECT_EQ(run.waiting_for(0).agent_id(), "agent-hung");
  EXPECT_EQ(run.waiting_for(0).hostname(), "vm1");
  EXPECT_EQ(run.waiting_for(0).machine_id(), "m-1");
  EXPECT_NE(run.waiting_for(0).message().find("waiting for vm1 (agent agent-hu), silent since"),
            std::string::npos)
      << run.waiting_for(0).message();
  // ...then the stream drops (keepalive): still nobody else gets the slot.
  agents().Unregister(&hung);
  Pass(30'000, {&standby});
  EXPECT_EQ(standby.Count(v1::ControllerMessage::kAssignment), 0);
  EXPECT_EQ(runs().Snapshot()->runs_waiting_for_lost_host, 1u);
  // At the bound (60 s of silence) the slot is restarted and the standby host measures all of
  // it from the first job.
  Pass(20'000, {&standby});
  int ran = 0;
  while (standby.Count(v1::ControllerMessage::kAssignment) > ran) {
    ++ran;
    RunLast(standby);
  }
  EXPECT_EQ(ran, 6);
  run = *runs().GetRun(run_id);
  EXPECT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(run.waiting_for_size(), 0);
  ASSERT_EQ(run.abandoned_size(), 1);
  EXPECT_EQ(run.abandoned(0).agent_id(), "agent-hung");
  EXPECT_EQ(CountedByAgent(run_id), (std::map<std::string, int>{{"agent-other", 6}}));
  // The report says which machine measured what, and what it left out.
  absl::StatusOr<v1::CompareResponse> compared = runs().Compare(run_id, "");
  ASSERT_TRUE(compared.ok()) << compared.status();
  ASSERT_EQ(compared->report().hosts_size(), 2);  // arm a and arm b, one machine each
  for (const v1::Report::ArmHost& h : compared->report().hosts()) {
    EXPECT_EQ(h.agent_id(), "agent-other");
    EXPECT_EQ(h.machine_id(), "m-2");
  }
  ASSERT_EQ(compared->report().excluded_size(), 1);
  EXPECT_EQ(compared->report().excluded(0).agent_id(), "agent-hung");
  EXPECT_EQ(compared->report().excluded(0).samples(), 1u);
  EXPECT_NE(compared->text().find("left out: 1 sample of vm1 (agent agent-hu"), std::string::npos)
      << compared->text();
  // Every event of it is stored for SSE.
  std::set<int> kinds;
  const std::vector<v1::RunEvent> events = *runs().RunEventsSince(run_id, 0, 0);
  for (const v1::RunEvent& e : events) {
    if (e.has_slot_host()) kinds.insert(e.slot_host().kind());
  }
  EXPECT_EQ(kinds,
            (std::set<int>{v1::SlotHostEvent::KIND_SILENT, v1::SlotHostEvent::KIND_RESTARTED}));
}

TEST_F(ControllerLostHostTest, StreamDropsBeforeTheLeaseExpiresAndTheSlotWaitsTheSame) {
  FakeChannel hung, standby;
  ASSERT_TRUE(agents().Register(&hung, Hello("agent-hung", "vm1", "m-1")).ok());
  const std::string run_id = Submit("on_host_lost: {action: wait}\n");
  Idle(hung);
  ASSERT_TRUE(agents().Register(&standby, Hello("agent-other", "vm1", "m-2")).ok());
  Idle(standby);
  agents().Unregister(&hung);   // keepalive first
  Pass(3'600'000, {&standby});  // an hour: wait never gives up
  EXPECT_EQ(standby.Count(v1::ControllerMessage::kAssignment), 0);
  v1::Run run = *runs().GetRun(run_id);
  EXPECT_EQ(run.state(), v1::RUN_STATE_RUNNING);
  ASSERT_EQ(run.waiting_for_size(), 1);
  EXPECT_EQ(run.waiting_for(0).action(), "wait");
  // The host comes back: it carries on with its slot, the job it lost measured again.
  FakeChannel back;
  ASSERT_TRUE(agents().Register(&back, Hello("agent-hung", "vm1", "m-1")).ok());
  Idle(back);
  controller_->Tick();
  EXPECT_EQ(runs().GetRun(run_id)->waiting_for_size(), 0);
  int ran = 0;
  while (back.Count(v1::ControllerMessage::kAssignment) > ran) {
    ++ran;
    RunLast(back);
  }
  EXPECT_EQ(ran, 6);
  EXPECT_EQ(runs().GetRun(run_id)->state(), v1::RUN_STATE_SUCCEEDED);
  EXPECT_EQ(CountedByAgent(run_id), (std::map<std::string, int>{{"agent-hung", 6}}));
}

TEST_F(ControllerLostHostTest, FailFailsTheRunNamingTheHostWhenItWasLastHeardAndWhatItMeasured) {
  FakeChannel hung;
  ASSERT_TRUE(agents().Register(&hung, Hello("agent-hung", "vm1", "m-1")).ok());
  const std::string run_id = Submit("on_host_lost: {action: fail, after: 2m}\n");
  Idle(hung);
  RunLast(hung);
  RunLast(hung);
  Pass(100'000);
  EXPECT_EQ(runs().GetRun(run_id)->state(), v1::RUN_STATE_RUNNING);
  Pass(30'000);
  v1::Run run = *runs().GetRun(run_id);
  EXPECT_EQ(run.state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run.error().find("host vm1 (agent agent-hu, machine m-1) was lost: silent since"),
            std::string::npos)
      << run.error();
  EXPECT_NE(run.error().find("on_host_lost: fail after 2 min"), std::string::npos) << run.error();
  EXPECT_NE(run.error().find("slot 0 had measured 2 of 6 jobs"), std::string::npos) << run.error();
  EXPECT_EQ(run.samples(), 2u);
}

TEST_F(ControllerLostHostTest, AKilledAgentReplacedByANewIdOfTheSameHostnameDoesNotInheritItsSlot) {
  FakeChannel dead;
  ASSERT_TRUE(agents().Register(&dead, Hello("agent-old", "vm1", "m-1")).ok());
  const std::string run_id = Submit("on_host_lost: {action: restart, after: 30}\n");
  Idle(dead);
  RunLast(dead);
  agents().Unregister(&dead);  // kill -9
  FakeChannel fresh;           // reinstalled: new agent id, same hostname and machine
  ASSERT_TRUE(agents().Register(&fresh, Hello("agent-new", "vm1", "m-1")).ok());
  Idle(fresh);
  Pass(20'000, {&fresh});
  EXPECT_EQ(fresh.Count(v1::ControllerMessage::kAssignment), 0);
  Pass(15'000, {&fresh});
  ASSERT_GE(fresh.Count(v1::ControllerMessage::kAssignment), 1);
  EXPECT_EQ(fresh.LastAssignment()->iteration(), 1u);
  EXPECT_EQ(fresh.LastAssignment()->arm(), "a");
}

TEST_F(ControllerLostHostTest, AHostThatNeverComesBackFromARebootRestartsItsSlotByDefault) {
  FakeChannel a, spare;
  v1::Hello hello = Hello("agent-a", "vm1", "m-1");
  hello.mutable_host()->set_can_reboot(true);
  ASSERT_TRUE(agents().Register(&a, hello).ok());
  auto submitted = runs().Submit(
      "name: boots\nbenchmark: pipetest\nparams: {loops: 1000}\nboots: 2\narms: [{name: a}]\n",
      "spec.yaml");
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const std::string run_id = submitted->run_id();
  Idle(a);
  RunLast(a);
  ASSERT_EQ(a.Count(v1::ControllerMessage::kReboot), 1);
  agents().Unregister(&a);  // it went down and never returns
  v1::Hello spare_hello = Hello("agent-spare", "vm2", "m-2");
  spare_hello.mutable_host()->set_can_reboot(true);
  ASSERT_TRUE(agents().Register(&spare, spare_hello).ok());
  Idle(spare);
  Pass(options_.reboot_return_ms + 2'000, {&spare});
  EXPECT_EQ(runs().GetRun(run_id)->state(), v1::RUN_STATE_RUNNING);
  ASSERT_GE(spare.Count(v1::ControllerMessage::kAssignment), 1);
  EXPECT_EQ(spare.LastAssignment()->boot_index(), 0u);
  ASSERT_EQ(runs().GetRun(run_id)->abandoned_size(), 1);
}

}  // namespace
}  // namespace tlbfleet::core
