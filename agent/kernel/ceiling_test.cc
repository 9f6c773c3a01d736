#include "agent/kernel/ceiling.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "agent/kernel/fake_sysroot_for_test.h"
#include "agent/kernel/mounts.h"
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

TEST(CeilingTest, WriteTheKernelRejectsKeepsItsErrnoText) {
  TempDir dir;
  FakeSysroot root(dir);
  root.WriteFile(kCeilingPath, "33\n");
  root.FailWrite(kCeilingPath, EINVAL);
  absl::StatusOr<int64_t> back = WriteCeiling(root, 512);
  EXPECT_TRUE(absl::IsInvalidArgument(back.status())) << back.status();
  EXPECT_NE(back.status().message().find("Invalid argument"), absl::string_view::npos)
      << back.status();
  root.FailWrite(kCeilingPath, ERANGE);
  back = WriteCeiling(root, 512);
  EXPECT_NE(back.status().message().find("Numerical result out of range"), absl::string_view::npos)
      << back.status();
}

TEST(CeilingTest, ParseCeilingSpec) {
  EXPECT_TRUE(ParseCeilingSpec("default")->is_default);
  EXPECT_EQ(ParseCeilingSpec("512")->pages, 512);
  EXPECT_FALSE(ParseCeilingSpec("512")->is_default);
  EXPECT_EQ(ParseCeilingSpec("0")->pages, 0);
  // Base 0, as the kernel's kstrtoint(buf, 0) reads the file.
  EXPECT_EQ(ParseCeilingSpec("0x200")->pages, 512);
  EXPECT_EQ(ParseCeilingSpec("010")->pages, 8);
  EXPECT_EQ(ParseCeilingSpec("2147483647")->pages, 2147483647);
  EXPECT_FALSE(ParseCeilingSpec("2147483648").ok());
  EXPECT_FALSE(ParseCeilingSpec("").ok());
  EXPECT_FALSE(ParseCeilingSpec("-1").ok());
  EXPECT_FALSE(ParseCeilingSpec("+1").ok());
  EXPECT_FALSE(ParseCeilingSpec(" 1").ok());
  EXPECT_FALSE(ParseCeilingSpec("12abc").ok());
  EXPECT_FALSE(ParseCeilingSpec("08").ok());  // not octal
  EXPECT_FALSE(ParseCeilingSpec("4294967296").ok());
}

TEST(CeilingTest, LockdownModes) {
  struct Case {
    const char* file;  // nullptr: no lockdown file
    const char* mode;
    const char* reason;
  };
  const Case cases[] = {
      {"[none] integrity confidentiality\n", "none", "operation not permitted (EPERM)"},
      {"none [integrity] confidentiality\n", "integrity", "kernel lockdown (integrity)"},
      {"none integrity [confidentiality]\n", "confidentiality",
       "kernel lockdown (confidentiality)"},
      {nullptr, "",
       "operation not permitted (EPERM; lockdown mode unknown: securityfs not mounted at "
       "/sys/kernel/security)"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    FakeSysroot root(dir);
    root.WriteFile(kCeilingPath, "33\n");
    root.WriteFile("/proc/mounts", kDebugfsMounts);
    if (c.file != nullptr) root.WriteFile(kLockdownPath, c.file);
    root.FailOpen(kCeilingPath, O_RDONLY, EPERM);
    root.FailOpen(kCeilingPath, O_WRONLY, EPERM);
    EXPECT_EQ(ReadLockdownMode(root), c.mode);
    v1::CeilingInfo info = ProbeCeiling(root);
    EXPECT_FALSE(info.writable());
    EXPECT_EQ(info.lockdown(), c.mode);
    EXPECT_EQ(info.reason(), c.reason) << (c.file ? c.file : "(no file)");
  }
}

TEST(CeilingTest, KernelWithoutDebugfs) {
  TempDir dir;
  FakeSysroot root(dir);
  root.WriteFile("/proc/mounts", "sysfs /sys sysfs rw 0 0\n");
  root.WriteFile("/proc/filesystems", "nodev\tsysfs\nnodev\ttracefs\n\text4\n");
  EXPECT_EQ(ProbeCeiling(root).reason(), "no debugfs (kernel built without DEBUG_FS)");
  root.WriteFile("/proc/filesystems", "nodev\tsysfs\nnodev\tdebugfs\n");
  EXPECT_EQ(ProbeCeiling(root).reason(), "debugfs not mounted");
}

// On the real machine, as the agent sees it: mount what is missing (as the agent does at
// start), then probe. This project's CI machines run with lockdown=integrity, and the
// probe must say exactly that. Unmounts only what it mounted.
TEST(CeilingTest, RealHostProbeReportsLockdownAfterMounting) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount securityfs and debugfs";
  Sysroot real;
  MountReport mounts;
  MountIfMissing(real, "securityfs", kSecurityfsDir, mounts);
  MountIfMissing(real, "debugfs", kDebugfsDir, mounts);
  EXPECT_TRUE(mounts.errors.empty()) << mounts.errors.front();
  std::string lockdown = ReadLockdownMode(real);
  v1::CeilingInfo info = ProbeCeiling(real);
  UndoMounts(mounts);
  ASSERT_FALSE(lockdown.empty()) << "no lockdown file even with securityfs mounted";
  EXPECT_EQ(info.lockdown(), lockdown);
  if (lockdown == "none") {
    // Not this project's CI kind of machine: the probe must not blame lockdown.
    EXPECT_EQ(info.reason().find("lockdown"), std::string::npos) << info.reason();
    return;
  }
  EXPECT_FALSE(info.readable());
  EXPECT_FALSE(info.writable());
  EXPECT_EQ(info.reason(), "kernel lockdown (" + lockdown + ")");
}

}  // namespace
}  // namespace tlbfleet::agent
