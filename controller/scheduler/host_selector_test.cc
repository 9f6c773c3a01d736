// The run spec's `hosts:` selectors on CPU and kernel facts: parsing and validation. Matching
// is FitHost's (controller/api/fit_host_test.cc).

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "controller/scheduler/run_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::scheduler {
namespace {

using ::testing::StartsWith;

std::string WithHosts(const std::string& hosts) {
  return "name: t\nbenchmark: ebizzy\narms: [{name: a}]\nhosts: " + hosts + "\n";
}

TEST(HostSelectorTest, ParsesCpuAndKernelFacts) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(
      WithHosts("{pcid: true, invpcid: no, min_dtlb_entries: 64, kernel_release: \"6.1.*\"}"),
      "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const v1::HostSelector& hosts = spec->hosts();
  ASSERT_TRUE(hosts.has_pcid());
  EXPECT_TRUE(hosts.pcid());
  ASSERT_TRUE(hosts.has_invpcid());  // false is a real requirement, not "any"
  EXPECT_FALSE(hosts.invpcid());
  EXPECT_EQ(hosts.min_dtlb_entries(), 64u);
  EXPECT_EQ(hosts.kernel_release(), "6.1.*");
}

TEST(HostSelectorTest, AbsentFactsSelectAnyHost) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(WithHosts("{count: 1}"), "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->hosts().has_pcid());
  EXPECT_FALSE(spec->hosts().has_invpcid());
  EXPECT_EQ(spec->hosts().min_dtlb_entries(), 0u);
  EXPECT_EQ(spec->hosts().kernel_release(), "");
}

struct BadHosts {
  const char* test_name;
  std::string hosts;
  std::string message_prefix;
};

class BadHostsTest : public ::testing::TestWithParam<BadHosts> {};

TEST_P(BadHostsTest, IsInvalidArgumentNamingTheField) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(WithHosts(GetParam().hosts), "t.yaml");
  ASSERT_FALSE(spec.ok()) << GetParam().hosts;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()), StartsWith(GetParam().message_prefix));
}

INSTANTIATE_TEST_SUITE_P(
    RunSpec, BadHostsTest,
    ::testing::Values(
        BadHosts{"PcidNotABool", "{pcid: maybe}",
                 "hosts.pcid: expected true or false, got \"maybe\""},
        BadHosts{"InvpcidList", "{invpcid: [true]}",
                 "hosts.invpcid: expected a scalar value, got a list"},
        BadHosts{"DtlbZero", "{min_dtlb_entries: 0}",
                 "hosts.min_dtlb_entries: must be an integer in [1, 65536], got \"0\""},
        BadHosts{"DtlbNegative", "{min_dtlb_entries: -4}",
                 "hosts.min_dtlb_entries: must be an integer in [1, 65536], got \"-4\""},
        BadHosts{"DtlbNotAnInteger", "{min_dtlb_entries: 64k}",
                 "hosts.min_dtlb_entries: expected an integer, got \"64k\""},
        BadHosts{"KernelEmpty", "{kernel_release: \"\"}",
                 "hosts.kernel_release: must not be empty"},
        BadHosts{"KernelMap", "{kernel_release: {glob: 6.1}}",
                 "hosts.kernel_release: expected a scalar value, got a map"},
        BadHosts{"UnknownField", "{min_dtlb: 64}",
                 "hosts.min_dtlb: unknown field (expected one of: count, labels, microarch, "
                 "names, pcid, invpcid, min_dtlb_entries, kernel_release)"}),
    [](const ::testing::TestParamInfo<BadHosts>& info) { return info.param.test_name; });

TEST(HostSelectorTest, ValidateRefusesOutOfRangeFactsBuiltInCode) {
  absl::StatusOr<v1::RunSpec> parsed = ParseRunSpec(WithHosts("{count: 1}"), "t.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  v1::RunSpec spec = *parsed;
  spec.mutable_hosts()->set_min_dtlb_entries(70000);
  EXPECT_THAT(std::string(ValidateRunSpec(spec).message()),
              StartsWith("hosts.min_dtlb_entries: must be an integer in [1, 65536]"));
  spec = *parsed;
  spec.mutable_hosts()->set_kernel_release(std::string(300, '*'));
  EXPECT_THAT(std::string(ValidateRunSpec(spec).message()),
              StartsWith("hosts.kernel_release: must be at most 256 characters"));
}

}  // namespace
}  // namespace tlbfleet::scheduler
