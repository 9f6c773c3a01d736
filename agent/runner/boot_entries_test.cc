#include "agent/runner/boot_entries.h"

#include <string>

#include "agent/kernel/fake_sysroot_for_test.h"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

using ::testing::HasSubstr;

constexpr char kTwoEntries[] = R"(
boot_entries:
  - name: old
    select: echo old > next-entry
    expect: {release: 6.1.0-57-amd64, cmdline: [tlbfleet.entry=old]}
  - name: new+deb12
    select: echo new > next-entry
    reboot: kexec -e
    expect:
      release: "6.12.*+deb12-amd64"
      cmdline: tlbfleet.entry=new
)";

void Boot(FakeSysroot& root, const std::string& release, const std::string& cmdline,
          const std::string& boot_id) {
  root.WriteFile("/proc/sys/kernel/osrelease", release + "\n");
  root.WriteFile("/proc/cmdline", cmdline + "\n");
  root.WriteFile("/proc/sys/kernel/random/boot_id", boot_id + "\n");
}

TEST(BootEntriesConfigTest, ParsesEntriesWithTheirExpectations) {
  absl::StatusOr<std::vector<BootEntry>> entries = ParseBootEntries(kTwoEntries, "agent.yaml");
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].name, "old");
  EXPECT_EQ((*entries)[0].select, "echo old > next-entry");
  EXPECT_EQ((*entries)[0].reboot, "");
  EXPECT_EQ((*entries)[0].release, "6.1.0-57-amd64");
  EXPECT_THAT((*entries)[0].cmdline, ::testing::ElementsAre("tlbfleet.entry=old"));
  EXPECT_EQ((*entries)[1].name, "new+deb12");
  EXPECT_EQ((*entries)[1].reboot, "kexec -e");
  EXPECT_THAT((*entries)[1].cmdline, ::testing::ElementsAre("tlbfleet.entry=new"));
}

TEST(BootEntriesConfigTest, ErrorsNameTheFileAndTheKey) {
  struct Case {
    const char* yaml;
    const char* message;
  } cases[] = {
      {"boot_entries:\n  - name: a\n    select: x\n", "f.yaml: boot_entries[0].expect: required"},
      {"boot_entries:\n  - name: a\n    select: x\n    expect: {}\n",
       "f.yaml: boot_entries[0].expect: give release and/or cmdline"},
      {"boot_entries:\n  - name: a b\n    select: x\n    expect: {release: r}\n",
       "f.yaml: boot_entries[0].name: 'a b' must be"},
      {"boot_entries:\n  - name: a\n    expect: {release: r}\n",
       "boot_entries[0].select: required"},
      {"boot_entries:\n  - {name: a, select: x, expect: {release: r}}\n"
       "  - {name: a, select: y, expect: {release: r}}\n",
       "boot_entries[1].name: entry 'a' appears twice"},
      {"boot_entries:\n  - {name: a, select: x, expect: {kernel: r}}\n",
       "boot_entries[0].expect.kernel: unknown key"},
      {"boot_entries:\n  - {name: a, select: x, command: y, expect: {release: r}}\n",
       "boot_entries[0].command: unknown key"},
      {"entries: []\n", "f.yaml: entries: unknown key (expected boot_entries)"},
      {"boot_entries: {a: 1}\n", "f.yaml: boot_entries: expected a list"},
      {"boot_entries: [\n", "f.yaml:2:1:"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<BootEntry>> entries = ParseBootEntries(c.yaml, "f.yaml");
    ASSERT_FALSE(entries.ok()) << c.yaml;
    EXPECT_EQ(entries.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(entries.status().message()), HasSubstr(c.message)) << c.yaml;
  }
}

TEST(BootEntriesConfigTest, CmdlineExpectationsAreWholeWords) {
  BootEntry e{"e1", "x", "", "6.1.*", {"tlbfleet.entry=e1", "pti=on"}};
  EXPECT_FALSE(BootMismatch(e, "6.1.0-57-amd64", "quiet tlbfleet.entry=e1 pti=on").has_value());
  EXPECT_THAT(BootMismatch(e, "6.1.0-57-amd64", "tlbfleet.entry=e10 nopti=on").value_or(""),
              HasSubstr("expected 'tlbfleet.entry=e1' in the kernel command line"));
  EXPECT_THAT(BootMismatch(e, "6.12.1", "tlbfleet.entry=e1 pti=on").value_or(""),
              HasSubstr("expected release 6.1.*, booted 6.12.1"));
}

class BootEntriesTest : public ::testing::Test {
 protected:
  BootEntriesTest() : root_(dir_) { entries_ = *ParseBootEntries(kTwoEntries, "f"); }
  TempDir dir_;
  TempDir state_;
  FakeSysroot root_;
  std::vector<BootEntry> entries_;
};

TEST_F(BootEntriesTest, ABootNobodySelectedIsTheEntryItMatches) {
  Boot(root_, "6.12.117+deb12-amd64", "console=ttyS0 tlbfleet.entry=new", "b1");
  absl::StatusOr<BootEntries> b = BootEntries::Load(entries_, state_.path(), root_);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->current(), "new+deb12");
  EXPECT_EQ(b->error(), "");
  v1::HostInfo host;
  b->Describe(&host);
  ASSERT_EQ(host.boot_entries_size(), 2);
  EXPECT_EQ(host.boot_entries(1).name(), "new+deb12");
  EXPECT_EQ(host.boot_entries(1).release(), "6.12.*+deb12-amd64");
  EXPECT_EQ(host.boot_entry(), "new+deb12");

  Boot(root_, "5.10.0-1-amd64", "console=ttyS0", "b2");
  b = BootEntries::Load(entries_, state_.path(), root_);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->current(), "");
  EXPECT_EQ(b->error(), "");
}

TEST_F(BootEntriesTest, SelectedEntryIsVerifiedOnTheNextBoot) {
  Boot(root_, "6.1.0-57-amd64", "tlbfleet.entry=old", "boot-1");
  absl::StatusOr<BootEntries> b = BootEntries::Load(entries_, state_.path(), root_);
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->current(), "old");
  // The select command runs in the agent's working directory; point it at the temp dir.
  entries_[1].select = "echo new > " + dir_.path() + "/next-entry";
  b = BootEntries::Load(entries_, state_.path(), root_);
  absl::StatusOr<std::string> reboot = b->Select("new+deb12", "boot-1", "syscall");
  ASSERT_TRUE(reboot.ok()) << reboot.status();
  EXPECT_EQ(*reboot, "kexec -e");  // the entry's own reboot command
  EXPECT_EQ(*ReadFile(dir_.path() + "/next-entry"), "new\n");

  // The agent restarts before the reboot went through: still the old boot and entry.
  b = BootEntries::Load(entries_, state_.path(), root_);
  EXPECT_EQ(b->current(), "old");

  // The wrong kernel came up: no entry, and the error names the entry and both kernels.
  Boot(root_, "6.1.0-57-amd64", "tlbfleet.entry=old", "boot-2");
  b = BootEntries::Load(entries_, state_.path(), root_);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->current(), "");
  EXPECT_THAT(b->error(), HasSubstr("entry new+deb12 expected release 6.12.*+deb12-amd64, booted "
                                    "6.1.0-57-amd64"));
  v1::HostInfo host;
  host.set_kernel_release("6.1.0-57-amd64");
  b->Describe(&host);
  v1::JobAssignment job;
  job.set_boot_entry("new+deb12");
  std::optional<std::string> why = b->CheckJob(job, host);
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("job needs boot entry new+deb12 (kernel 6.12.*+deb12-amd64)"));
  EXPECT_THAT(*why, HasSubstr("but this boot is no entry (kernel 6.1.0-57-amd64)"));
  EXPECT_THAT(*why, HasSubstr("expected release"));
  job.set_boot_entry("");
  EXPECT_FALSE(b->CheckJob(job, host).has_value());  // a job without an entry runs anywhere

  // A later boot is not the one the journal speaks for: matched by expectations again.
  Boot(root_, "6.1.0-57-amd64", "tlbfleet.entry=old", "boot-3");
  b = BootEntries::Load(entries_, state_.path(), root_);
  EXPECT_EQ(b->current(), "old");
  EXPECT_EQ(b->error(), "");
}

TEST_F(BootEntriesTest, TheRightKernelAfterASelectIsThatEntry) {
  Boot(root_, "6.1.0-57-amd64", "tlbfleet.entry=old", "boot-1");
  entries_[1].select = "true";
  absl::StatusOr<BootEntries> b = BootEntries::Load(entries_, state_.path(), root_);
  ASSERT_TRUE(b->Select("new+deb12", "boot-1", "").ok());
  Boot(root_, "6.12.117+deb12-amd64", "tlbfleet.entry=new", "boot-2");
  b = BootEntries::Load(entries_, state_.path(), root_);
  EXPECT_EQ(b->current(), "new+deb12");
  v1::HostInfo host;
  b->Describe(&host);
  v1::JobAssignment job;
  job.set_boot_entry("new+deb12");
  EXPECT_FALSE(b->CheckJob(job, host).has_value());
  job.set_boot_entry("old");
  EXPECT_THAT(b->CheckJob(job, host).value_or(""),
              HasSubstr("job needs boot entry old (kernel 6.1.0-57-amd64), but this boot is "
                        "entry new+deb12"));
  // The same boot again (an agent restart): still that entry.
  b = BootEntries::Load(entries_, state_.path(), root_);
  EXPECT_EQ(b->current(), "new+deb12");
}

TEST_F(BootEntriesTest, RefusesUnknownEntriesAndFailedSelects) {
  Boot(root_, "6.1.0-57-amd64", "tlbfleet.entry=old", "boot-1");
  entries_[0].select = "echo no grub here >&2; exit 3";
  absl::StatusOr<BootEntries> b = BootEntries::Load(entries_, state_.path(), root_);
  absl::Status unknown = b->CheckRebootable("6.3", "syscall");
  EXPECT_THAT(std::string(unknown.message()),
              HasSubstr("boot entry '6.3' is not in this agent's --boot-entries (it has old, "
                        "new+deb12)"));
  absl::StatusOr<std::string> failed = b->Select("old", "boot-1", "syscall");
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(std::string(failed.status().message()),
              HasSubstr("select command of boot entry 'old' failed"));
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("exited with status 3"));
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("no grub here"));
  // Nothing was journaled: the next start is still the old entry.
  EXPECT_FALSE(ReadFile(BootEntryJournalFile(state_.path())).ok());
  // Without any reboot command, an entry without its own cannot be booted.
  EXPECT_THAT(std::string(b->CheckRebootable("old", "").message()),
              HasSubstr("has no reboot command"));
  EXPECT_FALSE(b->CanReboot(""));
  EXPECT_TRUE(b->CanReboot("syscall"));
}

TEST(BootEntryJournalTest, RoundTrips) {
  BootEntryJournal j{"e1", "b0", "b1"};
  absl::StatusOr<BootEntryJournal> back = ParseBootEntryJournal(FormatBootEntryJournal(j));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->entry, "e1");
  EXPECT_EQ(back->from_boot_id, "b0");
  EXPECT_EQ(back->landed_boot_id, "b1");
  EXPECT_FALSE(ParseBootEntryJournal("garbage").ok());
}

}  // namespace
}  // namespace tlbfleet::agent
