// The lost-host watch's rule: a silent slot host is waited for, failed or restarted per the
// run's policy, counted from its last message, whatever the order of stream drop and lease
// expiry.
#include "controller/core/lost_hosts.h"

#include <gtest/gtest.h>

#include "controller/scheduler/run_spec.h"

namespace tlbfleet::core {
namespace {

using Kind = LostHostWatch::Action::Kind;

store::ActiveRun RunOf(const std::string& id, const std::string& policy_yaml, bool work = true) {
  absl::StatusOr<v1::RunSpec> spec = scheduler::ParseRunSpec(
      "name: r\nbenchmark: pipetest\narms: [{name: a}]\n" + policy_yaml, "r.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  store::ActiveRun run;
  run.run_id = id;
  run.spec = *spec;
  run.slot_of["agent-1"] = 0;
  run.bound_slots.insert(0);
  run.holders[0] = {"agent-1", "machine-1", "vm1"};
  if (work) run.slots_with_work.insert(0);
  return run;
}

// Presence as the controller would report it.
struct Fleet {
  bool present = true;
  int64_t last_heard_ms = 0;
  bool rebooting = false;
  LostHostWatch::PresenceOf Fn() const {
    return [this](const store::ActiveRun::Holder&) {
      LostHostWatch::Presence p;
      p.present = present;
      p.silent_since_ms = last_heard_ms;
      p.rebooting = rebooting;
      return p;
    };
  }
};

std::vector<Kind> Kinds(const std::vector<LostHostWatch::Action>& actions) {
  std::vector<Kind> out;
  for (const auto& a : actions) out.push_back(a.kind);
  return out;
}

TEST(LostHostWatchTest, RestartsTheSlotOnceItsHostHasBeenSilentForTheBound) {
  LostHostWatch watch;
  Fleet fleet;
  const std::vector<store::ActiveRun> runs = {
      RunOf("7", "on_host_lost: {action: restart, after: 10m}\n")};
  EXPECT_TRUE(watch.Check(runs, fleet.Fn(), 1'000).empty());
  fleet.present = false;
  fleet.last_heard_ms = 5'000;
  std::vector<LostHostWatch::Action> a = watch.Check(runs, fleet.Fn(), 40'000);
  ASSERT_EQ(Kinds(a), std::vector<Kind>{Kind::kSilent});
  EXPECT_NE(a[0].message.find("vm1 (agent agent-1"), std::string::npos) << a[0].message;
  EXPECT_EQ(watch.RunsWaiting(), 1u);
  std::vector<v1::LostHost> waiting = watch.WaitingFor("7", 5'000 + 5 * 60'000);
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_EQ(waiting[0].hostname(), "vm1");
  EXPECT_EQ(waiting[0].silent_since_unix_ms(), 5'000);
  EXPECT_NE(waiting[0].message().find("5 min of 10 min, then restart"), std::string::npos)
      << waiting[0].message();
  // Just before the bound nothing happens; at the bound it restarts, once.
  EXPECT_TRUE(watch.Check(runs, fleet.Fn(), 5'000 + 600'000 - 1).empty());
  a = watch.Check(runs, fleet.Fn(), 5'000 + 600'000);
  ASSERT_EQ(Kinds(a), std::vector<Kind>{Kind::kRestart});
  EXPECT_EQ(a[0].slot, 0);
  EXPECT_EQ(a[0].holder.agent_id, "agent-1");
  EXPECT_TRUE(watch.Check(runs, fleet.Fn(), 5'000 + 700'000).empty());
  // The restart frees the slot: nothing of it is watched any more.
  store::ActiveRun restarted = runs[0];
  restarted.holders.clear();
  EXPECT_TRUE(watch.Check({restarted}, fleet.Fn(), 5'000 + 800'000).empty());
  EXPECT_EQ(watch.RunsWaiting(), 0u);
}

TEST(LostHostWatchTest, FailFailsTheRunAtTheBoundAndWaitNeverActs) {
  LostHostWatch watch;
  Fleet fleet;
  fleet.present = false;
  const std::vector<store::ActiveRun> runs = {
      RunOf("1", "on_host_lost: {action: fail, after: 60}\n"),
      RunOf("2", "on_host_lost: {action: wait}\n")};
  EXPECT_EQ(Kinds(watch.Check(runs, fleet.Fn(), 1'000)),
            (std::vector<Kind>{Kind::kSilent, Kind::kSilent}));
  std::vector<LostHostWatch::Action> a = watch.Check(runs, fleet.Fn(), 60'000);
  ASSERT_EQ(Kinds(a), std::vector<Kind>{Kind::kFail});
  EXPECT_EQ(a[0].run_id, "1");
  EXPECT_NE(a[0].message.find("was lost: silent since"), std::string::npos) << a[0].message;
  EXPECT_TRUE(watch.Check(runs, fleet.Fn(), 7LL * 24 * 3600 * 1000).empty());
  std::vector<v1::LostHost> waiting = watch.WaitingFor("2", 30 * 60'000);
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_EQ(waiting[0].action(), "wait");
  EXPECT_NE(waiting[0].message().find("waiting for vm1 (agent agent-1), silent since"),
            std::string::npos)
      << waiting[0].message();
}

TEST(LostHostWatchTest, AHostThatComesBackBeforeTheBoundKeepsItsSlot) {
  LostHostWatch watch;
  Fleet fleet;
  fleet.present = false;
  const std::vector<store::ActiveRun> runs = {
      RunOf("3", "on_host_lost: {action: restart, after: 60}\n")};
  ASSERT_EQ(Kinds(watch.Check(runs, fleet.Fn(), 1'000)), std::vector<Kind>{Kind::kSilent});
  fleet.present = true;
  std::vector<LostHostWatch::Action> a = watch.Check(runs, fleet.Fn(), 50'000);
  ASSERT_EQ(Kinds(a), std::vector<Kind>{Kind::kReturned});
  EXPECT_NE(a[0].message.find("is back after"), std::string::npos);
  // Silent again later: a new episode, counted from the new last message.
  fleet.present = false;
  fleet.last_heard_ms = 100'000;
  EXPECT_EQ(Kinds(watch.Check(runs, fleet.Fn(), 110'000)), std::vector<Kind>{Kind::kSilent});
  EXPECT_TRUE(watch.Check(runs, fleet.Fn(), 159'999).empty());
  EXPECT_EQ(Kinds(watch.Check(runs, fleet.Fn(), 160'000)), std::vector<Kind>{Kind::kRestart});
}

TEST(LostHostWatchTest, SilenceCountsFromTheLastMessageWhicheverWayTheStreamEnded) {
  // The same host, seen once with its stream still open and silent (lease expired first) and
  // once disconnected (keepalive first): the controller reports the same last message either
  // way, and the decision is the same.
  for (int order = 0; order < 2; ++order) {
    LostHostWatch watch;
    Fleet fleet;
    fleet.present = false;
    fleet.last_heard_ms = 10'000;
    const std::vector<store::ActiveRun> runs = {
        RunOf("4", "on_host_lost: {action: fail, after: 120}\n")};
    EXPECT_EQ(Kinds(watch.Check(runs, fleet.Fn(), order == 0 ? 75'000 : 35'000)),
              std::vector<Kind>{Kind::kSilent});
    EXPECT_TRUE(watch.Check(runs, fleet.Fn(), 129'999).empty());
    EXPECT_EQ(Kinds(watch.Check(runs, fleet.Fn(), 130'000)), std::vector<Kind>{Kind::kFail});
  }
}

TEST(LostHostWatchTest, ARebootingHostIsNotLostUntilItsRebootIsOverdue) {
  LostHostWatch watch;
  Fleet fleet;
  fleet.present = false;
  fleet.rebooting = true;
  const std::vector<store::ActiveRun> runs = {
      RunOf("5", "on_host_lost: {action: restart, after: 60}\n")};
  ASSERT_EQ(Kinds(watch.Check(runs, fleet.Fn(), 1'000)), std::vector<Kind>{Kind::kSilent});
  EXPECT_TRUE(watch.Check(runs, fleet.Fn(), 600'000).empty());
  ASSERT_EQ(watch.WaitingFor("5", 600'000).size(), 1u);
  EXPECT_TRUE(watch.WaitingFor("5", 600'000)[0].rebooting());
  // The reboot coordinator gives up on it: lost at once.
  fleet.rebooting = false;
  watch.MarkLost("agent-1", "did not come back within 900 s of the reboot request");
  std::vector<LostHostWatch::Action> a = watch.Check(runs, fleet.Fn(), 601'000);
  ASSERT_EQ(Kinds(a), std::vector<Kind>{Kind::kRestart});
  EXPECT_NE(a[0].message.find("did not come back within 900 s"), std::string::npos);
}

TEST(LostHostWatchTest, ASlotWithNothingQueuedNeedsNobody) {
  LostHostWatch watch;
  Fleet fleet;
  fleet.present = false;
  EXPECT_TRUE(watch.Check({RunOf("6", "", /*work=*/false)}, fleet.Fn(), 10'000'000).empty());
  EXPECT_EQ(watch.RunsWaiting(), 0u);
}

TEST(LostHostWatchTest, AFailedActionIsAskedForAgain) {
  LostHostWatch watch;
  Fleet fleet;
  fleet.present = false;
  const std::vector<store::ActiveRun> runs = {
      RunOf("8", "on_host_lost: {action: restart, after: 1}\n")};
  watch.Check(runs, fleet.Fn(), 0);
  ASSERT_EQ(Kinds(watch.Check(runs, fleet.Fn(), 2'000)), std::vector<Kind>{Kind::kRestart});
  EXPECT_TRUE(watch.Check(runs, fleet.Fn(), 3'000).empty());
  watch.ActionFailed("8", 0);
  EXPECT_EQ(Kinds(watch.Check(runs, fleet.Fn(), 4'000)), std::vector<Kind>{Kind::kRestart});
}

TEST(LostHostWatchTest, TheDefaultPolicyFollowsTheDesign) {
  LostHostWatch watch;
  Fleet fleet;
  fleet.present = false;
  std::vector<LostHostWatch::Action> a = watch.Check({RunOf("9", "")}, fleet.Fn(), 0);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].policy.action(), "restart");
  EXPECT_EQ(a[0].policy.after_seconds(), 1800u);
  EXPECT_TRUE(watch.Check({RunOf("9", "")}, fleet.Fn(), 1'800'000 - 1).empty());
  EXPECT_EQ(Kinds(watch.Check({RunOf("9", "")}, fleet.Fn(), 1'800'000)),
            std::vector<Kind>{Kind::kRestart});
}

}  // namespace
}  // namespace tlbfleet::core
