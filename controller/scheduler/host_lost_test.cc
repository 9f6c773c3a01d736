// on_host_lost in run specs: parsing, the default per design, and bad input named by field.
#include "controller/scheduler/host_lost.h"

#include <gtest/gtest.h>

#include "controller/scheduler/run_spec.h"

namespace tlbfleet::scheduler {
namespace {

constexpr char kBase[] = "name: r\nbenchmark: pipetest\narms: [{name: a}, {name: b}]\n";

absl::StatusOr<v1::RunSpec> Parse(const std::string& extra) {
  return ParseRunSpec(std::string(kBase) + extra, "r.yaml");
}

TEST(HostLostPolicyTest, ParsesActionAndADurationBound) {
  absl::StatusOr<v1::RunSpec> spec = Parse("on_host_lost: {action: wait, after: 1h30m}\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->on_host_lost().action(), "wait");
  EXPECT_EQ(spec->on_host_lost().after_seconds(), 5400u);
  spec = Parse("on_host_lost: {action: fail, after: 90}\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->on_host_lost().after_seconds(), 90u);
  spec = Parse("on_host_lost: {action: restart}\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(EffectiveHostLostPolicy(*spec).after_seconds(), kDefaultHostLostAfterSeconds);
}

TEST(HostLostPolicyTest, TheDefaultDependsOnTheDesign) {
  absl::StatusOr<v1::RunSpec> plain = Parse("");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(EffectiveHostLostPolicy(*plain).action(), "restart");
  EXPECT_EQ(EffectiveHostLostPolicy(*plain).after_seconds(), 1800u);
  absl::StatusOr<v1::RunSpec> pinned = Parse("hosts: {names: [vm1]}\n");
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(EffectiveHostLostPolicy(*pinned).action(), "fail");
  absl::StatusOr<v1::RunSpec> spare = Parse("hosts: {names: [vm1, vm2]}\n");
  ASSERT_TRUE(spare.ok());
  EXPECT_EQ(EffectiveHostLostPolicy(*spare).action(), "restart");
  absl::StatusOr<v1::RunSpec> entries = ParseRunSpec(
      "name: r\nbenchmark: pipetest\narms: [{name: a, boot_entry: k1}, {name: b, boot_entry: "
      "k2}]\n",
      "r.yaml");
  ASSERT_TRUE(entries.ok()) << entries.status();
  EXPECT_EQ(EffectiveHostLostPolicy(*entries).action(), "fail");
}

TEST(HostLostPolicyTest, BadInputNamesTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"on_host_lost: {action: retry}\n", "on_host_lost.action: unknown action \"retry\""},
      {"on_host_lost: {after: 10m}\n", "on_host_lost.action: required"},
      {"on_host_lost: {action: fail, after: 0}\n", "on_host_lost.after: must be at least 1 s"},
      {"on_host_lost: {action: fail, after: 0s}\n", "on_host_lost.after: must be at least 1 s"},
      {"on_host_lost: {action: fail, after: 169h}\n",
       "on_host_lost.after: must be at least 1 s"
       " and at most 7 days"},
      {"on_host_lost: {action: fail, after: soon}\n", "on_host_lost.after: expected a duration"},
      {"on_host_lost: {action: fail, when: 1}\n", "on_host_lost.when: unknown field"},
      {"on_host_lost: restart\n", "on_host_lost: expected a map"},
      {"hosts: {names: [vm1]}\non_host_lost: {action: restart}\n",
       "on_host_lost.action: restart measures a lost host's slot again on another host"},
      {"hosts: {count: 2, names: [vm1, vm2]}\non_host_lost: {action: restart}\n",
       "on_host_lost.action: restart"},
  };
  for (const auto& [yaml, want] : cases) {
    absl::StatusOr<v1::RunSpec> spec = Parse(yaml);
    ASSERT_FALSE(spec.ok()) << yaml;
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << yaml;
    EXPECT_NE(spec.status().message().find(want), std::string::npos)
        << yaml << " -> " << spec.status().message();
  }
}

TEST(HostLostPolicyTest, ASpecBuiltElsewhereIsCheckedToo) {
  absl::StatusOr<v1::RunSpec> spec = Parse("");
  ASSERT_TRUE(spec.ok());
  spec->mutable_on_host_lost()->set_action("restart");
  spec->mutable_on_host_lost()->set_after_seconds(8 * 24 * 3600);
  absl::Status s = ValidateRunSpec(*spec);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("on_host_lost.after"), std::string::npos) << s;
}

TEST(HostLostPolicyTest, FormatsBoundsForPeople) {
  EXPECT_EQ(FormatSeconds(45), "45 s");
  EXPECT_EQ(FormatSeconds(1800), "30 min");
  EXPECT_EQ(FormatSeconds(90), "1 min 30 s");
  EXPECT_EQ(FormatSeconds(7200), "2 h");
  EXPECT_EQ(FormatSeconds(5400), "1 h 30 min");
}

}  // namespace
}  // namespace tlbfleet::scheduler
