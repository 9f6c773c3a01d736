#include "agent/kernel/ceiling_health.h"

#include <unistd.h>

#include "agent/kernel/ceiling.h"
#include "agent/kernel/ceiling_control.h"
#include "agent/kernel/ceiling_lock.h"
#include "agent/kernel/fake_sysroot_for_test.h"
#include "common/files.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

class CeilingHealthTest : public ::testing::Test {
 protected:
  void SetUp() override { root_.WriteFile(kCeilingPath, "40\n"); }
  TempDir dir_;
  FakeSysroot root_{dir_};
  std::string marker_ = dir_.path() + "/ceiling-degraded";
  std::string journal_ = dir_.path() + "/ceiling-journal";
};

TEST_F(CeilingHealthTest, MarkerIsKeyedByBoot) {
  EXPECT_FALSE(ReadCeilingDegraded(marker_, "boot-1").has_value());
  ASSERT_TRUE(MarkCeilingDegraded(marker_, "boot-1", "restore failed:\nEPERM").ok());
  std::optional<CeilingDegraded> d = ReadCeilingDegraded(marker_, "boot-1");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->reason, "restore failed: EPERM");
  // After a reboot the tunable is the kernel's again: the marker goes.
  EXPECT_FALSE(ReadCeilingDegraded(marker_, "boot-2").has_value());
  EXPECT_EQ(::access(marker_.c_str(), F_OK), -1);
}

TEST_F(CeilingHealthTest, UnparseableMarkerStillDegrades) {
  ASSERT_TRUE(WriteFileAtomic(marker_, "???").ok());
  std::optional<CeilingDegraded> d = ReadCeilingDegraded(marker_, "boot-1");
  ASSERT_TRUE(d.has_value());
  EXPECT_NE(d->reason.find("does not parse"), std::string::npos);
}

TEST_F(CeilingHealthTest, HostInfoSaysDegradedAndNotWritable) {
  v1::HostInfo host;
  host.mutable_ceiling()->set_readable(true);
  host.mutable_ceiling()->set_writable(true);
  ApplyCeilingHealth(std::nullopt, host);
  EXPECT_FALSE(host.ceiling_degraded());
  EXPECT_TRUE(host.ceiling().writable());
  ApplyCeilingHealth(CeilingDegraded{"boot-1", "restore to 33 failed"}, host);
  EXPECT_TRUE(host.ceiling_degraded());
  EXPECT_EQ(host.ceiling_degraded_reason(), "restore to 33 failed");
  EXPECT_FALSE(host.ceiling().writable());
  EXPECT_EQ(host.ceiling().reason(), "degraded: restore to 33 failed");
}

TEST_F(CeilingHealthTest, KnownGoodWritesVerifiesAndClears) {
  ASSERT_TRUE(MarkCeilingDegraded(marker_, "boot-1", "x").ok());
  ASSERT_TRUE(WriteCeilingJournal(journal_, {"boot-1", 7}).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(DeclareCeilingKnownGood(root_, journal_, marker_, -1)));
  ASSERT_TRUE(DeclareCeilingKnownGood(root_, journal_, marker_, 33).ok());
  EXPECT_EQ(*ReadCeiling(root_), 33);
  EXPECT_EQ(::access(marker_.c_str(), F_OK), -1);
  EXPECT_EQ(::access(journal_.c_str(), F_OK), -1);
}

TEST_F(CeilingHealthTest, KnownGoodRefusesWhileAnotherHolderRuns) {
  ASSERT_TRUE(MarkCeilingDegraded(marker_, "boot-1", "x").ok());
  auto other = CeilingLock::Acquire(root_, CeilingLock::Mode::kShared, "/b/j", "boot-1");
  ASSERT_TRUE(other.ok());
  absl::Status s = DeclareCeilingKnownGood(root_, journal_, marker_, 33);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_EQ(*ReadCeiling(root_), 40);
  EXPECT_TRUE(ReadCeilingDegraded(marker_, "boot-1").has_value());
}

}  // namespace
}  // namespace tlbfleet::agent
