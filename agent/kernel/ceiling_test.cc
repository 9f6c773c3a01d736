#include "agent/kernel/ceiling.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "agent/kernel/fake_sysroot_for_test.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

constexpr char kDebugfsMounts[] =
    "sysfs /sys sysfs rw,relatime 0 0\n"
    "debugfs /sys/kernel/debug debugfs rw,relatime 0 0\n";

TEST(CeilingTest, ReadableAndWritableFakeFile) {
  TempDir dir;
  FakeSysroot root(dir);
  root.WriteFile(kCeilingPath, "33\n");
  root.WriteFile(kLockdownPath, "[none] integrity confidentiality\n");
  v1::CeilingInfo info = ProbeCeiling(root);
  EXPECT_TRUE(info.readable());
  EXPECT_TRUE(info.writable());
  EXPECT_TRUE(info.has_value());
  EXPECT_EQ(info.value(), 33);
  EXPECT_EQ(info.reason(), "");
  EXPECT_EQ(info.lockdown(), "none");
}

TEST(CeilingTest, ProbeNeverWrites) {
  TempDir dir;
  FakeSysroot root(dir);
  root.WriteFile(kCeilingPath, "512\n");
  ProbeCeiling(root);
  EXPECT_EQ(*ReadCeiling(root), 512);
}

TEST(CeilingTest, LockdownIntegrityAndEpermGivesLockdownReason) {
  TempDir dir;
  FakeSysroot root(dir);
  root.WriteFile(kCeilingPath, "33\n");
  root.WriteFile(kLockdownPath, "none [integrity] confidentiality\n");
  root.WriteFile("/proc/mounts", kDebugfsMounts);
  // Root ignores permission bits, so the kernel's EPERM is injected.
  root.FailOpen(kCeilingPath, O_RDONLY, EPERM);
  root.FailOpen(kCeilingPath, O_WRONLY, EPERM);
  v1::CeilingInfo info = ProbeCeiling(root);
  EXPECT_FALSE(info.readable());
  EXPECT_FALSE(info.writable());
  EXPECT_FALSE(info.has_value());
  EXPECT_EQ(info.reason(), "kernel lockdown (integrity)");
  EXPECT_EQ(info.lockdown(), "integrity");
}

TEST(CeilingTest, LockdownConfidentiality) {
  TempDir dir;
  FakeSysroot root(dir);
  root.WriteFile(kCeilingPath, "33\n");
  root.WriteFile(kLockdownPath, "none integrity [confidentiality]\n");
  root.FailOpen(kCeilingPath, O_RDONLY, EPERM);
  root.FailOpen(kCeilingPath, O_WRONLY, EPERM);
  EXPECT_EQ(ProbeCeiling(root).reason(), "kernel lockdown (confidentiality)");
}

TEST(CeilingTest, EpermWithoutSecurityfsSaysSo) {
  TempDir dir;
  FakeSysroot root(dir);
  root.WriteFile(kCeilingPath, "33\n");
  root.FailOpen(kCeilingPath, O_RDONLY, EPERM);
  root.FailOpen(kCeilingPath, O_WRONLY, EPERM);
  v1::CeilingInfo info = ProbeCeiling(root);
  EXPECT_EQ(info.lockdown(), "");
  EXPECT_NE(info.reason().find("securityfs not mounted"), std::string::npos) << info.reason();
}

TEST(CeilingTest, EaccesMeansNotRoot) {
  TempDir dir;
  FakeSysroot root(dir);
  root.WriteFile(kCeilingPath, "33\n");
  root.FailOpen(kCeilingPath, O_RDONLY, EACCES);
  root.FailOpen(kCeilingPath, O_WRONLY, EACCES);
  EXPECT_EQ(ProbeCeiling(root).reason(), "not root");
}

TEST(CeilingTest, ReadableButNotWritable) {
  TempDir dir;
  FakeSysroot root(dir);
  root.WriteFile(kCeilingPath, "33\n");
  root.FailOpen(kCeilingPath, O_WRONLY, EACCES);
  v1::CeilingInfo info = ProbeCeiling(root);
  EXPECT_TRUE(info.readable());
  EXPECT_FALSE(info.writable());
  EXPECT_EQ(info.value(), 33);
  EXPECT_EQ(info.reason(), "not root");
}

TEST(CeilingTest, AbsentFileWithDebugfsMounted) {
  TempDir dir;
  FakeSysroot root(dir);
  root.WriteFile("/proc/mounts", kDebugfsMounts);
  v1::CeilingInfo info = ProbeCeiling(root);
  EXPECT_FALSE(info.readable());
  EXPECT_FALSE(info.writable());
  EXPECT_EQ(info.reason(), "file absent (kernel older than 3.17 or not x86)");
}

TEST(CeilingTest, AbsentFileInExistingX86Dir) {
  TempDir dir;
  FakeSysroot root(dir);
  root.MakeDir("/sys/kernel/debug/x86");
  EXPECT_EQ(ProbeCeiling(root).reason(), "file absent (kernel older than 3.17 or not x86)");
}

TEST(CeilingTest, DebugfsNotMounted) {
  TempDir dir;
  FakeSysroot root(dir);
  root.WriteFile("/proc/mounts", "sysfs /sys sysfs rw 0 0\n");
  EXPECT_EQ(ProbeCeiling(root).reason(), "debugfs not mounted");
}

TEST(CeilingTest, WriteReadsBack) {
  TempDir dir;
  FakeSysroot root(dir);
  root.WriteFile(kCeilingPath, "33\n");
  absl::StatusOr<int64_t> back = WriteCeiling(root, 512);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, 512);
  back = WriteCeiling(root, 1);  // shorter than what was there: the file must be truncated
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*ReadCeiling(root), 1);
}

TEST(CeilingTest, WriteUnderLockdownFails) {
  TempDir dir;
  FakeSysroot root(dir);
  root.WriteFile(kCeilingPath, "33\n");
  root.FailOpen(kCeilingPath, O_WRONLY, EPERM);
  absl::StatusOr<int64_t> back = WriteCeiling(root, 512);
  EXPECT_TRUE(absl::IsPermissionDenied(back.status())) << back.status();
}

TEST(CeilingTest, ParseCeilingSpec) {
  EXPECT_EQ(*ParseCeilingSpec("default"), kKernelDefaultCeiling);
  EXPECT_EQ(*ParseCeilingSpec("512"), 512);
  EXPECT_EQ(*ParseCeilingSpec("0"), 0);
  EXPECT_FALSE(ParseCeilingSpec("").ok());
  EXPECT_FALSE(ParseCeilingSpec("-1").ok());
  EXPECT_FALSE(ParseCeilingSpec("12abc").ok());
  EXPECT_FALSE(ParseCeilingSpec("4294967296").ok());
}

// On the real machine: if the kernel says it is locked down, the probe must say exactly why
// the ceiling is out of reach (this project's CI machines run with lockdown=integrity).
TEST(CeilingTest, RealHostUnderLockdownReportsIt) {
  Sysroot real;
  std::string lockdown = ReadLockdownMode(real);
  if (lockdown.empty()) {
    GTEST_SKIP() << "securityfs not mounted at /sys/kernel/security (or no lockdown LSM): "
                    "cannot tell whether this kernel is locked down";
  }
  v1::CeilingInfo info = ProbeCeiling(real);
  EXPECT_EQ(info.lockdown(), lockdown);
  if (lockdown == "none") {
    GTEST_SKIP() << "kernel not locked down; probe reason: '" << info.reason() << "'";
  }
  EXPECT_FALSE(info.writable());
  if (real.IsDirectory("/sys/kernel/debug/x86")) {
    EXPECT_FALSE(info.readable());
    EXPECT_EQ(info.reason(), "kernel lockdown (" + lockdown + ")");
  } else {
    // debugfs not mounted: that is the first obstacle, and the probe must name it.
    EXPECT_EQ(info.reason(), "debugfs not mounted");
  }
}

}  // namespace
}  // namespace tlbfleet::agent
