#include "controller/api/controller.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

namespace tlbfleet::api {
namespace {

class FakeChannel : public AgentChannel {
 public:
  void Send(const v1::ControllerMessage& message) override { sent.push_back(message); }
  std::string Peer() const override { return "fake"; }
  int Count(v1::ControllerMessage::BodyCase body) const {
    int n = 0;
    for (const auto& m : sent) n += m.body_case() == body ? 1 : 0;
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

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-ctl-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    store_ = *store::Store::Open((dir_ / "fleet.db").string());
    controller_ =
        std::make_unique<Controller>(*store_, ControllerOptions{}, [this] { return now_ms_; });
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

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

  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Controller> controller_;
  int64_t now_ms_ = 1'000'000;
};

constexpr char kCeilingSpec[] =
    "name: c\nbenchmark: ebizzy\nparams: {seconds: 1}\narms:\n"
    "  - {name: low, ceiling: 1}\n  - {name: high, ceiling: 512}\n";

TEST_F(ControllerTest, CeilingRunFailsAtOnceWhenTheOnlyHostIsLockedDown) {
  FakeChannel channel;
  ASSERT_TRUE(controller_->Register(&channel, Hello("a1", /*ceiling_writable=*/false)).ok());
  controller_->OnMessage(&channel, Idle());
  auto submitted = controller_->Submit(kCeilingSpec, "c.yaml");
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  auto run = controller_->GetRun(submitted->run_id());
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->state(), v1::RUN_STATE_FAILED);
  EXPECT_NE(run->error().find("kernel lockdown (integrity)"), std::string::npos) << run->error();
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 0);
}

TEST_F(ControllerTest, CeilingRunGoesOnlyToTheHostThatCanWriteIt) {
  FakeChannel locked, open;
  ASSERT_TRUE(controller_->Register(&locked, Hello("locked", false)).ok());
  ASSERT_TRUE(controller_->Register(&open, Hello("open", true)).ok());
  controller_->OnMessage(&locked, Idle());
  auto submitted = controller_->Submit(kCeilingSpec, "c.yaml");
  ASSERT_TRUE(submitted.ok());
  EXPECT_EQ(controller_->GetRun(submitted->run_id())->state(), v1::RUN_STATE_QUEUED);
  controller_->OnMessage(&open, Idle());
  EXPECT_EQ(locked.Count(v1::ControllerMessage::kAssignment), 0);
  ASSERT_NE(open.LastAssignment(), nullptr);
  EXPECT_EQ(open.LastAssignment()->ceiling(), "1");
}

TEST_F(ControllerTest, RunWaitsForAHostWithTheSelectedLabel) {
  FakeChannel channel;
  ASSERT_TRUE(controller_->Register(&channel, Hello("a1", true, {{"rack", "b"}})).ok());
  controller_->OnMessage(&channel, Idle());
  auto submitted = controller_->Submit(
      "name: l\nbenchmark: ebizzy\narms: [{name: a}]\nhosts: {labels: {rack: a}}\n", "l.yaml");
  ASSERT_TRUE(submitted.ok());
  controller_->Tick();
  EXPECT_EQ(controller_->GetRun(submitted->run_id())->state(), v1::RUN_STATE_QUEUED);
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 0);
}

TEST_F(ControllerTest, OneJobAtATimeAndTheNextAfterCompletion) {
  FakeChannel channel;
  ASSERT_TRUE(controller_->Register(&channel, Hello("a1", true)).ok());
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kWelcome), 1);
  auto submitted = controller_->Submit(
      "name: two\nbenchmark: ebizzy\niterations: 2\narms: [{name: a}]\n", "two.yaml");
  ASSERT_TRUE(submitted.ok());
  // Not dispatched before the agent says it is idle (it may still be replaying its spool).
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 0);
  controller_->OnMessage(&channel, Idle());
  controller_->OnMessage(&channel, Idle());
  controller_->Tick();
  ASSERT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 1);
  const v1::JobAssignment first = *channel.LastAssignment();

  v1::AgentMessage batch;
  batch.mutable_samples()->set_lease_id(first.lease_id());
  v1::Sample* s = batch.mutable_samples()->add_samples();
  s->set_metric("records_per_sec");
  s->set_value(5);
  controller_->OnMessage(&channel, batch);
  v1::AgentMessage done;
  done.mutable_complete()->set_lease_id(first.lease_id());
  done.mutable_complete()->set_status(v1::JOB_STATUS_SUCCEEDED);
  done.mutable_complete()->set_sample_count(1);
  controller_->OnMessage(&channel, done);
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kSampleAck), 1);
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kCompletionAck), 1);
  ASSERT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 2);
  EXPECT_NE(channel.LastAssignment()->lease_id(), first.lease_id());
}

TEST_F(ControllerTest, ExpiredLeaseIsCancelledOnTheAgentAndRequeued) {
  FakeChannel channel;
  ASSERT_TRUE(controller_->Register(&channel, Hello("a1", true)).ok());
  auto submitted = controller_->Submit("name: e\nbenchmark: ebizzy\narms: [{name: a}]\n", "e.yaml");
  controller_->OnMessage(&channel, Idle());
  ASSERT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 1);
  now_ms_ += ControllerOptions{}.lease_ms + 1;
  controller_->Tick();
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kCancel), 1);
  auto run = controller_->GetRun(submitted->run_id());
  EXPECT_EQ(run->jobs().queued() + run->jobs().running(), 1u);
}

TEST_F(ControllerTest, RefusesOtherProtocolVersionsAndEmptyIds) {
  FakeChannel channel;
  v1::Hello hello = Hello("a1", true);
  hello.set_protocol_version(v1::PROTOCOL_VERSION_UNSPECIFIED);
  EXPECT_EQ(controller_->Register(&channel, hello).code(), absl::StatusCode::kFailedPrecondition);
  hello = Hello("", true);
  EXPECT_EQ(controller_->Register(&channel, hello).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ControllerTest, CompareRefusesAnUnknownBaselineNamingTheField) {
  auto submitted =
      controller_->Submit("name: b\nbenchmark: ebizzy\narms: [{name: a}, {name: b}]\n", "b.yaml");
  ASSERT_TRUE(submitted.ok());
  auto compare = controller_->Compare(submitted->run_id(), "zzz");
  ASSERT_FALSE(compare.ok());
  EXPECT_NE(compare.status().message().find("baseline"), std::string::npos);
}

}  // namespace
}  // namespace tlbfleet::api
