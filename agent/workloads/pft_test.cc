#include "agent/workloads/pft.h"

#include <string>
#include <utility>
#include <vector>

#include "agent/workloads/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::workloads::pft {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

TEST(PftRunTest, FaultsEveryPageOnce) {
  for (int threads : {1, 3}) {
    absl::StatusOr<Result> r = RunOnce({threads, 5});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->faults, 5u * 256) << threads;
    EXPECT_GT(r->wall_seconds, 0);
  }
}

TEST(PftRunTest, MoreThreadsThanPagesStillCountsEveryPage) {
  absl::StatusOr<Result> r = RunOnce({300, 1});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->faults, 256u);
}

TEST(PftRunTest, MoreMemoryThanTheHostIsAStatusNotACrash) {
  absl::StatusOr<Result> r = RunOnce({1, size_t{1} << 30});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
}

const Workload& Pft() {
  LinkAllWorkloads();
  const Workload* w = Registry::Get().Find("pft");
  EXPECT_NE(w, nullptr);
  return *w;
}

TEST(PftWorkloadTest, ReportsPlausibleFaultRates) {
  const Workload& w = Pft();
  Params params = ResolveParams(w, {{"threads", "2"}, {"size_mb", "16"}}).value();
  absl::StatusOr<std::vector<Measurement>> result = w.Run(params);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->size(), 5u);
  EXPECT_EQ((*result)[0].metric, "faults_per_sec");
  EXPECT_EQ((*result)[1].metric, "faults_per_cpu");
  // 4096 faults: more than 100/s even under emulation, fewer than 10^9/s anywhere.
  for (int i = 0; i < 2; ++i) {
    EXPECT_GT((*result)[i].value, 100) << (*result)[i].metric;
    EXPECT_LT((*result)[i].value, 1e9) << (*result)[i].metric;
  }
  EXPECT_THAT(w.ClassicOutput(params, *result),
              MatchesRegex("  Gb  Rep Thr CLine .*\n   0    1   2    1 .*s .*\n"));
}

TEST(PftWorkloadTest, BadInputIsRefusedWithTheParameterNamed) {
  const Workload& w = Pft();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"threads", "0"}, {"threads", "4097"}, {"size_mb", "0"}, {"size_mb", "-1"}};
  for (const auto& [name, value] : bad) {
    absl::StatusOr<Params> p = ResolveParams(w, {{name, value}});
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << name << "=" << value;
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(name + ":"));
  }
}

}  // namespace
}  // namespace tlbfleet::workloads::pft
