// The adaptive driver when its decision cannot be stored: the write is retried with backoff,
// without deciding again, and the run fails after AdaptiveDriver::kMaxWriteFailures.

#include "controller/core/adaptive_driver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "controller/core/controller_fixture_for_test.h"
#include "controller/core/fake_channel_for_test.h"

namespace tlbfleet::core {
namespace {

using ::testing::HasSubstr;

class AdaptiveDriverTest : public ControllerFixture {
 protected:
  void SetUp() override {
    path_ = Db();
    ControllerFixture::SetUp();
  }
  // Another connection to the same file, as an operator's sqlite3 shell would be.
  void Exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  }
  // Runs the run's first round to the point where it awaits a decision that extends it.
  std::string RunFirstRound(FakeChannel& channel) {
    v1::Hello hello;
    hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
    hello.set_agent_id("a1");
    hello.mutable_host()->set_hostname("h1");
    EXPECT_TRUE(agents().Register(&channel, hello).ok());
    auto submitted = runs().Submit(
        "name: ad\nbenchmark: pipetest\nparams: {loops: 1000}\n"
        "iterations: {min: 2, max: 5, target_ci: 0.1%}\n"
        "arms: [{name: a}, {name: b, params: {loops: 2000}}]\n",
        "ad.yaml");
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    v1::AgentMessage idle;
    idle.mutable_heartbeat()->set_state(v1::AGENT_STATE_IDLE);
    agents().OnMessage(&channel, idle);
    // Noisy and overlapping in both arms: the comparison cannot settle, so the run grows.
    for (int done = 0; channel.Count(v1::ControllerMessage::kAssignment) > done; ++done) {
      const v1::JobAssignment a = *channel.LastAssignment();
      v1::AgentMessage batch;
      batch.mutable_samples()->set_lease_id(a.lease_id());
      v1::Sample* s = batch.mutable_samples()->add_samples();
      s->set_metric("usecs_per_op");
      s->set_value(done % 4 < 2 ? 4 : 6);
      agents().OnMessage(&channel, batch);
      v1::AgentMessage complete;
      complete.mutable_complete()->set_lease_id(a.lease_id());
      complete.mutable_complete()->set_status(v1::JOB_STATUS_SUCCEEDED);
      complete.mutable_complete()->set_sample_count(1);
      agents().OnMessage(&channel, complete);
    }
    return submitted.ok() ? submitted->run_id() : "";
  }

  std::string path_;
};

TEST_F(AdaptiveDriverTest, AFailedWriteIsRetriedWithBackoffThenFailsTheRun) {
  FakeChannel channel;
  const std::string run = RunFirstRound(channel);
  ASSERT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 4);
  // Every extension is refused, as a full disk or a damaged file would.
  Exec(
      "CREATE TRIGGER refuse_rounds BEFORE UPDATE OF adaptive_rounds ON runs"
      " BEGIN SELECT RAISE(ABORT, 'injected: disk full'); END;");

  controller_->DecideAdaptiveRunsForTest();  // attempt 1
  // Without time passing, no pass writes again: the run would fail after five passes.
  for (int pass = 0; pass < 20; ++pass) controller_->DecideAdaptiveRunsForTest();
  EXPECT_EQ(runs().GetRun(run)->state(), v1::RUN_STATE_RUNNING);
  // Backoff 1 s, 2 s, 4 s, 8 s: attempts 2 to 5.
  for (int64_t wait_ms : {1000, 2000, 4000}) {
    AdvanceMs(wait_ms);
    controller_->DecideAdaptiveRunsForTest();
    EXPECT_EQ(runs().GetRun(run)->state(), v1::RUN_STATE_RUNNING) << wait_ms;
  }
  AdvanceMs(7999);
  controller_->DecideAdaptiveRunsForTest();
  EXPECT_EQ(runs().GetRun(run)->state(), v1::RUN_STATE_RUNNING);
  AdvanceMs(1);
  controller_->DecideAdaptiveRunsForTest();
  absl::StatusOr<v1::Run> failed = runs().GetRun(run);
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->state(), v1::RUN_STATE_FAILED);
  EXPECT_THAT(failed->error(), HasSubstr("could not be stored after 5 attempts"));
  EXPECT_THAT(failed->error(), HasSubstr("injected: disk full"));
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 4);
}

TEST_F(AdaptiveDriverTest, AWriteThatRecoversExtendsTheRunAndDispatchesItsNewJobs) {
  FakeChannel channel;
  const std::string run = RunFirstRound(channel);
  Exec(
      "CREATE TRIGGER refuse_rounds BEFORE UPDATE OF adaptive_rounds ON runs"
      " BEGIN SELECT RAISE(ABORT, 'injected: busy'); END;");
  controller_->DecideAdaptiveRunsForTest();
  Exec("DROP TRIGGER refuse_rounds;");
  AdvanceMs(1000);
  controller_->DecideAdaptiveRunsForTest();
  absl::StatusOr<v1::Run> grown = runs().GetRun(run);
  ASSERT_TRUE(grown.ok());
  EXPECT_EQ(grown->state(), v1::RUN_STATE_RUNNING);
  EXPECT_EQ(grown->adaptive_rounds(), 1u);
  EXPECT_GT(grown->iterations_per_boot(), 2u);
  EXPECT_EQ(channel.Count(v1::ControllerMessage::kAssignment), 5);  // the idle host got work
}

}  // namespace
}  // namespace tlbfleet::core
