// The controller with `server: peer` runs: which host takes the job, which peer it is sent
// to, and that the peer takes no job of its own while it serves.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "controller/core/controller_fixture_for_test.h"

namespace tlbfleet::core {
namespace {

class FakeChannel : public AgentChannel {
 public:
  void Send(const v1::ControllerMessage& message) override { sent.push_back(message); }
  std::string Peer() const override { return "fake"; }
  void Close(const absl::Status&) override {}
  int Assignments() const {
    int n = 0;
    for (const auto& m : sent) n += m.has_assignment() ? 1 : 0;
    return n;
  }
  const v1::JobAssignment* LastAssignment() const {
    for (auto it = sent.rbegin(); it != sent.rend(); ++it) {
      if (it->has_assignment()) return &it->assignment();
    }
    return nullptr;
  }
  std::vector<v1::ControllerMessage> sent;
};

// Two iterations on the host labelled role=client, dialling a peer.
constexpr char kPeerSpec[] =
    "name: p\nbenchmark: netperf\nparams: {test: tcp_rr, seconds: 1, server: peer}\n"
    "iterations: 2\narms: [{name: a}]\nhosts: {labels: {role: client}}\n";
// Any host; no peer.
constexpr char kPlainSpec[] = "name: e\nbenchmark: ebizzy\narms: [{name: a}]\n";

class ControllerPeerTest : public ControllerFixture {
 protected:
  void SetUp() override { ControllerFixture::SetUp(); }

  void Connect(FakeChannel& channel, const std::string& id, const std::string& role,
               const std::string& netserver = "") {
    v1::Hello hello;
    hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
    hello.set_agent_id(id);
    hello.mutable_host()->set_hostname("host-" + id);
    (*hello.mutable_host()->mutable_labels())["role"] = role;
    hello.mutable_host()->set_netserver(netserver);
    ASSERT_TRUE(agents().Register(&channel, hello).ok());
    v1::AgentMessage idle;
    idle.mutable_heartbeat()->set_state(v1::AGENT_STATE_IDLE);
    agents().OnMessage(&channel, idle);
  }

  // One sample, then success: a job without samples would fail its run.
  void Complete(FakeChannel& channel, const std::string& lease_id) {
    v1::AgentMessage batch;
    batch.mutable_samples()->set_lease_id(lease_id);
    v1::Sample* s = batch.mutable_samples()->add_samples();
    s->set_metric("trans_per_sec");
    s->set_value(5);
    agents().OnMessage(&channel, batch);
    v1::AgentMessage done;
    done.mutable_complete()->set_lease_id(lease_id);
    done.mutable_complete()->set_status(v1::JOB_STATUS_SUCCEEDED);
    done.mutable_complete()->set_sample_count(1);
    agents().OnMessage(&channel, done);
  }
};

TEST_F(ControllerPeerTest, WithoutAPeerTheRunWaitsAndTheHostTakesOtherWork) {
  FakeChannel client;
  Connect(client, "a", "client");
  const std::string peer_run = Submit(kPeerSpec);
  controller_->Tick();
  EXPECT_EQ(client.Assignments(), 0);
  EXPECT_EQ(runs().GetRun(peer_run)->state(), v1::RUN_STATE_QUEUED);
  // The host is not held up by the waiting run.
  Submit(kPlainSpec);
  ASSERT_EQ(client.Assignments(), 1);
  EXPECT_EQ(client.LastAssignment()->benchmark(), "ebizzy");
  EXPECT_EQ(runs().GetRun(peer_run)->state(), v1::RUN_STATE_QUEUED);
}

TEST_F(ControllerPeerTest, TheJobDialsThePeerWhichServesItAndThenGetsWorkAgain) {
  FakeChannel client, peer;
  Connect(client, "a", "client");
  Connect(peer, "b", "server", "127.0.0.2:12865");
  Submit(kPeerSpec);
  ASSERT_EQ(client.Assignments(), 1);
  const v1::JobAssignment first = *client.LastAssignment();
  EXPECT_EQ(first.params().at("server"), "127.0.0.2");
  EXPECT_EQ(first.params().at("port"), "12865");
  EXPECT_EQ(first.peer_host(), "host-b");

  // While b serves, it takes nothing, not even a run it matches.
  Submit(kPlainSpec);
  controller_->Tick();
  EXPECT_EQ(peer.Assignments(), 0);

  // The job ends: b is released at once and takes the waiting ebizzy run.
  Complete(client, first.lease_id());
  ASSERT_EQ(peer.Assignments(), 1);
  EXPECT_EQ(peer.LastAssignment()->benchmark(), "ebizzy");
  EXPECT_EQ(peer.LastAssignment()->peer_host(), "");
  // a's second iteration needs b, which is busy with its own job: it waits for b.
  EXPECT_EQ(client.Assignments(), 1);
  Complete(peer, peer.LastAssignment()->lease_id());
  controller_->Tick();
  ASSERT_EQ(client.Assignments(), 2);
  EXPECT_EQ(client.LastAssignment()->peer_host(), "host-b");
  EXPECT_NE(client.LastAssignment()->lease_id(), first.lease_id());
  EXPECT_EQ(runs().GetRun(first.run_id())->state(), v1::RUN_STATE_RUNNING);
}

TEST_F(ControllerPeerTest, AnExpiredLeaseReleasesThePeer) {
  FakeChannel client, peer;
  Connect(client, "a", "client");
  Connect(peer, "b", "server", "127.0.0.2:12865");
  Submit(kPeerSpec);
  ASSERT_EQ(client.Assignments(), 1);
  Submit(kPlainSpec);
  EXPECT_EQ(peer.Assignments(), 0);
  AdvanceMs(ControllerOptions{}.lease_ms + 1);
  controller_->Tick();
  ASSERT_EQ(peer.Assignments(), 1);
  EXPECT_EQ(peer.LastAssignment()->benchmark(), "ebizzy");
}

TEST_F(ControllerPeerTest, AClientThatDisconnectsReleasesThePeer) {
  FakeChannel client, peer;
  Connect(client, "a", "client");
  Connect(peer, "b", "server", "127.0.0.2:12865");
  Submit(kPeerSpec);
  ASSERT_EQ(client.Assignments(), 1);
  Submit(kPlainSpec);
  EXPECT_EQ(peer.Assignments(), 0);
  agents().Unregister(&client);
  ASSERT_EQ(peer.Assignments(), 1);
  EXPECT_EQ(peer.LastAssignment()->benchmark(), "ebizzy");
}

TEST_F(ControllerPeerTest, APeerIsNeverItsOwnClient) {
  FakeChannel both;
  Connect(both, "a", "client", "127.0.0.2:12865");
  Submit(kPeerSpec);
  controller_->Tick();
  EXPECT_EQ(both.Assignments(), 0);
}

}  // namespace
}  // namespace tlbfleet::core
