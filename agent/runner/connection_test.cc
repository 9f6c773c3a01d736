// The connection against the fake controller, with a delegate that records what it is told:
// the Hello, the replay before the first heartbeat, where each message goes, and redialling.
#include "agent/runner/connection.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/runner/fake_controller_for_test.h"
#include "common/temp_dir_for_test.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

using namespace std::chrono_literals;

class RecordingDelegate final : public ConnectionDelegate {
 public:
  absl::StatusOr<v1::Hello> MakeHello() override {
    ++hellos;
    v1::Hello hello;
    hello.mutable_host()->set_hostname("fake-host");
    hello.add_capabilities("workload:sh");
    return hello;
  }
  std::optional<v1::Heartbeat> MakeHeartbeat() override {
    if (stale_once.exchange(false)) return std::nullopt;
    v1::Heartbeat heartbeat;
    heartbeat.set_state(v1::AGENT_STATE_IDLE);
    return heartbeat;
  }
  void OnConnectionChanged() override { ++changes; }
  void OnAssignment(const v1::JobAssignment& assignment) override {
    std::lock_guard<std::mutex> lock(mu);
    commands.push_back("assignment " + assignment.lease_id());
  }
  void OnCancel(const v1::CancelJob& cancel) override {
    std::lock_guard<std::mutex> lock(mu);
    commands.push_back("cancel " + cancel.lease_id());
  }
  void OnReboot(const v1::RebootRequest& request) override {
    std::lock_guard<std::mutex> lock(mu);
    commands.push_back("reboot " + request.boot_id());
  }
  std::vector<std::string> Commands() {
    std::lock_guard<std::mutex> lock(mu);
    return commands;
  }

  std::atomic<int> hellos{0};
  std::atomic<int> changes{0};
  std::atomic<bool> stale_once{false};  // the next heartbeat finds the Hello stale

 private:
  std::mutex mu;
  std::vector<std::string> commands;
};

class ConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.started());
    absl::StatusOr<Spool> spool = Spool::Open(dir_.path());
    ASSERT_TRUE(spool.ok()) << spool.status();
    outbox_ = std::make_unique<Outbox>(*std::move(spool));
    options_.controller = server_.address();
    options_.agent_id = "0123456789abcdef0123456789abcdef";
    options_.initial_backoff_seconds = 0.05;
    options_.max_backoff_seconds = 0.2;
  }
  void TearDown() override { Stop(); }

  void Start() {
    connection_ = std::make_unique<Connection>(options_, *outbox_, delegate_);
    runner_ = std::thread([this] { connection_->Run(); });
  }
  void Stop() {
    if (connection_ == nullptr) return;
    connection_->Stop();
    runner_.join();
    connection_.reset();
  }
  // Waits for a Hello and welcomes it.
  std::optional<v1::AgentMessage> Handshake(size_t* cursor) {
    std::optional<v1::AgentMessage> hello = controller_.Await(IsHello, cursor);
    if (hello.has_value()) {
      EXPECT_TRUE(controller_.Send(WelcomeMessage()));
    }
    return hello;
  }

  TempDir dir_;
  FakeControllerServer server_;
  FakeController& controller_ = server_.controller();
  std::unique_ptr<Outbox> outbox_;
  ConnectionOptions options_;
  RecordingDelegate delegate_;
  std::unique_ptr<Connection> connection_;
  std::thread runner_;
};

TEST_F(ConnectionTest, TheHelloCarriesTheOutboxWhichIsReplayedBeforeTheFirstHeartbeat) {
  v1::SpooledJob record;
  record.mutable_assignment()->set_lease_id("lease-old");
  record.add_samples()->set_metric("m");
  record.mutable_complete()->set_lease_id("lease-old");
  outbox_->Keep(record);
  Start();
  size_t cursor = 0;
  std::optional<v1::AgentMessage> hello = Handshake(&cursor);
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->hello().protocol_version(), v1::PROTOCOL_VERSION_1);
  EXPECT_EQ(hello->hello().agent_id(), options_.agent_id);
  EXPECT_EQ(hello->hello().host().hostname(), "fake-host");
  ASSERT_EQ(hello->hello().spooled_size(), 1);
  EXPECT_EQ(hello->hello().spooled(0).lease_id(), "lease-old");
  ASSERT_TRUE(controller_.Await(IsBatchOf("lease-old"), &cursor));
  ASSERT_TRUE(controller_.Await(IsCompleteOf("lease-old"), &cursor));
  const size_t complete_at = cursor - 1;
  size_t heartbeat_at = 0;
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_IDLE), &heartbeat_at));
  EXPECT_LT(complete_at, heartbeat_at - 1);
  EXPECT_TRUE(connection_->connected());
  EXPECT_EQ(connection_->reconnects(), 0u);
}

TEST_F(ConnectionTest, CommandsGoToTheDelegateAndAcksToTheOutbox) {
  v1::SpooledJob record;
  record.mutable_assignment()->set_lease_id("lease-a");
  record.mutable_complete()->set_lease_id("lease-a");
  outbox_->Keep(record);
  Start();
  size_t cursor = 0;
  ASSERT_TRUE(Handshake(&cursor));
  ASSERT_TRUE(controller_.Await(IsCompleteOf("lease-a"), &cursor));
  v1::ControllerMessage assignment;
  assignment.mutable_assignment()->set_lease_id("lease-b");
  v1::ControllerMessage cancel;
  cancel.mutable_cancel()->set_lease_id("lease-b");
  v1::ControllerMessage reboot;
  reboot.mutable_reboot()->set_boot_id("boot-1");
  for (const v1::ControllerMessage& m :
       {assignment, cancel, reboot, CompletionAckMessage("lease-a")}) {
    ASSERT_TRUE(controller_.Send(m));
  }
  // The controller's messages are handled in order: once the spool is empty, all came.
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (outbox_->Pending().spooled > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);  // polling the spool: no event to wait on
  }
  EXPECT_EQ(outbox_->Pending().spooled, 0u);
  EXPECT_EQ(delegate_.Commands(),
            (std::vector<std::string>{"assignment lease-b", "cancel lease-b", "reboot boot-1"}));
}

TEST_F(ConnectionTest, AStaleHelloOrABrokenStreamIsFollowedByAFreshHello) {
  Start();
  size_t cursor = 0;
  ASSERT_TRUE(Handshake(&cursor));
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_IDLE), &cursor));
  delegate_.stale_once = true;
  ASSERT_TRUE(Handshake(&cursor)) << "no second Hello after a stale one";
  controller_.DropStream();
  ASSERT_TRUE(Handshake(&cursor)) << "no Hello after the stream broke";
  EXPECT_GE(connection_->reconnects(), 2u);
  EXPECT_GE(delegate_.hellos, 3);
}

TEST_F(ConnectionTest, AControllerThatNeverWelcomesIsDroppedAndRedialled) {
  options_.welcome_timeout_seconds = 1;
  Start();
  size_t cursor = 0;
  ASSERT_TRUE(controller_.Await(IsHello, &cursor));
  ASSERT_TRUE(controller_.Await(IsHello, &cursor)) << "the silent stream was kept";
  EXPECT_FALSE(connection_->connected());
}

TEST_F(ConnectionTest, StopEndsRunPromptlyWhileTheControllerIsDown) {
  server_.Shutdown();
  Start();
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (connection_->reconnects() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);  // polling the attempt counter: no event to wait on
  }
  EXPECT_GE(connection_->reconnects(), 2u);
  auto start = std::chrono::steady_clock::now();
  Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_GE(delegate_.changes, 2) << "each attempt is announced";
}

}  // namespace
}  // namespace tlbfleet::agent
