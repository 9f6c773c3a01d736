// Boot entries as arms and ceiling sweeps in run specs: parsing, validation, boot planning,
// the balanced order within a boot, and host matching.
#include "controller/scheduler/boot_plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/host_fit.h"
#include "controller/scheduler/run_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kTwoKernels[] = R"(name: kernels
benchmark: pipetest
params: {loops: 1000}
iterations: 2
boots: 3
arms:
  - {name: old, boot_entry: "6.1"}
  - {name: new, boot_entry: "6.12.117+deb12"}
  - {name: new-512, boot_entry: "6.12.117+deb12", ceiling: 512}
)";

v1::RunSpec Parse(const std::string& yaml) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(yaml, "t.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : v1::RunSpec();
}

std::string ParseError(const std::string& yaml) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(yaml, "t.yaml");
  EXPECT_FALSE(spec.ok()) << yaml;
  return spec.ok() ? "" : std::string(spec.status().message());
}

TEST(BootPlanTest, EntriesAlternateAcrossBootsInMirroredBlocks) {
  const v1::RunSpec spec = Parse(kTwoKernels);
  EXPECT_TRUE(RunUsesBootEntries(spec));
  EXPECT_TRUE(RunNeedsReboots(spec));
  EXPECT_THAT(BootEntryGroups(spec), ElementsAre("6.1", "6.12.117+deb12"));
  EXPECT_THAT(BootIndexEntries(spec, 3), ElementsAre("6.1", "6.12.117+deb12", "6.12.117+deb12",
                                                     "6.1", "6.1", "6.12.117+deb12"));
  v1::RunSpec three = spec;
  three.mutable_arms(2)->set_boot_entry("6.3");
  EXPECT_THAT(BootIndexEntries(three, 2),
              ElementsAre("6.1", "6.12.117+deb12", "6.3", "6.3", "6.12.117+deb12", "6.1"));
}

TEST(BootPlanTest, EachBootRunsTheArmsOfItsEntryOnly) {
  const std::vector<JobPlan> jobs = ExpandRun(Parse(kTwoKernels));
  // 3 boots per entry x 2 entries; 2 iterations per boot; 1 arm on 6.1, 2 on 6.12.
  ASSERT_EQ(jobs.size(), 3u * (2u * 1u + 2u * 2u));
  std::map<uint32_t, std::set<std::string>> arms_per_boot;
  std::map<uint32_t, std::set<std::string>> entries_per_boot;
  for (const JobPlan& job : jobs) {
    arms_per_boot[job.boot].insert(job.arm);
    entries_per_boot[job.boot].insert(job.boot_entry);
  }
  ASSERT_EQ(arms_per_boot.size(), 6u);
  EXPECT_THAT(arms_per_boot[0], ElementsAre("old"));
  EXPECT_THAT(arms_per_boot[1], ElementsAre("new", "new-512"));
  EXPECT_THAT(arms_per_boot[2], ElementsAre("new", "new-512"));
  EXPECT_THAT(arms_per_boot[3], ElementsAre("old"));
  for (const auto& [boot, entries] : entries_per_boot) EXPECT_EQ(entries.size(), 1u) << boot;
  EXPECT_EQ(jobs[0].boot_entry, "6.1");
  // Boot-major: all of boot 0, then boot 1, ...
  for (size_t i = 1; i < jobs.size(); ++i) EXPECT_LE(jobs[i - 1].boot, jobs[i].boot);
}

TEST(BootPlanTest, BootEntryErrorsNameTheField) {
  const std::string base = "name: t\nbenchmark: pipetest\n";
  EXPECT_THAT(ParseError(base + "arms: [{name: a, boot_entry: 'a b'}]\n"),
              HasSubstr("arms[0].boot_entry: may only contain letters"));
  EXPECT_THAT(ParseError(base + "arms: [{name: a, boot_entry: [x]}]\n"),
              HasSubstr("arms[0].boot_entry: expected a scalar value"));
  EXPECT_THAT(ParseError(base + "arms: [{name: a, boot_entry: x}, {name: b, boot_entry: y}]\n" +
                         "iterations: {min: 1, max: 4, target_ci: 1%}\n"),
              HasSubstr("iterations: an adaptive run cannot use boot entries"));
  EXPECT_THAT(
      ParseError(base + "arms: [{name: a, boot_entry: x}]\nhosts: {kernel_release: '6.1*'}\n"),
      HasSubstr("hosts.kernel_release: the arms name boot entries"));
  EXPECT_THAT(ParseError(base + "arms: [{name: a, kernal: x}]\n"),
              HasSubstr("arms[0].kernal: unknown field (expected one of: name, params, ceiling, "
                        "boot_entry, kernel)"));
  EXPECT_THAT(ParseError(base + "arms: [{name: a, kernel: x}]\n"),
              HasSubstr("arms[0].kernel: expected a map with source, rev and config"));
  EXPECT_THAT(ParseError(base + "arms: [{name: a, kernel: {source: linux}}]\n"),
              HasSubstr("arms[0].kernel.rev: required"));
  EXPECT_THAT(ParseError(base + "arms: [{name: a, kernel: {source: linux, rev: v1, cfg: x}}]\n"),
              HasSubstr("arms[0].kernel.cfg: unknown field (expected one of: source, rev, config, "
                        "revert, branch)"));
  EXPECT_THAT(ParseError(base + "arms: [{name: a, kernel: {source: lin ux, rev: v1}}]\n"),
              HasSubstr("arms[0].kernel.source"));
  EXPECT_THAT(ParseError(base + "arms: [{name: a, kernel: {source: linux, rev: '-x'}}]\n"),
              HasSubstr("arms[0].kernel.rev: a revision may not start with '-'"));
  EXPECT_THAT(ParseError(base + "arms: [{name: a, kernel: {source: linux, rev: 'a b'}}]\n"),
              HasSubstr("arms[0].kernel.rev: a git revision has no spaces"));
  EXPECT_THAT(ParseError(base + "arms: [{name: a, boot_entry: kernel-x}]\n"),
              HasSubstr("arms[0].boot_entry: boot entry names starting with \"kernel-\""));
}

TEST(BootPlanTest, HostsMustHaveEveryEntryTheArmsName) {
  const v1::RunSpec spec = Parse(kTwoKernels);
  v1::HostInfo host;
  host.set_hostname("vm1");
  host.set_can_reboot(true);
  host.mutable_ceiling()->set_writable(true);
  host.add_boot_entries()->set_name("6.1");
  std::string why;
  EXPECT_EQ(FitHost(spec, host, &why), HostFit::kBootEntryMissing);
  EXPECT_EQ(why, "host vm1 has no boot entry 6.12.117+deb12 (it has 6.1)");
  host.add_boot_entries()->set_name("6.12.117+deb12");
  EXPECT_EQ(FitHost(spec, host, &why), HostFit::kFits) << why;
  host.set_can_reboot(false);
  EXPECT_EQ(FitHost(spec, host, &why), HostFit::kCannotReboot);
}

constexpr char kCeilingSweep[] = R"(name: ceilings
benchmark: pipetest
params: {loops: 1000}
iterations: 4
sweep: {ceiling: [1, 2, 4, 33, 512]}
arms: [{name: a}]
)";

TEST(CeilingSweepTest, ValuesBecomeEachJobsCeilingNotAParameter) {
  const v1::RunSpec spec = Parse(kCeilingSweep);
  EXPECT_TRUE(IsCeilingSweep(spec.sweep()));
  const std::vector<JobPlan> jobs = ExpandRun(spec);
  ASSERT_EQ(jobs.size(), 4u * 5u);
  for (const JobPlan& job : jobs) {
    EXPECT_EQ(job.param_name, "ceiling");
    EXPECT_EQ(job.ceiling, job.param_value);
    EXPECT_EQ(job.params.count("ceiling"), 0u);
    EXPECT_EQ(job.params.at("loops"), "1000");
  }
  // Every iteration holds every value once, in a different order each time.
  std::map<uint32_t, std::vector<std::string>> order;
  for (const JobPlan& job : jobs) order[job.iteration].push_back(job.ceiling);
  std::set<std::vector<std::string>> orders;
  for (auto& [iteration, values] : order) {
    orders.insert(values);
    std::sort(values.begin(), values.end());
    EXPECT_THAT(values, ElementsAre("1", "2", "33", "4", "512"));
  }
  EXPECT_EQ(orders.size(), 4u);
  // The host must be able to write the ceiling.
  v1::HostInfo locked;
  locked.set_hostname("ci");
  locked.mutable_ceiling()->set_reason("kernel lockdown (integrity)");
  std::string why;
  EXPECT_EQ(FitHost(spec, locked, &why), HostFit::kCeilingUnwritable);
}

TEST(CeilingSweepTest, BalancedOrderIsAWilliamsDesign) {
  for (size_t n : {2u, 4u, 5u, 10u}) {
    const size_t rows = n % 2 == 0 ? n : 2 * n;
    std::map<std::pair<size_t, size_t>, int> position;  // (value, position) -> count
    std::map<std::pair<size_t, size_t>, int> follows;   // (before, after) -> count
    for (uint32_t it = 1; it <= rows; ++it) {
      const std::vector<size_t> order = BalancedOrder(n, it);
      ASSERT_EQ(std::set<size_t>(order.begin(), order.end()).size(), n);
      for (size_t p = 0; p < n; ++p) ++position[{order[p], p}];
      for (size_t p = 1; p < n; ++p) ++follows[{order[p - 1], order[p]}];
    }
    const int per_position = static_cast<int>(rows / n);
    for (const auto& [key, count] : position) EXPECT_EQ(count, per_position) << n;
    EXPECT_EQ(position.size(), n * n);
    // Each ordered pair of distinct values is adjacent equally often.
    const int per_pair = static_cast<int>(rows / n);
    for (const auto& [key, count] : follows) EXPECT_EQ(count, per_pair) << n;
    EXPECT_EQ(follows.size(), n * (n - 1)) << n;
  }
}

TEST(CeilingSweepTest, ValuesOutsideZeroToIntMaxAreRefusedNamingTheField) {
  auto with = [](const std::string& sweep) {
    std::string yaml = kCeilingSweep;
    const std::string from = "sweep: {ceiling: [1, 2, 4, 33, 512]}";
    return yaml.replace(yaml.find(from), from.size(), sweep);
  };
  EXPECT_THAT(ParseError(with("sweep: {ceiling: [1, -1]}")),
              HasSubstr("sweep.ceiling[1]: must be an integer in [0, 2147483647], got \"-1\""));
  EXPECT_THAT(ParseError(with("sweep: {ceiling: [2147483648]}")),
              HasSubstr("sweep.ceiling[0]: must be an integer in [0, 2147483647], got "
                        "\"2147483648\""));
  EXPECT_THAT(ParseError(with("sweep: {ceiling: [1, default]}")),
              HasSubstr("sweep.ceiling[1]: must be an integer"));
  EXPECT_THAT(ParseError(with("sweep: {ceiling: [4, 04]}")),
              HasSubstr("sweep.ceiling[1]: duplicate ceiling 4"));
  EXPECT_THAT(ParseError(with("sweep: {ceiling: {policy: pow2, min: 1, max: 4294967296}}")),
              HasSubstr("sweep.ceiling.max: must be an integer in [1, 2147483647]"));
  EXPECT_THAT(ParseError(with("sweep: {ceiling: {policy: topology, max: 8}}")),
              HasSubstr("sweep.ceiling.policy: unknown policy \"topology\""));
  std::string arm_ceiling = kCeilingSweep;
  arm_ceiling.replace(arm_ceiling.find("{name: a}"), 9, "{name: a, ceiling: 33}");
  EXPECT_THAT(ParseError(arm_ceiling),
              HasSubstr("arms[0].ceiling: the run sweeps the ceiling (sweep.ceiling)"));
  // 0 and INT_MAX are valid ends; a pow2 policy works too.
  EXPECT_EQ(ExpandRun(Parse(with("sweep: {ceiling: [0, 2147483647]}"))).size(), 4u * 2u);
  const v1::RunSpec pow2 = Parse(with("sweep: {ceiling: {policy: pow2, min: 1, max: 512}}"));
  EXPECT_THAT(SweepValues(pow2.sweep()),
              ElementsAre("1", "2", "4", "8", "16", "32", "64", "128", "256", "512"));
}

}  // namespace
}  // namespace tlbfleet::scheduler
