// Two runs' arms as one comparison: renamed apart, chosen arms only, bad choices named.
#include "controller/report/cross_run.h"

#include <gtest/gtest.h>

namespace tlbfleet::report {
namespace {

v1::Run RunWith(const std::string& id, std::vector<std::string> arms) {
  v1::Run run;
  run.set_id(id);
  run.mutable_spec()->set_name("r" + id);
  run.mutable_spec()->set_benchmark("ebizzy");
  for (const std::string& a : arms) run.mutable_spec()->add_arms()->set_name(a);
  return run;
}

std::vector<v1::Sample> SamplesOf(std::vector<std::string> arms) {
  std::vector<v1::Sample> out;
  for (const std::string& a : arms) {
    v1::Sample s;
    s.set_arm(a);
    s.set_metric("records_per_sec");
    s.set_value(1);
    out.push_back(s);
  }
  return out;
}

TEST(MergeRunsTest, ArmsOfTheSameNameStayApartAndOnlyTheChosenOnesCount) {
  absl::StatusOr<CrossRun> m =
      MergeRuns(RunWith("12", {"mmap", "malloc"}), SamplesOf({"mmap", "malloc", "mmap"}), "",
                RunWith("14", {"mmap", "malloc"}), SamplesOf({"mmap", "malloc"}), "malloc");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->arm_order, (std::vector<std::string>{"12:mmap", "12:malloc", "14:malloc"}));
  ASSERT_EQ(m->samples.size(), 4u);
  EXPECT_EQ(m->samples.back().arm(), "14:malloc");
  ASSERT_EQ(m->spec.arms_size(), 3);
  EXPECT_EQ(m->spec.arms(2).name(), "14:malloc");
  EXPECT_NE(m->note.find("across runs: these arms come from runs 12 and 14"), std::string::npos);
}

TEST(MergeRunsTest, BadChoicesNameTheField) {
  absl::StatusOr<CrossRun> m =
      MergeRuns(RunWith("12", {"a"}), {}, "b", RunWith("14", {"a"}), {}, "");
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("arm: run 12 has no arm named \"b\""), std::string::npos);
  m = MergeRuns(RunWith("12", {"a"}), {}, "", RunWith("14", {"a"}), {}, "z");
  EXPECT_NE(m.status().message().find("with_arm: run 14"), std::string::npos);
  m = MergeRuns(RunWith("12", {"a"}), {}, "", RunWith("12", {"a"}), {}, "");
  EXPECT_NE(m.status().message().find("with_run_id: 12 is the run itself"), std::string::npos);
}

}  // namespace
}  // namespace tlbfleet::report
