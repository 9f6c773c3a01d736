// The reboot flow with real commands that do not reboot anything ("true", "false") and an
// outbox in a temp directory.
#include "agent/runner/reboot_flow.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/temp_dir_for_test.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

using namespace std::chrono_literals;
using ::testing::StartsWith;

// The notes the flow sends to the controller.
class Notes {
 public:
  RebootFlow::NoteSender Sender() {
    return [this](const std::string& text) {
      std::lock_guard<std::mutex> lock(mu_);
      notes_.push_back(text);
      cv_.notify_all();
    };
  }
  // The first note, once one has come within `timeout`.
  std::optional<std::string> Await(std::chrono::milliseconds timeout = 20s) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [this] { return !notes_.empty(); })) return std::nullopt;
    return notes_.front();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> notes_;
};

v1::RebootRequest Request(const std::string& boot_id = "boot-1", const std::string& entry = "") {
  v1::RebootRequest request;
  request.set_reason("next boot of run 12");
  request.set_boot_id(boot_id);
  request.set_boot_entry(entry);
  return request;
}

class RebootFlowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Spool> spool = Spool::Open(dir_.path());
    ASSERT_TRUE(spool.ok()) << spool.status();
    outbox_ = std::make_unique<Outbox>(*std::move(spool));
  }
  std::unique_ptr<RebootFlow> Flow(const std::string& command, double grace_seconds = 60) {
    RebootOptions options;
    options.command = command;
    options.grace_seconds = grace_seconds;
    return std::make_unique<RebootFlow>(options, boot_entries_, *outbox_, notes_.Sender());
  }
  // Polls rebooting() (the flow has no event for its end) until it is false.
  static bool EndsWithin(const RebootFlow& flow, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (flow.rebooting()) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

  TempDir dir_;
  BootEntries boot_entries_;  // none
  std::unique_ptr<Outbox> outbox_;
  Notes notes_;
};

TEST_F(RebootFlowTest, AnAgentWithoutARebootCommandSaysSo) {
  std::unique_ptr<RebootFlow> flow = Flow("");
  flow->OnRequest(Request(), "", "boot-1");
  EXPECT_FALSE(flow->rebooting());
  EXPECT_EQ(notes_.Await(), "this agent has no --reboot-command");
}

TEST_F(RebootFlowTest, AnUnknownBootEntryIsRefusedNamingIt) {
  std::unique_ptr<RebootFlow> flow = Flow("true");
  flow->OnRequest(Request("boot-1", "lab-6.12"), "", "boot-1");
  EXPECT_FALSE(flow->rebooting());
  EXPECT_THAT(notes_.Await().value_or(""), StartsWith("boot entry 'lab-6.12' is not in"));
}

TEST_F(RebootFlowTest, ARequestWhileAJobRunsOrForAnotherBootIsIgnored) {
  std::unique_ptr<RebootFlow> flow = Flow("false");
  flow->OnRequest(Request(), "lease-7", "boot-1");
  EXPECT_FALSE(flow->rebooting());
  flow->OnRequest(Request("boot-0"), "", "boot-1");  // already rebooted since
  EXPECT_FALSE(flow->rebooting());
  EXPECT_FALSE(notes_.Await(100ms).has_value());
}

TEST_F(RebootFlowTest, AFailedCommandEndsTheRebootWithANote) {
  std::unique_ptr<RebootFlow> flow = Flow("exit 3");
  flow->OnRequest(Request(), "", "boot-1");
  EXPECT_THAT(notes_.Await().value_or(""), StartsWith("reboot failed: "));
  EXPECT_TRUE(EndsWithin(*flow, 10s));
}

TEST_F(RebootFlowTest, AHostStillUpAfterTheGracePeriodIsAFailedReboot) {
  std::unique_ptr<RebootFlow> flow = Flow("true", 0.2);
  flow->OnRequest(Request(), "", "boot-1");
  EXPECT_TRUE(flow->rebooting());
  EXPECT_EQ(notes_.Await().value_or(""),
            "reboot failed: the reboot command succeeded but the host was still up 0.2 s later");
  EXPECT_TRUE(EndsWithin(*flow, 10s));
}

TEST_F(RebootFlowTest, TheRebootWaitsUntilTheControllerHasAckedEveryResult) {
  v1::SpooledJob record;
  record.mutable_assignment()->set_lease_id("lease-a");
  record.mutable_complete()->set_lease_id("lease-a");
  outbox_->Keep(record);
  std::unique_ptr<RebootFlow> flow = Flow("exit 1");
  flow->OnRequest(Request(), "", "boot-1");
  EXPECT_FALSE(notes_.Await(500ms).has_value()) << "the command ran with a result unacked";
  v1::CompletionAck ack;
  ack.set_lease_id("lease-a");
  outbox_->OnCompletionAck(ack);
  EXPECT_THAT(notes_.Await().value_or(""), StartsWith("reboot failed: "));
}

TEST_F(RebootFlowTest, StopGivesUpARebootThatHasNotStarted) {
  v1::SpooledJob record;
  record.mutable_assignment()->set_lease_id("lease-a");
  outbox_->Keep(record);
  std::unique_ptr<RebootFlow> flow = Flow("exit 1");
  flow->OnRequest(Request(), "", "boot-1");
  EXPECT_TRUE(flow->rebooting());
  flow->Stop();
  EXPECT_TRUE(EndsWithin(*flow, 5s));
  flow.reset();  // joins the flow's thread
  EXPECT_FALSE(notes_.Await(0ms).has_value()) << "a stopping agent runs no reboot command";
}

}  // namespace
}  // namespace tlbfleet::agent
