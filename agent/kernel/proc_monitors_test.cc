#include "agent/kernel/proc_monitors.h"

#include <map>

#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

constexpr char kInterrupts[] =
    "           CPU0       CPU1       CPU2       \n"
    "  0:         40          0          0   IO-APIC    2-edge      timer\n"
    "NMI:          0          0          0   Non-maskable interrupts\n"
    "TLB:     229148     217398         12   TLB shootdowns\n"
    "ERR:          0\n";

TEST(ProcMonitorsTest, ParsesTheTlbRowPerCpu) {
  absl::StatusOr<std::vector<uint64_t>> v = ParseTlbInterrupts(kInterrupts);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, (std::vector<uint64_t>{229148, 217398, 12}));
  EXPECT_TRUE(absl::IsNotFound(ParseTlbInterrupts("           CPU0\n  0:  1  timer\n").status()));
}

TEST(ProcMonitorsTest, InterruptDeltas) {
  std::map<std::string, double> got;
  for (const v1::Sample& s : InterruptDeltaSamples({10, 20}, {15, 20, 4})) {
    EXPECT_EQ(s.metric(), "tlb_shootdown_interrupts");
    EXPECT_EQ(s.unit(), "interrupts");
    got[s.series()] = s.value();
  }
  EXPECT_EQ(got,
            (std::map<std::string, double>{{"cpu0", 5}, {"cpu1", 0}, {"cpu2", 4}, {"total", 9}}));
}

TEST(ProcMonitorsTest, VmstatDeltasKeepChangesAndTlbCounters) {
  std::map<std::string, int64_t> before =
      ParseVmstat("nr_free_pages 100\nnr_tlb_local_flush_all 5\npgfault 10\nbroken\n");
  std::map<std::string, int64_t> after =
      ParseVmstat("nr_free_pages 90\nnr_tlb_local_flush_all 5\npgfault 10\nthp_fault_alloc 1\n");
  std::map<std::string, double> got;
  for (const v1::Sample& s : VmstatDeltaSamples(before, after)) {
    EXPECT_EQ(s.series(), "");
    got[s.metric()] = s.value();
  }
  EXPECT_EQ(got, (std::map<std::string, double>{{"vmstat_nr_free_pages", -10},
                                                {"vmstat_nr_tlb_local_flush_all", 0},
                                                {"vmstat_thp_fault_alloc", 1}}));
}

TEST(ProcMonitorsTest, RealHostHasATlbRow) {
  Sysroot real;
  absl::StatusOr<std::string> text = real.Read("/proc/interrupts");
  ASSERT_TRUE(text.ok()) << text.status();
#if defined(__x86_64__)
  EXPECT_TRUE(ParseTlbInterrupts(*text).ok());
#endif
}

}  // namespace
}  // namespace tlbfleet::agent
