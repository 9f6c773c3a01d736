#pragma once
// One fixture for the core's tests: a temporary directory, a real SQLite store with
// synchronous writes (a call's assignments and acks are sent within the call), a fake clock
// and the controller (controller_impl.h: the run service, the hub and their hooks), driven by
// hand: no thread is started, so a test ticks, recovers and delivers observer calls itself.
//
// A fixture that needs other options sets `options_` in its own SetUp before calling
// ControllerFixture::SetUp(). Restart() is a kill -9 and a start on the same database.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "common/clock.h"
#include "common/temp_dir_for_test.h"
#include "controller/core/controller_impl.h"
#include "controller/store/store.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::core {

class ControllerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = *store::Store::Open(Db(), {.writer_thread = false});
    controller_ = std::make_unique<ControllerImpl>(*store_, options_, clock_);
  }
  void TearDown() override {
    controller_.reset();
    store_.reset();
  }

  // A new controller on the same database, as after kill -9 and a start: what Start() would
  // restore is restored (RecoverForTest), without its threads.
  void Restart() {
    controller_.reset();
    controller_ = std::make_unique<ControllerImpl>(*store_, options_, clock_);
    controller_->RecoverForTest();
  }

  std::string Db() const { return dir_.File("fleet.db"); }
  int64_t NowMs() const { return clock_.NowMillis(); }
  void AdvanceMs(int64_t ms) { clock_.Advance(absl::Milliseconds(ms)); }

  RunService& runs() { return controller_->runs(); }
  AgentHub& agents() { return controller_->agents(); }

  // The run id of `yaml` submitted (a failed submit fails the test and returns "").
  std::string Submit(const std::string& yaml) {
    absl::StatusOr<v1::SubmitRunResponse> submitted = runs().Submit(yaml, "spec.yaml");
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    return submitted.ok() ? submitted->run_id() : "";
  }
  // The agent on `channel` says it is idle.
  void Idle(AgentChannel& channel) {
    v1::AgentMessage m;
    m.mutable_heartbeat()->set_state(v1::AGENT_STATE_IDLE);
    agents().OnMessage(&channel, m);
  }

  ControllerOptions options_;
  TempDir dir_{"tlbfleet-core"};
  FakeClock clock_{absl::FromUnixMillis(1'000'000)};
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<ControllerImpl> controller_;
};

}  // namespace tlbfleet::core
