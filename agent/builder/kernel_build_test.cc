#include "agent/builder/kernel_build.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/builder/test_repo_for_test.h"
#include "common/artifacts/manifest.h"
#include "common/files.h"
#include "common/scoped_fd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent::builder {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

std::string Sha256Sum(const std::string& path) {
  Command command;
  command.argv = {"sha256sum", path};
  absl::StatusOr<std::vector<std::string>> out = CommandOutput(command);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() && !out->empty() ? out->front().substr(0, 64) : "";
}

struct timespec MTime(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mtim;
}

// Which files a directory holds (names only), to see that nothing partial was left.
std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class KernelBuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = repo_.Commit({{"Makefile", kFakeKernelMakefile},
                          {"VERSION", "6.1.0-fake\n"},
                          {".gitignore", "*.o\n/arch/\n/System.map\n/.config\n"},
                          {"configs/defconfig", "CONFIG_FOO=y\n"},
                          {"configs/tinyconfig", "CONFIG_TINY=y\n"},
                          {"kernel/a.c", "int a;\n"},
                          {"kernel/b.c", "int b;\n"}},
                         "fake kernel 6.1");
    std::ofstream(Temp("mods.config")) << "CONFIG_MODULES=y\n";
    std::ofstream(Temp("frag.config")) << "CONFIG_EXT4_FS=m\n# CONFIG_FOO is not set\n"
                                          "CONFIG_UNMET=y\n";
    const std::string yaml = absl::StrCat(
        "sources:\n  linux:\n    repository: ", repo_.path(), "\n    work_dir: ", Temp("build"),
        "\nconfigs:\n  lab: {base: defconfig}\n  tiny: {base: tinyconfig}\n"
        "  mods: {base: ",
        Temp("mods.config"), ", fragments: [", Temp("frag.config"), "]}\n");
    sources_ = KernelSources::Parse(yaml, "test").value();
  }

  std::string Temp(const std::string& name) const { return repo_.temp().File(name); }
  std::string Artifacts() const { return Temp("artifacts"); }
  std::string Tree(const std::string& config) const { return Temp("build/" + config); }

  BuildRequest Request(const std::string& commit, const std::string& name,
                       const std::string& config = "lab") const {
    BuildRequest request;
    request.source = "linux";
    request.config = config;
    request.commit = commit;
    request.artifact_dir = Artifacts() + "/" + name;
    return request;
  }

  // Builds with a log kept in log_; the build's own status must be OK.
  BuildResult Build(const BuildRequest& request, BuilderOptions options = {}) {
    if (options.jobs == 0) options.jobs = 2;
    KernelBuilder builder(sources_, options);
    log_.clear();
    absl::StatusOr<BuildResult> result =
        builder.Build(request, [this](std::string_view line) { log_.emplace_back(line); });
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *std::move(result) : BuildResult{};
  }

  TestRepo repo_;
  std::string base_;
  KernelSources sources_;
  std::vector<std::string> log_;
};

TEST_F(KernelBuildTest, BuildsAnArtifactWithItsManifestAndChecksums) {
  BuildResult result = Build(Request(base_, "one"));
  ASSERT_TRUE(result.ok()) << result.failure->reason << "\n" << absl::StrJoin(log_, "\n");
  const std::string dir = Artifacts() + "/one";
  EXPECT_EQ(result.artifact_dir, dir);
  EXPECT_THAT(Listing(Artifacts()), testing::ElementsAre("one"));  // nothing partial beside it
  EXPECT_THAT(Listing(dir), testing::ElementsAre("files", "manifest"));
  EXPECT_THAT(Listing(dir + "/files"), testing::ElementsAre("System.map", "bzImage", "config"));

  // The manifest on disk is the canonical text of the one returned, and every checksum in it
  // is what sha256sum says.
  absl::StatusOr<artifacts::ArtifactManifest> manifest =
      artifacts::ParseManifest(ReadFile(dir + "/manifest").value());
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(artifacts::EncodeManifest(*manifest), artifacts::EncodeManifest(result.manifest));
  EXPECT_EQ(manifest->source, "linux");
  EXPECT_EQ(manifest->config, "lab");
  EXPECT_EQ(manifest->commit, base_);
  EXPECT_EQ(manifest->arch, "x86_64");
  EXPECT_EQ(manifest->kernel_release, "6.1.0-fake");
  EXPECT_THAT(manifest->compiler, HasSubstr("gcc"));
  EXPECT_EQ(manifest->build_id, Sha256Sum(dir + "/files/bzImage"));
  ASSERT_THAT(manifest->files, SizeIs(3));
  for (const artifacts::ArtifactFile& file : manifest->files) {
    EXPECT_EQ(file.sha256, Sha256Sum(dir + "/files/" + file.name)) << file.name;
    EXPECT_TRUE(artifacts::VerifyArtifactFile(dir, file).ok()) << file.name;
  }

  // Built from this commit's files, with the fixed build identity.
  const std::string image = ReadFile(dir + "/files/bzImage").value();
  EXPECT_THAT(image, HasSubstr("int a;\nint b;\nCONFIG_FOO=y\n"));
  EXPECT_THAT(image, HasSubstr("x86_64 Tue, 14 Nov 2023 22:13:20 +0000 tlbfleet@tlbfleet"));
  EXPECT_EQ(ReadFile(dir + "/files/config").value(), "CONFIG_FOO=y\n");
  EXPECT_THAT(log_, Contains(AllOf(HasSubstr("==> make ARCH=x86_64"), HasSubstr(" defconfig"))));
  EXPECT_THAT(log_, Contains(AllOf(HasSubstr("==> make ARCH=x86_64"), HasSubstr("-j2 all"))));
  if (FindProgram("ccache").ok()) {
    EXPECT_THAT(log_, Contains(HasSubstr("'CC=ccache gcc' -j2 all")));
  }
  EXPECT_THAT(log_, Contains("Kernel: arch/x86/boot/bzImage is ready"));
  EXPECT_THAT(log_, Contains("6.1.0-fake"));                                // make -s kernelrelease
  EXPECT_THAT(log_, Not(Contains(HasSubstr("Free Software Foundation"))));  // gcc --version
  EXPECT_THAT(result.warnings, IsEmpty());
}

TEST_F(KernelBuildTest, NeighbouringCommitReusesTheBuildTree) {
  BuildResult first = Build(Request(base_, "first"));
  ASSERT_TRUE(first.ok()) << first.failure->reason;
  const struct timespec a_before = MTime(Tree("lab") + "/kernel/a.o");
  EXPECT_THAT(log_, Contains(HasSubstr("CC      kernel/a.o")));

  const std::string next = repo_.Commit({{"kernel/b.c", "int b = 2;\n"}}, "b: initialise");
  BuildResult second = Build(Request(next, "second"));
  ASSERT_TRUE(second.ok()) << second.failure->reason;
  // Only what the commit changed was compiled again; a.o is the first build's.
  EXPECT_THAT(log_, Contains(HasSubstr("CC      kernel/b.o")));
  EXPECT_THAT(log_, Not(Contains(HasSubstr("CC      kernel/a.o"))));
  const struct timespec a_after = MTime(Tree("lab") + "/kernel/a.o");
  EXPECT_EQ(a_after.tv_sec, a_before.tv_sec);
  EXPECT_EQ(a_after.tv_nsec, a_before.tv_nsec);
  // Another commit, another image; both artifacts stand.
  EXPECT_NE(second.manifest.build_id, first.manifest.build_id);
  EXPECT_EQ(second.manifest.commit, next);
  EXPECT_THAT(Listing(Artifacts()), testing::ElementsAre("first", "second"));
}

TEST_F(KernelBuildTest, FailedBuildGivesTheReasonAndNoArtifact) {
  const std::string broken =
      repo_.Commit({{"kernel/broken.c", "#error half a change\n"}}, "broken: half a change");
  BuildResult result = Build(Request(broken, "broken", "tiny"));
  ASSERT_FALSE(result.ok());
  const BuildFailure& failure = *result.failure;
  EXPECT_EQ(failure.kind, BuildFailure::Kind::kBuild);
  EXPECT_EQ(failure.target, "kernel/broken.o");
  EXPECT_EQ(failure.exit_status, 2);  // make's own, after its recipe's Error 1
  EXPECT_THAT(failure.step, HasSubstr("-j2 all"));
  EXPECT_THAT(failure.reason, HasSubstr("target kernel/broken.o failed (Error 1); exited with "
                                        "status 2"));
  EXPECT_THAT(failure.log_tail, Contains(HasSubstr("kernel/broken.c:1:2: error: #error")));
  EXPECT_THAT(failure.log_tail, SizeIs(testing::Le(kLogTailLines)));
  EXPECT_THAT(Listing(Artifacts()), IsEmpty());
}

TEST_F(KernelBuildTest, LogTailKeepsTheLastLines) {
  std::map<std::string, std::optional<std::string>> files;
  for (int i = 0; i < 60; ++i) files[absl::StrCat("kernel/m", i, ".c")] = "int m;\n";
  files["kernel/zz.c"] = "#error last\n";
  const std::string many = repo_.Commit(files, "many files, the last one broken");
  BuildResult result = Build(Request(many, "many"), {.jobs = 1});
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.failure->log_tail, SizeIs(kLogTailLines));
  EXPECT_THAT(result.failure->log_tail.back(), HasSubstr("Error 1"));
  EXPECT_THAT(result.failure->log_tail, Not(Contains(HasSubstr("==> make"))));  // scrolled off
}

TEST_F(KernelBuildTest, DiskFullDuringMakeIsAHostFailure) {
  const std::string full = repo_.Commit({{"kernel/c.c", "#nospace\n"}}, "c: needs room");
  BuildResult result = Build(Request(full, "full"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.failure->kind, BuildFailure::Kind::kHost);
  EXPECT_THAT(result.failure->reason, HasSubstr("disk full (No space left on device) during make"));
  EXPECT_THAT(Listing(Artifacts()), IsEmpty());
}

// Fills up as soon as anything is written through it.
class FullDisk : public artifacts::DiskWriter {
 public:
  absl::Status WriteAt(int fd, uint64_t offset, std::string_view bytes,
                       std::string_view path) override {
    return ErrnoStatus(ENOSPC, "write " + std::string(path));
  }
};

TEST_F(KernelBuildTest, DiskFullWhileCollectingTheArtifactLeavesNothing) {
  FullDisk disk;
  BuildResult result = Build(Request(base_, "full"), {.disk = &disk});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.failure->kind, BuildFailure::Kind::kHost);
  EXPECT_THAT(result.failure->reason, HasSubstr("disk full: collect the artifact"));
  EXPECT_THAT(Listing(Artifacts()), IsEmpty());
}

TEST_F(KernelBuildTest, CancelKillsTheBuild) {
  const std::string slow = repo_.Commit({{"kernel/s.c", "#slow\n"}}, "s: takes its time");
  ScopedFd cancel(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  ASSERT_TRUE(cancel);
  BuildRequest request = Request(slow, "slow");
  request.cancel_fd = cancel.get();
  KernelBuilder builder(sources_, {.jobs = 2});
  // Cancelled from the log callback once the slow step is under way (its `sleep 30` with it).
  absl::StatusOr<BuildResult> result = builder.Build(request, [&](std::string_view line) {
    if (line.starts_with("slow:")) {
      uint64_t one = 1;
      ASSERT_EQ(::write(cancel.get(), &one, sizeof one), 8);
    }
  });
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_FALSE(result->ok());
  EXPECT_EQ(result->failure->kind, BuildFailure::Kind::kCancelled);
  EXPECT_THAT(result->failure->reason, HasSubstr("cancelled during make"));
  EXPECT_LT(result->seconds, 10);
  EXPECT_THAT(Listing(Artifacts()), IsEmpty());
}

TEST_F(KernelBuildTest, RevertBuildsBadWithoutTheCulprit) {
  const std::string culprit = repo_.Commit({{"kernel/b.c", "int b = 2;\n"}}, "b: initialise");
  const std::string bad = repo_.Commit({{"kernel/a.c", "int a = 1;\n"}}, "a: initialise");
  BuildRequest request = Request(bad, "reverted");
  request.revert = culprit;
  std::vector<CommitInfo> announced;
  request.on_commit = [&](const CommitInfo& info) { announced.push_back(info); };
  BuildResult result = Build(request);
  ASSERT_TRUE(result.ok()) << result.failure->reason << "\n" << absl::StrJoin(log_, "\n");

  // The commit built is the revert, a child of bad, with git revert's message.
  const std::string revert = result.commit.hash;
  ASSERT_TRUE(IsFullCommitHash(revert)) << revert;
  EXPECT_NE(revert, bad);
  EXPECT_EQ(repo_.Git({"rev-parse", revert + "^"}).at(0), bad);
  EXPECT_EQ(result.commit.subject, "Revert \"b: initialise\"");
  EXPECT_EQ(result.commit.author, "tlbfleet <tlbfleet@localhost>");
  EXPECT_THAT(repo_.Git({"log", "-1", "--format=%B", revert}),
              Contains("This reverts commit " + culprit + "."));
  ASSERT_THAT(announced, SizeIs(1));
  EXPECT_EQ(announced[0].hash, revert);
  EXPECT_EQ(result.manifest.commit, revert);
  // Bad's files, but b.c as it was before the culprit.
  const std::string dir = Artifacts() + "/reverted";
  EXPECT_THAT(ReadFile(dir + "/files/bzImage").value(),
              HasSubstr("int a = 1;\nint b;\nCONFIG_FOO=y\n"));
  EXPECT_EQ(artifacts::ParseManifest(ReadFile(dir + "/manifest").value())->commit, revert);
  // Built with bad's committer date (the revert's own): one revert, one timestamp.
  EXPECT_EQ(result.commit.commit_date_rfc2822,
            GitRepo(repo_.path()).Describe(bad)->commit_date_rfc2822);
  EXPECT_THAT(log_, Contains(HasSubstr("==> git revert " + culprit + " onto " + bad)));
  // Kept reachable, and nothing of the repository's own checkout moved.
  EXPECT_EQ(repo_.Git({"rev-parse", std::string(kRevertRefPrefix) + revert}).at(0), revert);
  EXPECT_EQ(repo_.Git({"rev-parse", "HEAD"}).at(0), bad);
  EXPECT_THAT(repo_.Git({"status", "--porcelain"}), IsEmpty());

  // The same revert again (another build, the same tree): the same commit, the same image.
  BuildRequest again = Request(bad, "again");
  again.revert = culprit;
  BuildResult second = Build(again);
  ASSERT_TRUE(second.ok()) << second.failure->reason;
  EXPECT_EQ(second.commit.hash, revert);
  EXPECT_EQ(second.manifest.build_id, result.manifest.build_id);
}

TEST_F(KernelBuildTest, RevertThatDoesNotApplyFailsWithGitsWords) {
  const std::string culprit = repo_.Commit({{"kernel/b.c", "int b = 2;\n"}}, "b: initialise");
  const std::string bad = repo_.Commit({{"kernel/b.c", "int b = 3;\n"}}, "b: three");
  BuildRequest request = Request(bad, "conflict");
  request.revert = culprit;
  bool announced = false;
  request.on_commit = [&](const CommitInfo&) { announced = true; };
  BuildResult result = Build(request);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.failure->kind, BuildFailure::Kind::kBuild);
  EXPECT_THAT(result.failure->reason,
              testing::StartsWith(absl::StrCat("the revert of ", culprit.substr(0, 12),
                                               " does not apply onto ", bad.substr(0, 12), ": ")));
  EXPECT_THAT(result.failure->reason, HasSubstr("kernel/b.c"));  // git's words name the file
  EXPECT_THAT(result.failure->log_tail, Contains("==> failed: " + result.failure->reason));
  EXPECT_FALSE(announced);
  EXPECT_EQ(result.commit.hash, "");
  EXPECT_THAT(Listing(Artifacts()), IsEmpty());
  EXPECT_FALSE(fs::exists(Tree("lab")));  // nothing was checked out
  EXPECT_THAT(repo_.Git({"for-each-ref", kRevertRefPrefix}), IsEmpty());

  // A revert that is not a commit of the repository is refused before anything.
  KernelBuilder builder(sources_);
  request.revert = std::string(40, 'b');
  request.artifact_dir = Artifacts() + "/unknown";
  absl::Status refused = builder.Build(request, nullptr).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("revert: " + request.revert + " is not a commit of"));
}

TEST_F(KernelBuildTest, CancelKillsTheBuildOfARevert) {
  const std::string culprit = repo_.Commit({{"kernel/b.c", "int b = 2;\n"}}, "b: initialise");
  const std::string slow = repo_.Commit({{"kernel/s.c", "#slow\n"}}, "s: takes its time");
  ScopedFd cancel(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  ASSERT_TRUE(cancel);
  BuildRequest request = Request(slow, "slow");
  request.revert = culprit;
  request.cancel_fd = cancel.get();
  KernelBuilder builder(sources_, {.jobs = 2});
  absl::StatusOr<BuildResult> result = builder.Build(request, [&](std::string_view line) {
    if (line.starts_with("slow:")) {
      uint64_t one = 1;
      ASSERT_EQ(::write(cancel.get(), &one, sizeof one), 8);
    }
  });
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_FALSE(result->ok());
  EXPECT_EQ(result->failure->kind, BuildFailure::Kind::kCancelled);
  EXPECT_THAT(result->failure->reason, HasSubstr("cancelled during make"));
  EXPECT_EQ(repo_.Git({"rev-parse", result->commit.hash + "^"}).at(0), slow);
  EXPECT_LT(result->seconds, 10);
  EXPECT_THAT(Listing(Artifacts()), IsEmpty());
}

TEST_F(KernelBuildTest, ModulesAndFragments) {
  BuildResult result = Build(Request(base_, "mods", "mods"));
  ASSERT_TRUE(result.ok()) << result.failure->reason << "\n" << absl::StrJoin(log_, "\n");
  const std::string dir = Artifacts() + "/mods";
  EXPECT_THAT(Listing(dir + "/files"),
              testing::ElementsAre("System.map", "bzImage", "config", "modules.tar.gz"));
  const std::string config = ReadFile(dir + "/files/config").value();
  EXPECT_THAT(config, HasSubstr("CONFIG_MODULES=y\n"));  // the base file
  EXPECT_THAT(config, HasSubstr("CONFIG_EXT4_FS=m\n"));  // the fragment
  Command list;
  list.argv = {"tar", "--list", "--gzip", "--file", dir + "/files/modules.tar.gz"};
  EXPECT_THAT(CommandOutput(list).value(), Contains("./lib/modules/6.1.0-fake/kernel/a.ko"));
  // olddefconfig dropped CONFIG_UNMET: said, as merge_config.sh would.
  ASSERT_THAT(result.warnings, SizeIs(1));
  EXPECT_EQ(result.warnings[0], Temp("frag.config") +
                                    " asks for CONFIG_UNMET=y; the final .config has "
                                    "CONFIG_UNMET=n");
  EXPECT_THAT(log_, Contains("==> warning: " + result.warnings[0]));
}

TEST_F(KernelBuildTest, RequestsThatCannotBeBuiltAreRefusedBeforeAnything) {
  KernelBuilder builder(sources_);
  auto refused = [&](BuildRequest request) { return builder.Build(request, nullptr).status(); };
  BuildRequest r = Request(base_, "x");
  r.source = "mainline";
  EXPECT_THAT(refused(r).message(), HasSubstr("source: unknown kernel source \"mainline\""));
  r = Request(base_, "x", "huge");
  EXPECT_THAT(refused(r).message(), HasSubstr("config: unknown build config \"huge\""));
  r = Request(base_.substr(0, 12), "x");
  EXPECT_THAT(refused(r).message(),
              HasSubstr("commit: \"" + base_.substr(0, 12) + "\" is not a full commit hash"));
  r = Request(std::string(40, 'a'), "x");
  EXPECT_EQ(refused(r).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused(r).message(), HasSubstr("is not a commit of " + repo_.path()));
  r = Request(base_, "x");
  r.artifact_dir = "relative/x";
  EXPECT_EQ(refused(r).code(), absl::StatusCode::kInvalidArgument);
  fs::create_directories(Artifacts() + "/taken");
  EXPECT_EQ(refused(Request(base_, "taken")).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_FALSE(fs::exists(Tree("lab")));  // nothing was checked out for any of them
}

TEST_F(KernelBuildTest, BusyTreeIsUnavailable) {
  fs::create_directories(Temp("build"));
  ScopedFd held(::open((Tree("lab") + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  ASSERT_EQ(::flock(held.get(), LOCK_EX | LOCK_NB), 0);
  KernelBuilder builder(sources_);
  EXPECT_EQ(builder.Build(Request(base_, "x"), nullptr).status().code(),
            absl::StatusCode::kUnavailable);
  // Another config has its own tree.
  absl::StatusOr<BuildResult> tiny = builder.Build(Request(base_, "tiny", "tiny"), nullptr);
  ASSERT_TRUE(tiny.ok()) << tiny.status();
  EXPECT_TRUE(tiny->ok());
}

}  // namespace
}  // namespace tlbfleet::agent::builder
