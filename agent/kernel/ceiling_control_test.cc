#include "agent/kernel/ceiling_control.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "agent/kernel/ceiling.h"
#include "agent/kernel/fake_sysroot_for_test.h"
#include "common/files.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

class CeilingControlTest : public ::testing::Test {
 protected:
  void SetUp() override { root_.WriteFile(kCeilingPath, "33\n"); }
  bool JournalExists() const { return ::access(journal_.c_str(), F_OK) == 0; }
  int64_t Ceiling() const { return *ReadCeiling(root_); }

  TempDir dir_;
  FakeSysroot root_{dir_};
  std::string journal_ = dir_.path() + "/ceiling-journal";
};

TEST_F(CeilingControlTest, JournalRoundTrip) {
  CeilingJournal j{"0b6c5d3c-9a4e-4e57-8f00-4b1a2f0e7c11", 33};
  EXPECT_EQ(FormatCeilingJournal(j), "boot_id 0b6c5d3c-9a4e-4e57-8f00-4b1a2f0e7c11\noriginal 33\n");
  ASSERT_TRUE(WriteCeilingJournal(journal_, j).ok());
  absl::StatusOr<CeilingJournal> back = ReadCeilingJournal(journal_);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->boot_id, j.boot_id);
  EXPECT_EQ(back->original, 33);
  EXPECT_FALSE(ParseCeilingJournal("boot_id x\n").ok());
  EXPECT_FALSE(ParseCeilingJournal("boot_id x\noriginal -1\n").ok());
  EXPECT_FALSE(ParseCeilingJournal("boot_id x\noriginal 3 3\n").ok());
  EXPECT_TRUE(absl::IsNotFound(ReadCeilingJournal(journal_ + ".none").status()));
}

TEST_F(CeilingControlTest, JournalsBeforeWritingAndRestoresAfter) {
  CeilingChanger changer(root_, journal_, "boot-1");
  absl::StatusOr<int64_t> applied = changer.Apply("512");
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(*applied, 512);
  EXPECT_EQ(Ceiling(), 512);
  absl::StatusOr<CeilingJournal> j = ReadCeilingJournal(journal_);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->boot_id, "boot-1");
  EXPECT_EQ(j->original, 33);
  ASSERT_TRUE(changer.Restore().ok());
  EXPECT_EQ(Ceiling(), 33);
  EXPECT_FALSE(JournalExists());
}

TEST_F(CeilingControlTest, DestructorRestores) {
  {
    CeilingChanger changer(root_, journal_, "boot-1");
    ASSERT_TRUE(changer.Apply("1").ok());
  }
  EXPECT_EQ(Ceiling(), 33);
  EXPECT_FALSE(JournalExists());
}

TEST_F(CeilingControlTest, DefaultIsTheValueThisBootStartedWith) {
  root_.WriteFile(kCeilingPath, "100\n");  // someone set it before the agent ran: that stays
  {
    CeilingChanger changer(root_, journal_, "boot-1");
    EXPECT_EQ(*changer.Apply("default"), 100);
  }
  // An earlier restore of this boot failed: the journal, not the current value, holds the
  // value the boot started with.
  ASSERT_TRUE(WriteCeilingJournal(journal_, {"boot-1", 33}).ok());
  CeilingChanger changer(root_, journal_, "boot-1");
  EXPECT_EQ(*changer.Apply("default"), 33);
  ASSERT_TRUE(changer.Restore().ok());
  EXPECT_EQ(Ceiling(), 33);
}

TEST_F(CeilingControlTest, JournalOfAnEarlierBootIsNotTheOriginal) {
  ASSERT_TRUE(WriteCeilingJournal(journal_, {"boot-0", 7}).ok());
  CeilingChanger changer(root_, journal_, "boot-1");
  ASSERT_TRUE(changer.Apply("512").ok());
  EXPECT_EQ(ReadCeilingJournal(journal_)->boot_id, "boot-1");
  EXPECT_EQ(ReadCeilingJournal(journal_)->original, 33);
  ASSERT_TRUE(changer.Restore().ok());
  EXPECT_EQ(Ceiling(), 33);
}

TEST_F(CeilingControlTest, KernelRejectionFailsWithErrnoTextAndRestores) {
  CeilingChanger changer(root_, journal_, "boot-1");
  root_.FailWrite(kCeilingPath, EINVAL, "512\n");  // the original is still accepted
  absl::StatusOr<int64_t> applied = changer.Apply("512");
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.status().message(), "cannot set the flush ceiling to 512: write 512 to " +
                                            root_.Path(kCeilingPath) + ": Invalid argument");
  EXPECT_TRUE(JournalExists());  // the original is still owed
  ASSERT_TRUE(changer.Restore().ok());
  EXPECT_EQ(Ceiling(), 33);
  EXPECT_FALSE(JournalExists());
}

TEST_F(CeilingControlTest, NotWritableFailsBeforeJournaling) {
  root_.WriteFile(kLockdownPath, "none [integrity] confidentiality\n");
  root_.FailOpen(kCeilingPath, O_RDONLY, EPERM);
  root_.FailOpen(kCeilingPath, O_WRONLY, EPERM);
  CeilingChanger changer(root_, journal_, "boot-1");
  absl::StatusOr<int64_t> applied = changer.Apply("512");
  EXPECT_EQ(applied.status().message(),
            "ceiling 512 requested but the flush ceiling is not writable on this host: "
            "kernel lockdown (integrity)");
  EXPECT_FALSE(JournalExists());
}

TEST_F(CeilingControlTest, RecoveryWithoutJournalDoesNothing) {
  root_.WriteFile(kCeilingPath, "512\n");
  CeilingRecovery r = RecoverCeiling(root_, journal_, "boot-1");
  EXPECT_EQ(r.outcome, CeilingRecovery::Outcome::kNoJournal);
  EXPECT_EQ(Ceiling(), 512);
}

TEST_F(CeilingControlTest, RecoveryDiscardsAJournalOfAnEarlierBoot) {
  ASSERT_TRUE(WriteCeilingJournal(journal_, {"boot-0", 7}).ok());
  CeilingRecovery r = RecoverCeiling(root_, journal_, "boot-1");
  EXPECT_EQ(r.outcome, CeilingRecovery::Outcome::kEarlierBoot) << r.detail;
  EXPECT_EQ(Ceiling(), 33);  // untouched: the reboot reset it
  EXPECT_FALSE(JournalExists());
}

TEST_F(CeilingControlTest, RecoveryMovesACorruptJournalAside) {
  ASSERT_TRUE(WriteFileAtomic(journal_, "garbage\n").ok());
  CeilingRecovery r = RecoverCeiling(root_, journal_, "boot-1");
  EXPECT_EQ(r.outcome, CeilingRecovery::Outcome::kCorrupt) << r.detail;
  EXPECT_FALSE(JournalExists());
  EXPECT_EQ(::access((journal_ + ".corrupt").c_str(), F_OK), 0);
  EXPECT_EQ(Ceiling(), 33);
}

// Its first line still names another boot: the reboot reset the tunable, whatever the rest
// said, so the host is not degraded.
TEST_F(CeilingControlTest, CorruptJournalOfAnEarlierBootIsHarmless) {
  ASSERT_TRUE(WriteFileAtomic(journal_, "boot_id boot-0\noriginal thirty-three\n").ok());
  CeilingRecovery r = RecoverCeiling(root_, journal_, "boot-1");
  EXPECT_EQ(r.outcome, CeilingRecovery::Outcome::kEarlierBoot) << r.detail;
  EXPECT_NE(r.detail.find("written in boot boot-0"), std::string::npos) << r.detail;
  EXPECT_FALSE(JournalExists());
}

TEST_F(CeilingControlTest, CorruptJournalOfThisBootLeavesTheValueUnknown) {
  ASSERT_TRUE(WriteFileAtomic(journal_, "boot_id boot-1\noriginal thirty-three\n").ok());
  CeilingRecovery r = RecoverCeiling(root_, journal_, "boot-1");
  EXPECT_EQ(r.outcome, CeilingRecovery::Outcome::kCorrupt) << r.detail;
  EXPECT_NE(r.detail.find("the value this boot started with is unknown"), std::string::npos);
  // Afterwards, without a journal, Apply must not take the current value for the boot's:
  // that is the caller's degraded marker's job (job_ceiling.h). Apply itself refuses a
  // journal it cannot read:
  ASSERT_TRUE(WriteFileAtomic(journal_, "garbage\n").ok());
  CeilingChanger changer(root_, journal_, "boot-1");
  absl::StatusOr<int64_t> applied = changer.Apply("default");
  EXPECT_TRUE(absl::IsDataLoss(applied.status())) << applied.status();
  EXPECT_EQ(*ReadFile(journal_), "garbage\n") << "a guess was journaled";
}

TEST_F(CeilingControlTest, RecoveryFailureKeepsTheJournal) {
  ASSERT_TRUE(WriteCeilingJournal(journal_, {"boot-1", 33}).ok());
  root_.FailWrite(kCeilingPath, EPERM);
  CeilingRecovery r = RecoverCeiling(root_, journal_, "boot-1");
  EXPECT_EQ(r.outcome, CeilingRecovery::Outcome::kRestoreFailed) << r.detail;
  EXPECT_TRUE(JournalExists());
}

// A process sets the ceiling through the agent's code and is SIGKILLed before it can restore
// it. The next start in the same boot finds the journal and puts the original back.
TEST_F(CeilingControlTest, CrashBetweenWriteAndRestoreIsUndoneAtNextStart) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(ready[0]);
    CeilingChanger changer(root_, journal_, "boot-1");
    bool ok = changer.Apply("512").ok();
    char c = ok ? 'y' : 'n';
    if (::write(ready[1], &c, 1) != 1) ::_exit(2);
    for (;;) ::pause();  // "running the workload" until killed
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(c, 'y');
  EXPECT_EQ(Ceiling(), 512);
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(Ceiling(), 512) << "nothing restored it: the process died";
  ASSERT_TRUE(JournalExists());

  CeilingRecovery r = RecoverCeiling(root_, journal_, "boot-1");
  EXPECT_EQ(r.outcome, CeilingRecovery::Outcome::kRestored) << r.detail;
  EXPECT_EQ(Ceiling(), 33);
  EXPECT_FALSE(JournalExists());
}

// The same crash, but the host rebooted before the agent came back: the journal is stale.
TEST_F(CeilingControlTest, CrashThenRebootDiscardsTheJournal) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    CeilingChanger changer(root_, journal_, "boot-1");
    ::_exit(changer.Apply("512").ok() ? 0 : 1);  // _exit: no destructor, no restore
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  root_.WriteFile(kCeilingPath, "33\n");  // the reboot reset the tunable
  CeilingRecovery r = RecoverCeiling(root_, journal_, "boot-2");
  EXPECT_EQ(r.outcome, CeilingRecovery::Outcome::kEarlierBoot);
  EXPECT_FALSE(JournalExists());
  EXPECT_EQ(Ceiling(), 33);
}

}  // namespace
}  // namespace tlbfleet::agent
