#include "agent/workloads/pipetest.h"

#include <string>
#include <vector>

#include "agent/workloads/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::workloads::pipetest {
namespace {

using ::testing::HasSubstr;

TEST(PipetestRunTest, TimeIsPositiveAndGrowsWithLoops) {
  absl::StatusOr<double> few = RunOnce(10);
  absl::StatusOr<double> many = RunOnce(20'000);
  ASSERT_TRUE(few.ok()) << few.status();
  ASSERT_TRUE(many.ok()) << many.status();
  EXPECT_GT(*few, 0);
  EXPECT_GT(*many, *few);
}

const Workload& Pipetest() {
  LinkAllWorkloads();
  const Workload* w = Registry::Get().Find("pipetest");
  EXPECT_NE(w, nullptr);
  return *w;
}

TEST(PipetestWorkloadTest, ReportsUsecsPerOpAndOpsPerSec) {
  const Workload& w = Pipetest();
  Params params = ResolveParams(w, {{"loops", "5000"}}).value();
  absl::StatusOr<std::vector<Measurement>> result = w.Run(params);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->size(), 2u);
  EXPECT_EQ((*result)[0].metric, "usecs_per_op");
  EXPECT_EQ((*result)[0].better, Better::kLower);
  EXPECT_EQ((*result)[1].metric, "ops_per_sec");
  EXPECT_GT((*result)[0].value, 0);
  // A round trip takes at least two context switches: well over 10 ns, well under 10 ms.
  EXPECT_GT((*result)[0].value, 0.01);
  EXPECT_LT((*result)[0].value, 10'000);
  EXPECT_NEAR((*result)[0].value * (*result)[1].value, 1e6, 1);
}

TEST(PipetestWorkloadTest, ClassicOutputIsPerfsFormat) {
  const Workload& w = Pipetest();
  Params params = ResolveParams(w, {{"loops", "200000"}}).value();
  std::vector<Measurement> result = {{"usecs_per_op", "", 9.66, "us/op", Better::kLower},
                                     {"ops_per_sec", "", 103519.6, "ops/s", Better::kHigher}};
  EXPECT_EQ(w.ClassicOutput(params, result),
            "# Running 'sched/pipe' benchmark:\n"
            "# Executed 200000 pipe operations between two processes\n\n"
            "     Total time: 1.932 [sec]\n\n"
            "       9.660000 usecs/op\n"
            "         103519 ops/sec\n");
}

TEST(PipetestWorkloadTest, BadInputIsRefusedWithTheParameterNamed) {
  const Workload& w = Pipetest();
  for (const char* value : {"0", "-1", "1000000001", "ten"}) {
    absl::StatusOr<Params> p = ResolveParams(w, {{"loops", value}});
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << value;
    EXPECT_THAT(std::string(p.status().message()), HasSubstr("loops:"));
  }
}

}  // namespace
}  // namespace tlbfleet::workloads::pipetest
