#include "agent/kernel/topology.h"

#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

TEST(CpuTopologyTest, TwoSocketsWithSmtAndANumaNodeEach) {
  absl::StatusOr<v1::CpuTopology> t = CpuTopologyFromSynthetic("pack:2 [numa] l3:1 core:4 pu:2");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->cpus(), 16u);
  EXPECT_EQ(t->packages(), 2u);
  EXPECT_EQ(t->cores(), 8u);
  EXPECT_EQ(t->cpus_per_core(), 2u);
  EXPECT_EQ(t->cpus_per_llc(), 8u);
  EXPECT_EQ(t->numa_nodes(), 2u);
  EXPECT_EQ(t->cpus_per_numa_node(), 8u);
}

TEST(CpuTopologyTest, LastLevelCacheIsTheHighestLevel) {
  // Two L3s of two L2s each, no SMT, one NUMA node for the machine.
  absl::StatusOr<v1::CpuTopology> t = CpuTopologyFromSynthetic("pack:1 l3:2 l2:2 core:2 pu:1");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->cpus(), 8u);
  EXPECT_EQ(t->cpus_per_core(), 1u);
  EXPECT_EQ(t->cpus_per_llc(), 4u);
  EXPECT_EQ(t->numa_nodes(), 1u);
  EXPECT_EQ(t->cpus_per_numa_node(), 8u);
}

TEST(CpuTopologyTest, RefusesABadDescription) {
  absl::StatusOr<v1::CpuTopology> t = CpuTopologyFromSynthetic("pack:two");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CpuTopologyTest, ThisMachineHasAtLeastOneCpu) {
  absl::StatusOr<v1::CpuTopology> t = ReadCpuTopology();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GE(t->cpus(), 1u);
  EXPECT_GE(t->cpus_per_core(), 1u);
}

TEST(CpuTopologyTest, AFakeSysrootLeavesTheTopologyUnset) {
  v1::HostInfo host;
  FillCpuTopology(Sysroot("/nonexistent-fake-root"), &host);
  EXPECT_FALSE(host.has_topology());
  FillCpuTopology(Sysroot(""), &host);
  EXPECT_GE(host.topology().cpus(), 1u);
}

}  // namespace
}  // namespace tlbfleet::agent
