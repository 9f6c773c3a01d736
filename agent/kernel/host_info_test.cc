#include "agent/kernel/host_info.h"

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "agent/kernel/fake_sysroot_for_test.h"
#include "common/version.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

// Two logical CPUs of an i7-3770 as Linux prints them (trimmed).
constexpr char kIvyBridgeCpuinfo[] =
    "processor\t: 0\n"
    "vendor_id\t: GenuineIntel\n"
    "cpu family\t: 6\n"
    "model\t\t: 58\n"
    "model name\t: Intel(R) Core(TM) i7-3770 CPU @ 3.40GHz\n"
    "stepping\t: 9\n"
    "microcode\t: 0x21\n"
    "flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep\n"
    "\n"
    "processor\t: 1\n"
    "vendor_id\t: GenuineIntel\n"
    "cpu family\t: 6\n"
    "model\t\t: 58\n"
    "model name\t: Intel(R) Core(TM) i7-3770 CPU @ 3.40GHz\n"
    "stepping\t: 9\n"
    "\n";

constexpr char kZen3Cpuinfo[] =
    "processor\t: 0\n"
    "vendor_id\t: AuthenticAMD\n"
    "cpu family\t: 25\n"
    "model\t\t: 33\n"
    "model name\t: AMD Ryzen 9 5950X 16-Core Processor\n"
    "stepping\t: 0\n"
    "\n"
    "processor\t: 1\n"
    "vendor_id\t: AuthenticAMD\n"
    "cpu family\t: 25\n"
    "model\t\t: 33\n"
    "\n"
    "processor\t: 2\n"
    "vendor_id\t: AuthenticAMD\n"
    "\n"
    "processor\t: 3\n"
    "vendor_id\t: AuthenticAMD\n";

void LayOutHost(const FakeSysroot& root, const char* cpuinfo) {
  root.WriteFile("/proc/sys/kernel/hostname", "lab-ivb-01\n");
  root.WriteFile("/etc/machine-id", "0123456789abcdef0123456789abcdef\n");
  root.WriteFile("/proc/sys/kernel/osrelease", "6.1.0-57-amd64\n");
  root.WriteFile("/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 pti=on\n");
  root.WriteFile("/proc/sys/kernel/random/boot_id", "b0822109-c1dc-45cc-a324-f22d145f28c6\n");
  root.WriteFile("/proc/cpuinfo", cpuinfo);
  root.WriteFile("/proc/mounts", "sysfs /sys sysfs rw 0 0\n");
  root.WriteFile("/proc/stat", "cpu  10 0 5 100 0 0 0 0 0 0\nbtime 1764576000\n");
}

TEST(HostInfoTest, BootTimeFromProcStat) {
  EXPECT_EQ(ParseBootTime("cpu  1 2 3\nintr 5\nbtime 1764576000\nprocesses 9\n"),
            std::optional<int64_t>(1764576000));
  EXPECT_EQ(ParseBootTime("cpu  1 2 3\nprocesses 9\n"), std::nullopt);
  EXPECT_EQ(ParseBootTime("btime x\n"), std::nullopt);
}

TEST(HostInfoTest, IvyBridgeFromFakeSysroot) {
  TempDir dir;
  FakeSysroot root(dir);
  LayOutHost(root, kIvyBridgeCpuinfo);
  root.WriteFile("/sys/kernel/debug/x86/tlb_single_page_flush_ceiling", "33\n");

  absl::StatusOr<v1::HostInfo> host = CollectHostInfo(root, {{"rack", "b2"}});
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(host->hostname(), "lab-ivb-01");
  EXPECT_EQ(host->machine_id(), "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(host->kernel_release(), "6.1.0-57-amd64");
  EXPECT_EQ(host->kernel_cmdline(), "BOOT_IMAGE=/vmlinuz root=/dev/sda1 pti=on");
  EXPECT_EQ(host->boot_id(), "b0822109-c1dc-45cc-a324-f22d145f28c6");
  EXPECT_EQ(host->boot_time_unix(), 1764576000);
  EXPECT_EQ(host->cpu().vendor(), "GenuineIntel");
  EXPECT_EQ(host->cpu().family(), 6u);
  EXPECT_EQ(host->cpu().model(), 0x3Au);
  EXPECT_EQ(host->cpu().stepping(), 9u);
  EXPECT_EQ(host->cpu().model_name(), "Intel(R) Core(TM) i7-3770 CPU @ 3.40GHz");
  EXPECT_EQ(host->cpu().microarch(), "IvyBridge");
  EXPECT_EQ(host->logical_cpus(), 2u);
  EXPECT_TRUE(host->ceiling().readable());
  EXPECT_TRUE(host->ceiling().writable());
  EXPECT_EQ(host->ceiling().value(), 33);
  EXPECT_EQ(host->labels().at("rack"), "b2");
  EXPECT_EQ(host->agent_version(), kVersion);
}

TEST(HostInfoTest, AmdZen3CountsEveryProcessor) {
  TempDir dir;
  FakeSysroot root(dir);
  LayOutHost(root, kZen3Cpuinfo);
  absl::StatusOr<v1::HostInfo> host = CollectHostInfo(root, {});
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(host->cpu().vendor(), "AuthenticAMD");
  EXPECT_EQ(host->cpu().family(), 0x19u);
  EXPECT_EQ(host->cpu().model(), 0x21u);
  EXPECT_EQ(host->cpu().microarch(), "Zen 3");
  EXPECT_EQ(host->cpu().model_name(), "AMD Ryzen 9 5950X 16-Core Processor");
  EXPECT_EQ(host->logical_cpus(), 4u);
  EXPECT_FALSE(host->ceiling().readable());
  EXPECT_EQ(host->ceiling().reason(), "debugfs not mounted");
  EXPECT_FALSE(host->cpu().invlpgb_in_use());
}

// A 6.15+ kernel on Zen 3+ lists "invlpgb": its flush profiles miss broadcast flushes.
TEST(HostInfoTest, KernelUsingInvlpgbIsReported) {
  TempDir dir;
  FakeSysroot root(dir);
  LayOutHost(root,
             "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n"
             "model\t\t: 33\nflags\t\t: fpu vme invlpgb tlbsync\n");
  absl::StatusOr<v1::HostInfo> host = CollectHostInfo(root, {});
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_TRUE(host->cpu().invlpgb_in_use());
}

TEST(HostInfoTest, MachineIdIsOptional) {
  TempDir dir;
  FakeSysroot root(dir);
  LayOutHost(root, kZen3Cpuinfo);
  ASSERT_EQ(::unlink(root.Path("/etc/machine-id").c_str()), 0);
  absl::StatusOr<v1::HostInfo> host = CollectHostInfo(root, {});
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(host->machine_id(), "");
}

TEST(HostInfoTest, MissingBootIdIsAnErrorNamingThePath) {
  TempDir dir;
  FakeSysroot root(dir);
  LayOutHost(root, kZen3Cpuinfo);
  ASSERT_EQ(::unlink(root.Path("/proc/sys/kernel/random/boot_id").c_str()), 0);
  absl::StatusOr<v1::HostInfo> host = CollectHostInfo(root, {});
  ASSERT_FALSE(host.ok());
  EXPECT_TRUE(absl::IsNotFound(host.status()));
  EXPECT_NE(host.status().message().find("boot_id"), std::string::npos);
}

TEST(HostInfoTest, CpuinfoWithoutProcessorIsRejected) {
  EXPECT_FALSE(ParseCpuInfo("").ok());
  EXPECT_FALSE(ParseCpuInfo("processor\t: 0\nflags\t: fpu\n").ok());
}

TEST(HostInfoTest, RealHostParses) {
  absl::StatusOr<v1::HostInfo> host = CollectHostInfo(Sysroot(), {});
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_FALSE(host->hostname().empty());
  EXPECT_FALSE(host->boot_id().empty());
  EXPECT_GE(host->logical_cpus(), 1u);
  EXPECT_FALSE(host->cpu().vendor().empty());
  // This boot started in the past, and after 2020.
  EXPECT_GT(host->boot_time_unix(), 1577836800);
  EXPECT_LE(host->boot_time_unix(), absl::ToUnixSeconds(absl::Now()));
}

}  // namespace
}  // namespace tlbfleet::agent
