#include "agent/kernel/ceiling_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include "agent/kernel/ceiling_control.h"
#include "agent/kernel/fake_sysroot_for_test.h"
#include "common/files.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

using Mode = CeilingLock::Mode;

class CeilingLockTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<CeilingLock>> Take(Mode mode, const std::string& journal) {
    return CeilingLock::Acquire(root_, mode, journal, "boot-1");
  }
  std::string LockText() const { return *ReadFile(root_.Path(kCeilingLockPath)); }

  TempDir dir_;
  FakeSysroot root_{dir_};
};

TEST_F(CeilingLockTest, HolderLine) {
  EXPECT_EQ(FormatCeilingLockHolder(42, "/s/ceiling-journal"),
            "pid 42 journal /s/ceiling-journal\n");
  EXPECT_EQ(CeilingLockHolderJournal("pid 42 journal /s/ceiling-journal\n"), "/s/ceiling-journal");
  EXPECT_EQ(CeilingLockHolderJournal(""), "");
  EXPECT_EQ(CeilingLockHolderJournal("pid 42\n"), "");
}

TEST_F(CeilingLockTest, ExclusiveExcludesEveryoneAndNamesItself) {
  auto a = Take(Mode::kExclusive, "/a/ceiling-journal");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(LockText(), FormatCeilingLockHolder(::getpid(), "/a/ceiling-journal"));
  for (Mode m : {Mode::kExclusive, Mode::kShared}) {
    auto b = Take(m, "/b/ceiling-journal");
    ASSERT_TRUE(absl::IsUnavailable(b.status())) << b.status();
    EXPECT_NE(b.status().message().find("held by pid " + std::to_string(::getpid()) +
                                        " journal /a/ceiling-journal"),
              std::string::npos)
        << b.status();
  }
  a->reset();
  EXPECT_EQ(LockText(), "") << "a clean release leaves no holder line";
  EXPECT_TRUE(Take(Mode::kExclusive, "/b/ceiling-journal").ok());
}

TEST_F(CeilingLockTest, SharedHoldersCoexistButExcludeAWriter) {
  auto a = Take(Mode::kShared, "/a/j");
  auto b = Take(Mode::kShared, "/b/j");
  ASSERT_TRUE(a.ok() && b.ok());
  auto w = Take(Mode::kExclusive, "/c/j");
  ASSERT_TRUE(absl::IsUnavailable(w.status())) << w.status();
  EXPECT_NE(w.status().message().find("a job that observes the ceiling"), std::string::npos);
}

// The kernel drops a dead process's flock; its line stays and tells the next holder.
TEST_F(CeilingLockTest, LineOfAHolderThatDiedMidChangeStopsTheNextExclusiveHolder) {
  const std::string journal_a = dir_.path() + "/a-journal";
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto held = CeilingLock::Acquire(root_, Mode::kExclusive, journal_a, "boot-1");
    if (!held.ok() || !WriteCeilingJournal(journal_a, {"boot-1", 33}).ok()) ::_exit(1);
    ::_exit(0);  // dies holding it: no destructor runs
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_EQ(WEXITSTATUS(status), 0);

  auto b = Take(Mode::kExclusive, dir_.path() + "/b-journal");
  ASSERT_TRUE(absl::IsFailedPrecondition(b.status())) << b.status();
  EXPECT_NE(b.status().message().find(journal_a), std::string::npos);
  EXPECT_TRUE(Take(Mode::kShared, dir_.path() + "/b-journal").ok()) << "observing is fine";
  EXPECT_TRUE(Take(Mode::kExclusive, journal_a).ok()) << "its own agent may recover";
  // Once that journal is gone (restored), anyone may take it.
  ASSERT_TRUE(RemoveCeilingJournal(journal_a).ok());
  root_.WriteFile(kCeilingLockPath, FormatCeilingLockHolder(pid, journal_a));
  EXPECT_TRUE(Take(Mode::kExclusive, dir_.path() + "/b-journal").ok());
}

TEST_F(CeilingLockTest, DeadHoldersJournalOfAnEarlierBootDoesNotCount) {
  const std::string journal_a = dir_.path() + "/a-journal";
  ASSERT_TRUE(WriteCeilingJournal(journal_a, {"boot-0", 33}).ok());
  root_.WriteFile(kCeilingLockPath, FormatCeilingLockHolder(1, journal_a));
  EXPECT_TRUE(Take(Mode::kExclusive, dir_.path() + "/b-journal").ok());
}

}  // namespace
}  // namespace tlbfleet::agent
