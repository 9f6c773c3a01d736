// FitHost's host selectors on CPU and kernel facts (hosts.pcid, invpcid, min_dtlb_entries,
// kernel_release), from the run spec YAML to the decision and its reason.

#include "controller/scheduler/host_fit.h"

#include <string>

#include "absl/status/statusor.h"
#include "controller/scheduler/run_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::scheduler {
namespace {

using ::testing::HasSubstr;

v1::RunSpec Spec(const std::string& hosts) {
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(
      "name: t\nbenchmark: ebizzy\narms: [{name: a}]\nhosts: " + hosts + "\n", "t.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : v1::RunSpec();
}

// An Ivy Bridge i7-3770 as the agent reports it: 64 dTLB 4K entries, PCID, no INVPCID.
v1::HostInfo IvyBridge() {
  v1::HostInfo host;
  host.set_hostname("ivy");
  host.set_kernel_release("6.1.0-28-amd64");
  v1::CpuInfo* cpu = host.mutable_cpu();
  cpu->set_microarch("IvyBridge");
  cpu->set_dtlb_4k_entries(64);
  cpu->set_pcid(true);
  cpu->set_invpcid(false);
  cpu->set_from_cpuid(true);
  return host;
}

HostFit Fit(const std::string& hosts, const v1::HostInfo& host, std::string* why = nullptr) {
  return FitHost(Spec(hosts), host, why);
}

TEST(FitHostTest, NoCpuSelectorsFitAnyHost) {
  EXPECT_EQ(Fit("{count: 1}", IvyBridge()), HostFit::kFits);
  EXPECT_EQ(Fit("{count: 1}", v1::HostInfo()), HostFit::kFits);
}

TEST(FitHostTest, Pcid) {
  EXPECT_EQ(Fit("{pcid: true}", IvyBridge()), HostFit::kFits);
  std::string why;
  EXPECT_EQ(Fit("{pcid: false}", IvyBridge(), &why), HostFit::kSelectorMismatch);
  EXPECT_THAT(why, HasSubstr("has PCID"));
  v1::HostInfo old = IvyBridge();
  old.mutable_cpu()->set_pcid(false);
  EXPECT_EQ(Fit("{pcid: true}", old, &why), HostFit::kSelectorMismatch);
  EXPECT_THAT(why, HasSubstr("lacks PCID"));
  EXPECT_EQ(Fit("{pcid: false}", old), HostFit::kFits);
}

TEST(FitHostTest, Invpcid) {
  std::string why;
  EXPECT_EQ(Fit("{invpcid: true}", IvyBridge(), &why), HostFit::kSelectorMismatch);
  EXPECT_THAT(why, HasSubstr("lacks INVPCID"));
  EXPECT_EQ(Fit("{invpcid: false}", IvyBridge()), HostFit::kFits);
  v1::HostInfo haswell = IvyBridge();
  haswell.mutable_cpu()->set_invpcid(true);
  EXPECT_EQ(Fit("{pcid: true, invpcid: true}", haswell), HostFit::kFits);
}

TEST(FitHostTest, MinDtlbEntriesIsInclusive) {
  EXPECT_EQ(Fit("{min_dtlb_entries: 64}", IvyBridge()), HostFit::kFits);
  EXPECT_EQ(Fit("{min_dtlb_entries: 1}", IvyBridge()), HostFit::kFits);
  std::string why;
  EXPECT_EQ(Fit("{min_dtlb_entries: 65}", IvyBridge(), &why), HostFit::kSelectorMismatch);
  EXPECT_EQ(why, "dTLB has 64 4K entries, fewer than 65");
}

TEST(FitHostTest, UnknownDtlbSizeMatchesNoMinimum) {
  v1::HostInfo host = IvyBridge();
  host.mutable_cpu()->set_dtlb_4k_entries(0);  // CPUID did not describe the TLB
  EXPECT_EQ(Fit("{min_dtlb_entries: 1}", host), HostFit::kSelectorMismatch);
  EXPECT_EQ(Fit("{count: 1}", host), HostFit::kFits);
}

TEST(FitHostTest, KernelReleaseIsAGlob) {
  EXPECT_EQ(Fit("{kernel_release: \"6.1.*\"}", IvyBridge()), HostFit::kFits);
  EXPECT_EQ(Fit("{kernel_release: \"6.1.0-28-amd64\"}", IvyBridge()), HostFit::kFits);
  EXPECT_EQ(Fit("{kernel_release: \"*-amd64\"}", IvyBridge()), HostFit::kFits);
  EXPECT_EQ(Fit("{kernel_release: \"6.[01].*\"}", IvyBridge()), HostFit::kFits);
  EXPECT_EQ(Fit("{kernel_release: \"6.?.0-*\"}", IvyBridge()), HostFit::kFits);
  std::string why;
  EXPECT_EQ(Fit("{kernel_release: \"6.10.*\"}", IvyBridge(), &why), HostFit::kSelectorMismatch);
  EXPECT_EQ(why, "kernel 6.1.0-28-amd64 does not match 6.10.*");
  // Anchored at both ends: a prefix is not a match.
  EXPECT_EQ(Fit("{kernel_release: \"6.1\"}", IvyBridge()), HostFit::kSelectorMismatch);
  // A host that did not report its release matches no glob but "*".
  EXPECT_EQ(Fit("{kernel_release: \"6.*\"}", v1::HostInfo()), HostFit::kSelectorMismatch);
  EXPECT_EQ(Fit("{kernel_release: \"*\"}", v1::HostInfo()), HostFit::kFits);
}

TEST(FitHostTest, AllSelectorsMustHold) {
  const std::string hosts =
      "{microarch: [ivybridge], pcid: true, invpcid: false, min_dtlb_entries: 64, "
      "kernel_release: \"6.1.*\"}";
  EXPECT_EQ(Fit(hosts, IvyBridge()), HostFit::kFits);
  v1::HostInfo newer = IvyBridge();
  newer.set_kernel_release("6.12.9-amd64");
  EXPECT_EQ(Fit(hosts, newer), HostFit::kSelectorMismatch);
}

TEST(FitHostTest, SelectorMismatchWinsOverTheCeiling) {
  // A host the selectors exclude is not evidence that the ceiling cannot be applied.
  absl::StatusOr<v1::RunSpec> spec = ParseRunSpec(
      "name: t\nbenchmark: ebizzy\narms: [{name: a, ceiling: 1}]\nhosts: {pcid: true}\n", "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  v1::HostInfo host = IvyBridge();
  host.mutable_cpu()->set_pcid(false);
  host.mutable_ceiling()->set_writable(false);
  EXPECT_EQ(FitHost(*spec, host), HostFit::kSelectorMismatch);
}

}  // namespace
}  // namespace tlbfleet::scheduler
