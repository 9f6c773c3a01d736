// The core's small units on their own: sessions and the reboot coordinator.

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <set>

#include "controller/core/fake_channel_for_test.h"
#include "controller/core/reboots.h"
#include "controller/core/sessions.h"

namespace tlbfleet::core {
namespace {

v1::HostInfo OnBoot(const std::string& boot) {
  v1::HostInfo host;
  host.set_boot_id(boot);
  return host;
}

TEST(SessionsTest, OneLiveStreamPerAgentFoundByChannelAndById) {
  Sessions sessions;
  FakeChannel a("a"), b("b"), c("c");
  ASSERT_TRUE(sessions.Add(&a, 1, "agent", OnBoot("1"), "p").ok());
  EXPECT_EQ(sessions.Add(&b, 2, "agent", OnBoot("1"), "p").status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(sessions.ByChannel(&b), nullptr);
  ASSERT_NE(sessions.ByChannel(&a), nullptr);
  EXPECT_EQ(sessions.ByChannel(&a)->principal, "p");

  // A stream from a newer boot replaces the old one, whose channel then finds nothing.
  absl::StatusOr<Sessions::Added> added = sessions.Add(&c, 3, "agent", OnBoot("2"), "p");
  ASSERT_TRUE(added.ok());
  ASSERT_TRUE(added->replaced.has_value());
  EXPECT_EQ(added->replaced->channel, &a);
  EXPECT_EQ(sessions.ByChannel(&a), nullptr);
  EXPECT_FALSE(sessions.Remove(&a).has_value());
  EXPECT_EQ(sessions.Find("agent")->channel, &c);
  EXPECT_EQ(sessions.FindStream("agent", 1), nullptr);  // an answer about the old stream
  EXPECT_EQ(sessions.FindStream("agent", 3), sessions.Find("agent"));
  EXPECT_EQ(sessions.size(), 1u);
  ASSERT_TRUE(sessions.Remove(&c).has_value());
  EXPECT_EQ(sessions.Find("agent"), nullptr);
}

TEST(RebootCoordinatorTest, ARebootIsRecognisedByANewBootAndTwoMissesFailTheRun) {
  RebootCoordinator reboots(/*timeout_ms=*/1000, /*return_timeout_ms=*/60000);
  EXPECT_EQ(reboots.OnRegister("a", "b1").kind, RebootCoordinator::Return::Kind::kNotAsked);
  ASSERT_TRUE(reboots.Request("a", "host", "b1", "7", 0).ask);
  EXPECT_TRUE(reboots.Pending("a"));
  reboots.OnDisconnect("a");
  EXPECT_FALSE(reboots.Pending("a"));
  EXPECT_TRUE(reboots.Asked("a"));

  // Back on the same boot, twice: the second request fails the run.
  EXPECT_EQ(reboots.OnRegister("a", "b1").kind, RebootCoordinator::Return::Kind::kSameBoot);
  ASSERT_TRUE(reboots.Request("a", "host", "b1", "7", 0).ask);
  reboots.OnDisconnect("a");
  reboots.OnRegister("a", "b1");
  RebootCoordinator::Decision third = reboots.Request("a", "host", "b1", "7", 0);
  EXPECT_FALSE(third.ask);
  EXPECT_NE(third.run_error.find("did not reboot"), std::string::npos);

  // A request answered by a new boot.
  ASSERT_TRUE(reboots.Request("a", "host", "b1", "8", 0).ask);
  RebootCoordinator::Return back = reboots.OnRegister("a", "b2");
  EXPECT_EQ(back.kind, RebootCoordinator::Return::Kind::kRebooted);
  EXPECT_EQ(back.run_id, "8");
  EXPECT_EQ(back.from_boot_id, "b1");
  EXPECT_FALSE(reboots.Asked("a"));
}

TEST(SessionsTest, IdleIndexesFollowTheSessions) {
  Sessions sessions;
  FakeChannel a("a"), b("b");
  v1::HostInfo server = OnBoot("1");
  server.set_netserver("127.0.0.1:12865");
  Session* sa = *&sessions.Add(&a, 1, "a", server, "")->session;
  Session* sb = *&sessions.Add(&b, 2, "b", OnBoot("1"), "")->session;
  EXPECT_TRUE(sa->serves_peers);
  EXPECT_FALSE(sb->serves_peers);
  sessions.SetIdle(*sa, true, 5);
  sessions.SetIdle(*sb, true, 6);
  EXPECT_EQ(sessions.idle_ids(), (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(sessions.idle_servers(), (std::set<std::string>{"a"}));
  EXPECT_EQ(sa->idle_since_ms, 5);
  sessions.SetIdle(*sa, false, 7);
  EXPECT_EQ(sessions.idle_ids(), (std::set<std::string>{"b"}));
  EXPECT_TRUE(sessions.idle_servers().empty());
  ASSERT_TRUE(sessions.Remove(&b).has_value());
  EXPECT_TRUE(sessions.idle_ids().empty());
}

// Where the host is: connected on `boot`, or (nullopt) away.
std::function<std::optional<std::string>(const std::string&)> On(std::optional<std::string> boot) {
  return [boot](const std::string&) { return boot; };
}

TEST(RebootCoordinatorTest, OverdueAndRefusedRequests) {
  RebootCoordinator reboots(/*timeout_ms=*/1000, /*return_timeout_ms=*/60000);
  ASSERT_TRUE(reboots.Request("a", "host", "b1", "7", 0).ask);
  EXPECT_TRUE(reboots.TakeOverdue(999, On("b1")).empty());
  std::vector<RebootCoordinator::Overdue> overdue = reboots.TakeOverdue(1000, On("b1"));
  ASSERT_EQ(overdue.size(), 1u);
  EXPECT_EQ(overdue[0].run_id, "7");
  EXPECT_EQ(overdue[0].kind, RebootCoordinator::Overdue::Kind::kStillUp);
  EXPECT_FALSE(reboots.Pending("a"));

  ASSERT_TRUE(reboots.Request("b", "host", "b1", "9", 0).ask);
  EXPECT_EQ(reboots.OnCannotReboot("b"), "9");
  EXPECT_EQ(reboots.OnCannotReboot("b"), std::nullopt);  // said once
  EXPECT_TRUE(reboots.TakeOverdue(5000, On("b1")).empty());
}

TEST(RebootCoordinatorTest, AHostThatNeverComesBackIsOverdueAfterTheReturnTimeout) {
  RebootCoordinator reboots(/*timeout_ms=*/1000, /*return_timeout_ms=*/60000);
  ASSERT_TRUE(reboots.Request("a", "host", "b1", "7", 0).ask);
  reboots.OnDisconnect("a");  // it went down, as asked
  EXPECT_TRUE(reboots.TakeOverdue(59'999, On(std::nullopt)).empty());
  EXPECT_TRUE(reboots.Asked("a"));
  std::vector<RebootCoordinator::Overdue> overdue = reboots.TakeOverdue(60'000, On(std::nullopt));
  ASSERT_EQ(overdue.size(), 1u);
  EXPECT_EQ(overdue[0].kind, RebootCoordinator::Overdue::Kind::kNotBack);
  EXPECT_EQ(overdue[0].boot_id, "b1");
  EXPECT_FALSE(reboots.Asked("a"));
}

TEST(RebootCoordinatorTest, RecordsSurviveARestartAndARebootingHostIsPendingAgain) {
  RebootCoordinator before(1000, 60000);
  ASSERT_TRUE(before.Request("a", "host", "b1", "7", 100).ask);
  std::optional<store::RebootRecord> saved = before.Get("a");
  ASSERT_TRUE(saved.has_value());
  EXPECT_EQ(saved->return_by_ms, 60100);

  RebootCoordinator after(1000, 60000);
  after.Restore({*saved});
  EXPECT_TRUE(after.Asked("a"));
  EXPECT_FALSE(after.Pending("a"));  // until its stream says so
  EXPECT_TRUE(after.OnRebooting("a"));
  EXPECT_TRUE(after.Pending("a"));
  EXPECT_FALSE(after.OnRebooting("nobody"));
  RebootCoordinator::Return back = after.OnRegister("a", "b2");
  EXPECT_EQ(back.kind, RebootCoordinator::Return::Kind::kRebooted);
  EXPECT_EQ(back.run_id, "7");
  EXPECT_FALSE(after.Get("a").has_value());
}

}  // namespace
}  // namespace tlbfleet::core
