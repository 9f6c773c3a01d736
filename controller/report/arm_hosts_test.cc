// Which machines every format of `compare` names per arm, and the samples it leaves out.
#include "controller/report/arm_hosts.h"

#include <gtest/gtest.h>

#include "controller/report/compare.h"
#include "controller/report/render.h"

namespace tlbfleet::report {
namespace {

// The comparison as the one message every format renders.
v1::Report Titled(const Comparison& c, const std::string& title = "") {
  v1::Report report = ReportFromComparison(c);
  report.set_title(title);
  return report;
}

v1::Sample S(const std::string& arm, const std::string& host, const std::string& agent,
             const std::string& boot, double value, const std::string& excluded = "") {
  v1::Sample s;
  s.set_arm(arm);
  s.set_host(host);
  s.set_agent_id(agent);
  s.set_machine_id("machine-" + agent);
  s.set_boot_id(boot);
  s.set_metric("records_per_sec");
  s.set_better(v1::BETTER_HIGHER);
  s.set_value(value);
  s.set_excluded(excluded);
  return s;
}

std::vector<v1::Sample> Samples() {
  std::vector<v1::Sample> out;
  for (int i = 0; i < 3; ++i) {
    out.push_back(S("base", "vm2", "agent-22222222", "b1", 100 + i));
    out.push_back(S("new", "vm2", "agent-22222222", "b1", 110 + i));
  }
  // Measured by the lost host before its slot was restarted: kept, never compared. Wildly
  // different values, so that counting them would show in the statistics.
  out.push_back(S("base", "vm1", "agent-11111111", "b0", 1, "slot 0 restarted: vm1 was lost"));
  out.push_back(S("new", "vm1", "agent-11111111", "b0", 1e6, "slot 0 restarted: vm1 was lost"));
  return out;
}

TEST(ArmHostsTest, ExcludedSamplesAreNeverCompared) {
  const std::vector<Observation> obs = ObservationsFromSamples(Samples());
  EXPECT_EQ(obs.size(), 6u);
  for (const Observation& o : obs) EXPECT_EQ(o.boot, "b1");
}

TEST(ArmHostsTest, EveryFormatNamesTheMachinesPerArmAndWhatWasLeftOut) {
  const std::vector<v1::Sample> samples = Samples();
  CompareOptions options;
  options.arm_order = {"base", "new"};
  options.cross_checks = false;
  absl::StatusOr<Comparison> c = Compare(ObservationsFromSamples(samples), options);
  ASSERT_TRUE(c.ok()) << c.status();
  AttachArmHosts(samples, &*c);
  ASSERT_EQ(c->hosts.size(), 2u);
  EXPECT_EQ(c->hosts[0].arm, "base");
  EXPECT_EQ(c->hosts[0].hostname, "vm2");
  EXPECT_EQ(c->hosts[0].machine_id, "machine-agent-22222222");
  EXPECT_EQ(c->hosts[0].samples, 3u);
  EXPECT_EQ(c->hosts[0].boots, 1u);
  ASSERT_EQ(c->excluded.size(), 2u);

  const std::string text = RenderReportText(Titled(*c, "t"));
  EXPECT_NE(text.find("hosts per arm: base vm2 (agent agent-22, machine machine-) 3 samples, 1 "
                      "boot; new vm2 (agent agent-22, machine machine-) 3 samples, 1 boot\n"),
            std::string::npos)
      << text;
  // One line per reason and host, over both arms.
  EXPECT_NE(text.find("left out: 2 samples of vm1 (agent agent-11, machine machine-), kept for "
                      "the record: slot 0 restarted: vm1 was lost\n"),
            std::string::npos)
      << text;
  const std::string json = RenderReportJson(Titled(*c));
  EXPECT_NE(json.find("\"hosts\": \"vm2 (agent agent-22, machine machine-) 3 samples, 1 boot\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"excluded\": \"1 sample of vm1 (agent agent-11, machine machine-): slot "
                      "0 restarted: vm1 was lost\""),
            std::string::npos)
      << json;
  const std::string csv = RenderReportCsv(Titled(*c));
  EXPECT_NE(csv.find(",hosts,excluded\n"), std::string::npos) << csv;

  v1::Report report;
  AddArmHostsToReport(*c, &report);
  ASSERT_EQ(report.hosts_size(), 2);
  EXPECT_EQ(report.hosts(1).arm(), "new");
  ASSERT_EQ(report.excluded_size(), 1);
  EXPECT_EQ(report.excluded(0).samples(), 2u);
  EXPECT_EQ(report.excluded(0).agent_id(), "agent-11111111");
}

TEST(ArmHostsTest, OfflineSamplesNameNoHosts) {
  std::vector<v1::Sample> samples = {S("base", "", "", "b1", 1), S("new", "", "", "b1", 2)};
  CompareOptions options;
  options.arm_order = {"base", "new"};
  absl::StatusOr<Comparison> c = Compare(ObservationsFromSamples(samples), options);
  ASSERT_TRUE(c.ok());
  AttachArmHosts(samples, &*c);
  EXPECT_TRUE(c->hosts.empty());
  EXPECT_EQ(RenderReportText(Titled(*c)).find("hosts per arm"), std::string::npos);
}

}  // namespace
}  // namespace tlbfleet::report
