// Booting a kernel built from source: the reboot flow fetching an artifact from a memory
// source, running a real install command ("env > file") and a reboot command that reboots
// nothing, then BootEntries::Load as the agent that starts after the "reboot" runs it, over a
// fake sysroot.
#include "agent/runner/kernel_install.h"

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/kernel/fake_sysroot_for_test.h"
#include "agent/runner/reboot_flow.h"
#include "common/artifacts/artifact_for_test.h"
#include "common/artifacts/sha256.h"
#include "common/files.h"
#include "common/temp_dir_for_test.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The flow's notes to the controller.
class KernelNotes {
 public:
  RebootFlow::NoteSender Sender() {
    return [this](const std::string& text) {
      std::lock_guard<std::mutex> lock(mu_);
      notes_.push_back(text);
      cv_.notify_all();
    };
  }
  std::optional<std::string> Await(std::chrono::milliseconds timeout = 20s) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [this] { return !notes_.empty(); })) return std::nullopt;
    return notes_.front();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> notes_;
};

// The fetcher owns its source; the test keeps the memory source it serves from.
class SharedSource : public artifacts::ArtifactChunkSource {
 public:
  explicit SharedSource(artifacts::MemoryChunkSource& source) : source_(source) {}
  absl::StatusOr<std::string> ManifestText(std::string_view id) override {
    return source_.ManifestText(id);
  }
  absl::StatusOr<std::string> ReadChunk(std::string_view id, std::string_view name, uint64_t offset,
                                        uint64_t max_bytes) override {
    return source_.ReadChunk(id, name, offset, max_bytes);
  }

 private:
  artifacts::MemoryChunkSource& source_;
};

void BootHost(FakeSysroot& root, const std::string& release, const std::string& cmdline,
              const std::string& boot_id) {
  root.WriteFile("/proc/sys/kernel/osrelease", release + "\n");
  root.WriteFile("/proc/cmdline", cmdline + "\n");
  root.WriteFile("/proc/sys/kernel/random/boot_id", boot_id + "\n");
}

class KernelInstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    artifact_ = artifacts::MakeTestArtifact(
        artifacts::Sha256Hex("image of c11"),
        {{"bzImage", "image of c11"}, {"config", "CONFIG_X=y\n"}, {"modules.tar.gz", "mods"}});
    artifact_.manifest.build_id = artifacts::Sha256Hex("image of c11");
    artifact_.manifest.kernel_release = "6.1.192-lab";
    artifact_.manifest.arch = MachineArch();
    source_.Add(artifact_);
    state_dir_ = dir_.File("state");
    ASSERT_TRUE(MakeDirs(state_dir_).ok());
    BootHost(root_, "6.1.0-57-amd64", "root=/dev/vda", "boot-1");
    absl::StatusOr<Spool> spool = Spool::Open(state_dir_);
    ASSERT_TRUE(spool.ok()) << spool.status();
    outbox_ = std::make_unique<Outbox>(*std::move(spool));
    absl::StatusOr<BootEntries> entries = BootEntries::Load({}, state_dir_, root_);
    ASSERT_TRUE(entries.ok()) << entries.status();
    boot_entries_ = *std::move(entries);
  }

  KernelInstallOptions Install(const std::string& command) {
    KernelInstallOptions options;
    options.command = command;
    options.staging_dir = dir_.File("staging");
    options.state_dir = state_dir_;
    options.artifact_source = [this] { return std::make_unique<SharedSource>(source_); };
    options.machine_arch = MachineArch();
    return options;
  }

  std::unique_ptr<RebootFlow> Flow(const std::string& install, const std::string& reboot) {
    RebootOptions options;
    options.command = reboot;
    options.grace_seconds = 0.2;
    options.kernel = Install(install);
    return std::make_unique<RebootFlow>(options, boot_entries_, *outbox_, notes_.Sender());
  }

  v1::RebootRequest Request(const std::string& entry = "kernel-b7") const {
    v1::RebootRequest request;
    request.set_reason("boot 1 of arm new");
    request.set_boot_id("boot-1");
    request.set_boot_entry(entry);
    v1::KernelToBoot* kernel = request.mutable_kernel();
    kernel->set_artifact_id(artifact_.id());
    kernel->set_build_id(artifact_.manifest.build_id);
    kernel->set_kernel_release("6.1.192-lab");
    kernel->set_commit(artifact_.manifest.commit);
    kernel->set_source("linux");
    kernel->set_config("lab");
    return request;
  }

  // The agent that starts in the next boot.
  BootEntries Restart(const std::string& release, const std::string& cmdline) {
    BootHost(root_, release, cmdline, "boot-2");
    absl::StatusOr<BootEntries> entries = BootEntries::Load({}, state_dir_, root_);
    EXPECT_TRUE(entries.ok()) << entries.status();
    return entries.ok() ? *std::move(entries) : BootEntries();
  }

  std::string Tag() const { return BuildTag(artifact_.manifest.build_id); }

  TempDir dir_;
  FakeSysroot root_{dir_};
  artifacts::TestArtifact artifact_;
  artifacts::MemoryChunkSource source_;
  std::string state_dir_;
  std::unique_ptr<Outbox> outbox_;
  BootEntries boot_entries_;
  KernelNotes notes_;
};

TEST_F(KernelInstallTest, TheInstallCommandGetsTheArtifactThenTheHostReboots) {
  const std::string env_file = dir_.File("install-env");
  const std::string rebooted = dir_.File("rebooted");
  std::unique_ptr<RebootFlow> flow =
      Flow("env | grep ^TLBFLEET_ | sort > " + env_file, "touch " + rebooted);
  flow->OnRequest(Request(), "", "boot-1");
  EXPECT_TRUE(flow->rebooting());
  // The reboot command ran (and, this host staying up, the flow says so after the grace).
  EXPECT_THAT(notes_.Await().value_or(""), HasSubstr("the host was still up"));
  EXPECT_TRUE(std::filesystem::exists(rebooted));

  const std::string staged = dir_.File("staging/" + artifact_.id());
  const std::string build_id = artifact_.manifest.build_id;
  std::vector<std::string> env =
      absl::StrSplit(ReadFile(env_file).value(), '\n', absl::SkipEmpty());
  EXPECT_THAT(
      env,
      ElementsAre("TLBFLEET_ARTIFACT_ID=" + artifact_.id(), "TLBFLEET_BUILD_ID=" + build_id,
                  "TLBFLEET_BUILD_TAG=tlbfleet.build=" + build_id.substr(0, 16),
                  "TLBFLEET_COMMIT=" + artifact_.manifest.commit, "TLBFLEET_KERNEL_DIR=" + staged,
                  "TLBFLEET_KERNEL_IMAGE=" + staged + "/files/bzImage",
                  "TLBFLEET_KERNEL_RELEASE=6.1.192-lab",
                  "TLBFLEET_MODULES=" + staged + "/files/modules.tar.gz"));
  EXPECT_EQ(ReadFile(staged + "/files/bzImage").value(), "image of c11");

  // Journaled and kept for the next start.
  absl::StatusOr<BootEntryJournal> journal =
      ParseBootEntryJournal(ReadFile(BootEntryJournalFile(state_dir_)).value());
  ASSERT_TRUE(journal.ok());
  EXPECT_EQ(journal->entry, "kernel-b7");
  EXPECT_EQ(journal->from_boot_id, "boot-1");
  absl::StatusOr<std::vector<KernelEntry>> kept = LoadKernelEntries(state_dir_);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].name, "kernel-b7");
  EXPECT_EQ((*kept)[0].kernel_release, "6.1.192-lab");
  EXPECT_EQ((*kept)[0].artifact_id, artifact_.id());
}

TEST_F(KernelInstallTest, AFailingInstallCommandStopsTheReboot) {
  const std::string rebooted = dir_.File("rebooted");
  std::unique_ptr<RebootFlow> flow = Flow("echo no room in /boot; exit 3", "touch " + rebooted);
  flow->OnRequest(Request(), "", "boot-1");
  EXPECT_EQ(notes_.Await().value_or(""),
            "reboot failed: kernel install command for boot entry 'kernel-b7' failed: \"echo no "
            "room in /boot; exit 3\" exited with status 3: no room in /boot");
  EXPECT_FALSE(std::filesystem::exists(rebooted)) << "the reboot command ran";
  EXPECT_FALSE(std::filesystem::exists(BootEntryJournalFile(state_dir_)));
}

TEST_F(KernelInstallTest, AnArtifactOfAnotherBuildIsNotInstalled) {
  const std::string installed = dir_.File("installed");
  std::unique_ptr<RebootFlow> flow = Flow("touch " + installed, "true");
  v1::RebootRequest request = Request();
  request.mutable_kernel()->set_kernel_release("6.1.193-lab");
  flow->OnRequest(request, "", "boot-1");
  EXPECT_EQ(notes_.Await().value_or(""),
            absl::StrCat("reboot failed: artifact ", artifact_.id(),
                         " is release 6.1.192-lab, the request says 6.1.193-lab"));
  EXPECT_FALSE(std::filesystem::exists(installed));
}

TEST_F(KernelInstallTest, WithoutAnInstallCommandABuiltKernelIsRefused) {
  std::unique_ptr<RebootFlow> flow = Flow("", "true");
  flow->OnRequest(Request(), "", "boot-1");
  EXPECT_FALSE(flow->rebooting());
  EXPECT_EQ(notes_.Await().value_or(""),
            "boot entry 'kernel-b7' is a kernel built from source and this agent has no "
            "--kernel-install-command");
}

TEST_F(KernelInstallTest, RequestsThatNameNoUsableArtifactAreRefused) {
  std::unique_ptr<RebootFlow> flow = Flow("true", "true");
  v1::RebootRequest request = Request();
  request.mutable_kernel()->set_artifact_id("../../etc");
  flow->OnRequest(request, "", "boot-1");
  EXPECT_FALSE(flow->rebooting());
  EXPECT_THAT(notes_.Await().value_or(""), StartsWith("kernel.artifact_id: '../../etc' is not"));
}

TEST_F(KernelInstallTest, TheNextBootIsTheBuildWhenItsReleaseAndTagHold) {
  std::unique_ptr<RebootFlow> flow = Flow("true", "true");
  flow->OnRequest(Request(), "", "boot-1");
  ASSERT_TRUE(notes_.Await().has_value());  // the "still up" note: the reboot was attempted
  flow.reset();

  BootEntries next = Restart("6.1.192-lab", "root=/dev/vda " + Tag() + " quiet");
  EXPECT_EQ(next.current(), "kernel-b7");
  EXPECT_EQ(next.error(), "");
  v1::HostInfo host;
  next.Describe(&host);
  EXPECT_EQ(host.boot_entry(), "kernel-b7");
  EXPECT_EQ(host.build_id(), artifact_.manifest.build_id);
  EXPECT_EQ(host.commit(), artifact_.manifest.commit);
  EXPECT_EQ(host.boot_entries_size(), 0) << "kernel entries are not configured entries";
  // A job for the build's entry may run on this boot.
  v1::JobAssignment job;
  job.set_boot_entry("kernel-b7");
  EXPECT_FALSE(next.CheckJob(job, host).has_value());
  // Asking to boot it again without its artifact is refused, not run as a select command.
  EXPECT_THAT(std::string(next.CheckRebootable("kernel-b7", "true").message()),
              HasSubstr("a kernel built from source"));
}

TEST_F(KernelInstallTest, TheWrongBootNamesTheBuildAndWhatBooted) {
  std::unique_ptr<RebootFlow> flow = Flow("true", "true");
  flow->OnRequest(Request(), "", "boot-1");
  ASSERT_TRUE(notes_.Await().has_value());
  flow.reset();

  BootEntries next = Restart("6.1.0-57-amd64", "root=/dev/vda");
  EXPECT_EQ(next.current(), "");
  const std::string b16 = artifact_.manifest.build_id.substr(0, 16);
  EXPECT_EQ(next.error(), absl::StrCat("entry kernel-b7 expected build ", b16,
                                       " release 6.1.192-lab, booted 6.1.0-57-amd64 without "
                                       "tlbfleet.build=",
                                       b16));
  v1::HostInfo host;
  next.Describe(&host);
  EXPECT_EQ(host.build_id(), "");
  EXPECT_EQ(host.commit(), "");
  EXPECT_EQ(host.boot_entry_error(), next.error());
}

TEST_F(KernelInstallTest, TheRightReleaseWithoutTheTagIsNotTheBuild) {
  std::unique_ptr<RebootFlow> flow = Flow("true", "true");
  flow->OnRequest(Request(), "", "boot-1");
  ASSERT_TRUE(notes_.Await().has_value());
  flow.reset();

  BootEntries next = Restart("6.1.192-lab", "root=/dev/vda tlbfleet.build=0000000000000000");
  EXPECT_EQ(next.current(), "");
  EXPECT_THAT(next.error(), HasSubstr("booted 6.1.192-lab without " + Tag()));
  // A later boot that nobody journaled, but that carries the tag, is the build again.
  BootHost(root_, "6.1.192-lab", Tag(), "boot-3");
  absl::StatusOr<BootEntries> later = BootEntries::Load({}, state_dir_, root_);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->current(), "kernel-b7");
}

TEST(KernelEntriesTest, OnlyTheNewestAreKept) {
  TempDir dir;
  for (int i = 1; i <= 10; ++i) {
    KernelEntry entry{absl::StrCat("kernel-b", i), artifacts::Sha256Hex(absl::StrCat(i)),
                      "6.1.0-lab", std::string(40, 'a'), artifacts::Sha256Hex("a")};
    ASSERT_TRUE(SaveKernelEntry(dir.path(), entry).ok());
  }
  // Saving one again makes it the newest, not a second copy.
  KernelEntry again{"kernel-b4", artifacts::Sha256Hex("4"), "6.1.0-lab", "", ""};
  ASSERT_TRUE(SaveKernelEntry(dir.path(), again).ok());
  absl::StatusOr<std::vector<KernelEntry>> kept = LoadKernelEntries(dir.path());
  ASSERT_TRUE(kept.ok()) << kept.status();
  std::vector<std::string> names;
  for (const KernelEntry& e : *kept) names.push_back(e.name);
  EXPECT_THAT(names, ElementsAre("kernel-b3", "kernel-b5", "kernel-b6", "kernel-b7", "kernel-b8",
                                 "kernel-b9", "kernel-b10", "kernel-b4"));
}

TEST(KernelEntriesTest, ACorruptFileIsRefusedNamingTheLine) {
  EXPECT_THAT(
      std::string(ParseKernelEntries("name=kernel-b1 build=xyz release=r\n").status().message()),
      HasSubstr("kernel-entries line 1: kernel entry build_id: must be at least 16"));
  EXPECT_THAT(std::string(ParseKernelEntries("colour=blue\n").status().message()),
              HasSubstr("unknown key 'colour'"));
  KernelEntry entry{"kernel-b1", std::string(64, 'f'), "6.1.0 lab", "", ""};
  EXPECT_THAT(std::string(ValidateKernelEntry(entry).message()),
              HasSubstr("kernel_release: must be printable, without spaces"));
}

}  // namespace
}  // namespace tlbfleet::agent
