#include "controller/report/arm_ceilings.h"

#include "controller/report/compare.h"
#include "controller/report/render.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

// The comparison as the one message every format renders.
v1::Report Titled(const Comparison& c, const std::string& title = "") {
  v1::Report report = ReportFromComparison(c);
  report.set_title(title);
  return report;
}

v1::Sample S(const std::string& arm, bool applied, bool observed, int64_t ceiling) {
  v1::Sample s;
  s.set_arm(arm);
  s.set_ceiling_applied(applied);
  s.set_ceiling_observed(observed);
  if (applied || observed) s.set_ceiling(ceiling);
  return s;
}

TEST(ArmCeilingsTest, EachArmSaysWhatItRanUnder) {
  std::vector<v1::Sample> samples = {S("base", true, true, 33),  S("base", true, true, 33),
                                     S("c512", true, true, 512), S("plain", false, true, 33),
                                     S("old", false, false, 0),  S("c1", true, true, 1)};
  std::vector<ArmCeiling> c = SummarizeArmCeilings(
      samples, {{"base", "default"}, {"c512", "512"}, {"plain", ""}, {"c1", "1"}},
      {"base", "c512"});
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c[0].arm, "base");
  EXPECT_EQ(DescribeArmCeiling(c[0]), "default = 33");
  EXPECT_EQ(DescribeArmCeiling(c[1]), "512");
  EXPECT_EQ(DescribeArmCeiling(c[2]), "not set (observed 33)");
  EXPECT_EQ(DescribeArmCeiling(c[3]), "not set") << "an arm missing from the spec map: '?'";
  EXPECT_EQ(DescribeArmCeiling(c[4]), "1");
  EXPECT_EQ(RenderArmCeilingsText(c),
            "flush ceiling per arm: base default = 33; c512 512; plain not set (observed 33); "
            "old not set; c1 1\n");
  EXPECT_EQ(ArmCeilingFor(c, "c512"), "512");
  EXPECT_EQ(ArmCeilingFor(c, "nope"), "");
}

TEST(ArmCeilingsTest, DisagreementsAreShownNotHidden) {
  std::vector<v1::Sample> samples = {S("d", true, true, 33), S("d", true, true, 40),
                                     S("n", true, true, 500), S("n", false, false, 0)};
  std::vector<ArmCeiling> c = SummarizeArmCeilings(samples, {{"d", "default"}, {"n", "512"}}, {});
  EXPECT_EQ(DescribeArmCeiling(c[0]), "default = 33/40 on different hosts");
  EXPECT_EQ(DescribeArmCeiling(c[1]), "512 asked, 500 applied; 1 samples state none");
}

// Every format of `compare` says what each arm ran under.
TEST(ArmCeilingsTest, EveryFormatOfTheComparisonCarriesThem) {
  std::vector<v1::Sample> samples;
  for (int i = 0; i < 4; ++i) {
    for (const auto& [arm, ceiling] :
         {std::pair<std::string, int64_t>{"base", 33}, {"c512", 512}}) {
      v1::Sample s = S(arm, true, true, ceiling);
      s.set_metric("records_per_sec");
      s.set_value(100 + i + (arm == "c512" ? 5 : 0));
      s.set_iteration(i + 1);
      s.set_boot_id("b");
      samples.push_back(s);
    }
  }
  v1::RunSpec spec;
  spec.add_arms()->set_name("base");
  spec.mutable_arms(0)->set_ceiling("default");
  spec.add_arms()->set_name("c512");
  spec.mutable_arms(1)->set_ceiling("512");
  CompareOptions options;
  options.arm_order = {"base", "c512"};
  absl::StatusOr<Comparison> c = Compare(ObservationsFromSamples(samples), options);
  ASSERT_TRUE(c.ok()) << c.status();
  AttachArmCeilings(samples, spec, &*c);
  EXPECT_NE(RenderReportText(Titled(*c, "t"))
                .find("flush ceiling per arm: base default = 33; c512 "
                      "512\n"),
            std::string::npos)
      << RenderReportText(Titled(*c, "t"));
  EXPECT_NE(RenderReportJson(Titled(*c)).find("\"ceiling\": \"default = 33\""), std::string::npos);
  const std::string csv = RenderReportCsv(Titled(*c));
  EXPECT_NE(csv.find(",ceiling,hosts,excluded\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",512,,\n"), std::string::npos) << csv;
}

}  // namespace
}  // namespace tlbfleet::report
