// The build runner against a real git repository holding a fake kernel tree (real make; the
// builder's own tests show the build itself), with the upload and the stream replaced by
// recorders.
#include "agent/runner/build_runner.h"

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/builder/test_repo_for_test.h"
#include "common/artifacts/manifest.h"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

using namespace std::chrono_literals;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// What the runner sent, in order.
class Sent {
 public:
  BuildRunner::Sender Sender() {
    return [this](const v1::AgentMessage& m) {
      std::lock_guard<std::mutex> lock(mu_);
      messages_.push_back(m);
      cv_.notify_all();
    };
  }
  // The BuildComplete of `task`, once it came within `timeout`.
  std::optional<v1::BuildComplete> AwaitComplete(int64_t task,
                                                 std::chrono::milliseconds timeout = 60s) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<v1::BuildComplete> found;
    cv_.wait_for(lock, timeout, [&] {
      for (const v1::AgentMessage& m : messages_) {
        if (m.has_build_complete() && m.build_complete().task_id() == task) {
          found = m.build_complete();
          return true;
        }
      }
      return false;
    });
    return found;
  }
  // Waits until a log line containing `text` came.
  bool AwaitLogLine(const std::string& text, std::chrono::milliseconds timeout = 30s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      for (const v1::AgentMessage& m : messages_) {
        for (const std::string& line : m.build_progress().log_lines()) {
          if (line.find(text) != std::string::npos) return true;
        }
      }
      return false;
    });
  }
  std::vector<v1::AgentMessage> messages() {
    std::lock_guard<std::mutex> lock(mu_);
    return messages_;
  }
  std::vector<v1::BuildProgress> progress(int64_t task) {
    std::vector<v1::BuildProgress> out;
    for (const v1::AgentMessage& m : messages()) {
      if (m.has_build_progress() && m.build_progress().task_id() == task)
        out.push_back(m.build_progress());
    }
    return out;
  }
  std::vector<std::string> log(int64_t task) {
    std::vector<std::string> lines;
    for (const v1::BuildProgress& p : progress(task)) {
      lines.insert(lines.end(), p.log_lines().begin(), p.log_lines().end());
    }
    return lines;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<v1::AgentMessage> messages_;
};

v1::BuildTask Task(int64_t id, const std::string& rev, const std::string& config = "lab",
                   const std::string& source = "linux") {
  v1::BuildTask task;
  task.set_task_id(id);
  task.set_source(source);
  task.set_rev(rev);
  task.set_config(config);
  return task;
}

class BuildRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = repo_.Commit({{"Makefile", builder::kFakeKernelMakefile},
                          {"VERSION", "6.1.0-fake\n"},
                          {".gitignore", "*.o\n/arch/\n/System.map\n/.config\n"},
                          {"configs/defconfig", "CONFIG_FOO=y\n"},
                          {"kernel/a.c", "int a;\n"}},
                         "fake kernel 6.1");
    const std::string yaml =
        absl::StrCat("sources:\n  linux:\n    repository: ", repo_.path(),
                     "\n    work_dir: ", Temp("build"), "\nconfigs:\n  lab: {base: defconfig}\n");
    sources_ = builder::KernelSources::Parse(yaml, "test").value();
  }

  std::string Temp(const std::string& name) const { return repo_.temp().File(name); }
  std::string Staging() const { return Temp("staging"); }

  // A runner whose uploads go to Upload() below.
  std::unique_ptr<BuildRunner> Runner(size_t flush_lines = 200,
                                      absl::Duration timeout = absl::Hours(3)) {
    BuildRunnerOptions options;
    options.staging_dir = Staging();
    options.builder.jobs = 2;
    options.log_flush_lines = flush_lines;
    options.timeout = timeout;
    return std::make_unique<BuildRunner>(
        sources_, options,
        [this](const std::string& dir, const std::function<bool()>& cancelled) {
          return Upload(dir, cancelled);
        },
        sent_.Sender());
  }

  // The fake upload: records the artifact as it was handed over, answers its id.
  absl::StatusOr<std::string> Upload(const std::string& dir, const std::function<bool()>&) {
    std::lock_guard<std::mutex> lock(upload_mu_);
    uploaded_dir_ = dir;
    absl::StatusOr<std::string> text = ReadFile(artifacts::ArtifactManifestFile(dir));
    if (!text.ok()) return text.status();
    absl::StatusOr<artifacts::ArtifactManifest> manifest = artifacts::ParseManifest(*text);
    if (!manifest.ok()) return manifest.status();
    uploaded_ = *manifest;
    for (const artifacts::ArtifactFile& file : manifest->files) {
      if (absl::Status s = artifacts::VerifyArtifactFile(dir, file); !s.ok()) return s;
    }
    if (!upload_error_.ok()) return upload_error_;
    return artifacts::ArtifactIdOf(*manifest);
  }

  builder::TestRepo repo_;
  std::string base_;
  builder::KernelSources sources_;
  Sent sent_;
  std::mutex upload_mu_;
  std::string uploaded_dir_;
  std::optional<artifacts::ArtifactManifest> uploaded_;
  absl::Status upload_error_;
};

TEST_F(BuildRunnerTest, BuildsUploadsAndReportsTheArtifact) {
  std::unique_ptr<BuildRunner> runner = Runner(/*flush_lines=*/3);
  runner->OnTask(Task(7, "main"));
  std::optional<v1::BuildComplete> complete = sent_.AwaitComplete(7);
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_SUCCEEDED) << complete->reason();

  // First the resolved commit, then the log in batches of at most 3 lines, in order.
  std::vector<v1::BuildProgress> progress = sent_.progress(7);
  ASSERT_GE(progress.size(), 2u);
  EXPECT_EQ(progress[0].commit(), base_);
  EXPECT_EQ(progress[0].subject(), "fake kernel 6.1");
  EXPECT_EQ(progress[0].author(), "Ada Lovelace <ada@example.org>");
  EXPECT_THAT(progress[0].log_lines(), IsEmpty());
  for (size_t i = 1; i < progress.size(); ++i) {
    EXPECT_EQ(progress[i].commit(), "");
    EXPECT_LE(progress[i].log_lines_size(), 3);
  }
  const std::vector<std::string> log = sent_.log(7);
  EXPECT_THAT(log, Contains(HasSubstr("==> make ARCH=x86_64")));
  EXPECT_THAT(log, Contains("Kernel: arch/x86/boot/bzImage is ready"));
  // The completion is the last message.
  EXPECT_TRUE(sent_.messages().back().has_build_complete());

  // The artifact as uploaded is what the completion describes; the local copy is gone.
  std::lock_guard<std::mutex> lock(upload_mu_);
  ASSERT_TRUE(uploaded_.has_value());
  EXPECT_EQ(uploaded_dir_, Staging() + "/builds/task-7");
  EXPECT_FALSE(std::filesystem::exists(uploaded_dir_));
  EXPECT_EQ(complete->artifact_id(), artifacts::ArtifactIdOf(*uploaded_));
  EXPECT_EQ(complete->build_id(), uploaded_->build_id);
  EXPECT_EQ(complete->commit(), base_);
  EXPECT_EQ(complete->subject(), "fake kernel 6.1");
  EXPECT_EQ(complete->author(), "Ada Lovelace <ada@example.org>");
  EXPECT_EQ(complete->kernel_release(), "6.1.0-fake");
  EXPECT_THAT(complete->compiler(), HasSubstr("gcc"));
  EXPECT_EQ(uploaded_->commit, base_);
  EXPECT_EQ(uploaded_->source, "linux");
  EXPECT_EQ(uploaded_->config, "lab");
  EXPECT_GT(complete->elapsed_seconds(), 0);
  EXPECT_FALSE(runner->running().has_value());
}

TEST_F(BuildRunnerTest, ARevisionThatDoesNotResolveIsABadRevisionNamingIt) {
  std::unique_ptr<BuildRunner> runner = Runner();
  runner->OnTask(Task(1, "v9.9"));
  std::optional<v1::BuildComplete> complete = sent_.AwaitComplete(1);
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_BAD_REVISION);
  EXPECT_THAT(complete->reason(), HasSubstr("\"v9.9\" does not name a commit"));
  EXPECT_EQ(complete->commit(), "");

  runner->OnTask(Task(2, "main", "lab", "mainline"));
  complete = sent_.AwaitComplete(2);
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_BAD_REVISION);
  EXPECT_THAT(complete->reason(), HasSubstr("unknown kernel source \"mainline\""));

  runner->OnTask(Task(3, "main", "huge"));
  complete = sent_.AwaitComplete(3);
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_BAD_REVISION);
  EXPECT_THAT(complete->reason(), HasSubstr("\"huge\""));

  runner->OnTask(Task(4, "--upload-pack=evil"));
  complete = sent_.AwaitComplete(4);
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_BAD_REVISION);
  // Nothing was built, so no progress at all.
  EXPECT_THAT(sent_.progress(1), IsEmpty());
  EXPECT_THAT(sent_.progress(4), IsEmpty());
}

TEST_F(BuildRunnerTest, ARevertBuildsAndReportsTheRevertCommit) {
  const std::string culprit = repo_.Commit({{"kernel/a.c", "int a = 2;\n"}}, "a: initialise");
  const std::string bad = repo_.Commit({{"kernel/b.c", "int b;\n"}}, "b: add");
  std::unique_ptr<BuildRunner> runner = Runner();
  v1::BuildTask task = Task(1, "main");
  task.set_revert(culprit.substr(0, 12));  // a revision, resolved as `rev` is
  runner->OnTask(task);
  std::optional<v1::BuildComplete> complete = sent_.AwaitComplete(1);
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_SUCCEEDED) << complete->reason();

  // The commit built is the revert, a child of bad; bad's own hash is never reported.
  const std::string revert = complete->commit();
  EXPECT_NE(revert, bad);
  EXPECT_EQ(repo_.Git({"rev-parse", revert + "^"}).at(0), bad);
  EXPECT_EQ(repo_.Git({"show", revert + ":kernel/a.c"}).at(0), "int a;");
  EXPECT_EQ(complete->subject(), "Revert \"a: initialise\"");
  EXPECT_EQ(complete->author(), "tlbfleet <tlbfleet@localhost>");
  std::vector<v1::BuildProgress> progress = sent_.progress(1);
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress[0].commit(), revert);
  EXPECT_EQ(progress[0].subject(), "Revert \"a: initialise\"");
  for (size_t i = 1; i < progress.size(); ++i) EXPECT_EQ(progress[i].commit(), "");
  EXPECT_THAT(sent_.log(1),
              Contains("==> git revert " + culprit + " onto " + bad + " (on a temporary index)"));
  {
    std::lock_guard<std::mutex> lock(upload_mu_);
    ASSERT_TRUE(uploaded_.has_value());
    EXPECT_EQ(uploaded_->commit, revert);
    EXPECT_EQ(complete->build_id(), uploaded_->build_id);
  }

  // The same task again (another builder, a retry): the same revert commit.
  runner->OnTask([&] {
    v1::BuildTask again = task;
    again.set_task_id(2);
    return again;
  }());
  std::optional<v1::BuildComplete> second = sent_.AwaitComplete(2);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->status(), v1::BUILD_STATUS_SUCCEEDED) << second->reason();
  EXPECT_EQ(second->commit(), revert);
  EXPECT_EQ(second->build_id(), complete->build_id());
}

TEST_F(BuildRunnerTest, ARevertThatDoesNotApplyFailsWithGitsWords) {
  const std::string culprit = repo_.Commit({{"kernel/a.c", "int a = 2;\n"}}, "a: initialise");
  const std::string bad = repo_.Commit({{"kernel/a.c", "int a = 3;\n"}}, "a: three");
  std::unique_ptr<BuildRunner> runner = Runner();
  v1::BuildTask task = Task(1, "main");
  task.set_revert(culprit);
  runner->OnTask(task);
  std::optional<v1::BuildComplete> complete = sent_.AwaitComplete(1);
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_FAILED);
  EXPECT_THAT(complete->reason(),
              testing::StartsWith(absl::StrCat("the revert of ", culprit.substr(0, 12),
                                               " does not apply onto ", bad.substr(0, 12), ": ")));
  EXPECT_THAT(complete->reason(), HasSubstr("kernel/a.c"));
  EXPECT_EQ(complete->commit(), "");  // neither bad (not what was asked) nor a revert (none)
  for (const v1::BuildProgress& p : sent_.progress(1)) EXPECT_EQ(p.commit(), "");
  std::lock_guard<std::mutex> lock(upload_mu_);
  EXPECT_FALSE(uploaded_.has_value());
}

TEST_F(BuildRunnerTest, ARevertThatDoesNotResolveIsABadRevisionNamingIt) {
  std::unique_ptr<BuildRunner> runner = Runner();
  v1::BuildTask task = Task(1, "main");
  task.set_revert("v9.9");
  runner->OnTask(task);
  std::optional<v1::BuildComplete> complete = sent_.AwaitComplete(1);
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_BAD_REVISION);
  EXPECT_THAT(complete->reason(), HasSubstr("revert: revision \"v9.9\" does not name a commit"));
  EXPECT_THAT(sent_.progress(1), IsEmpty());
}

TEST_F(BuildRunnerTest, ABuildThatRunsTooLongIsCancelledAsAHostFailure) {
  const std::string slow = repo_.Commit({{"kernel/s.c", "#slow\n"}}, "s: slow");
  std::unique_ptr<BuildRunner> runner = Runner(/*flush_lines=*/1, absl::Seconds(1));
  const auto start = std::chrono::steady_clock::now();
  runner->OnTask(Task(1, slow));
  std::optional<v1::BuildComplete> complete = sent_.AwaitComplete(1, 25s);
  ASSERT_TRUE(complete.has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s) << "make was not killed";
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_HOST_FAILED);
  EXPECT_THAT(complete->reason(), testing::StartsWith("timed out after 1s during make "));
  EXPECT_THAT(complete->reason(), HasSubstr(" all"));
  EXPECT_EQ(complete->commit(), slow);
  EXPECT_THAT(sent_.log(1), Contains("slow: kernel/s.c"));  // it was in the slow step
  EXPECT_FALSE(runner->running().has_value());
  EXPECT_FALSE(std::filesystem::exists(Staging() + "/builds/task-1"));
}

TEST_F(BuildRunnerTest, AnEmptyConfigIsTheOnlyOne) {
  std::unique_ptr<BuildRunner> runner = Runner();
  runner->OnTask(Task(1, base_.substr(0, 12), ""));
  std::optional<v1::BuildComplete> complete = sent_.AwaitComplete(1);
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_SUCCEEDED) << complete->reason();
  EXPECT_EQ(complete->commit(), base_);
}

TEST_F(BuildRunnerTest, ACommitThatDoesNotBuildFailsWithItsTarget) {
  const std::string broken = repo_.Commit({{"kernel/c.c", "#error\n"}}, "c: broken");
  std::unique_ptr<BuildRunner> runner = Runner();
  runner->OnTask(Task(1, broken));
  std::optional<v1::BuildComplete> complete = sent_.AwaitComplete(1);
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_FAILED);
  EXPECT_EQ(complete->failed_target(), "kernel/c.o");
  EXPECT_THAT(complete->reason(), HasSubstr("target kernel/c.o failed"));
  EXPECT_THAT(complete->log_tail(), Contains(HasSubstr("error: #error this does not build")));
  EXPECT_EQ(complete->commit(), broken);
  EXPECT_EQ(complete->artifact_id(), "");
  std::lock_guard<std::mutex> lock(upload_mu_);
  EXPECT_FALSE(uploaded_.has_value());
}

TEST_F(BuildRunnerTest, ASecondTaskWhileBuildingIsBusyAndCancelEndsTheFirst) {
  const std::string slow = repo_.Commit({{"kernel/s.c", "#slow\n"}}, "s: slow");
  std::unique_ptr<BuildRunner> runner = Runner(/*flush_lines=*/1);
  runner->OnTask(Task(1, slow));
  ASSERT_TRUE(sent_.AwaitLogLine("slow: kernel/s.c")) << "make is not in the slow step";
  EXPECT_EQ(runner->running(), 1);

  runner->OnTask(Task(2, "main"));
  std::optional<v1::BuildComplete> busy = sent_.AwaitComplete(2, 5s);
  ASSERT_TRUE(busy.has_value());
  EXPECT_EQ(busy->status(), v1::BUILD_STATUS_HOST_FAILED);
  EXPECT_EQ(busy->reason(), "busy: building task 1");

  v1::CancelBuild other;
  other.set_task_id(2);
  runner->OnCancel(other);  // not the running one: ignored
  EXPECT_EQ(runner->running(), 1);

  const auto start = std::chrono::steady_clock::now();
  v1::CancelBuild cancel;
  cancel.set_task_id(1);
  cancel.set_reason("run 12 cancelled");
  runner->OnCancel(cancel);
  std::optional<v1::BuildComplete> complete = sent_.AwaitComplete(1, 20s);
  ASSERT_TRUE(complete.has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s) << "make was not killed";
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_CANCELLED);
  EXPECT_EQ(complete->reason(), "cancelled by the controller: run 12 cancelled");
  EXPECT_EQ(complete->commit(), slow);
  EXPECT_FALSE(std::filesystem::exists(Staging() + "/builds/task-1"));

  // Idle again: the next task builds.
  runner->OnTask(Task(3, "main"));
  complete = sent_.AwaitComplete(3);
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_SUCCEEDED) << complete->reason();
}

TEST_F(BuildRunnerTest, ALostStreamEndsTheBuildAndReportsNothing) {
  const std::string slow = repo_.Commit({{"kernel/s.c", "#slow\n"}}, "s: slow");
  std::unique_ptr<BuildRunner> runner = Runner(/*flush_lines=*/1);
  runner->OnTask(Task(1, slow));
  ASSERT_TRUE(sent_.AwaitLogLine("slow: kernel/s.c"));
  runner->CancelRunning("lost the stream to the controller");
  const size_t before = sent_.messages().size();
  // Polled: the runner has no event for a build that ends silently.
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (runner->running().has_value() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_FALSE(runner->running().has_value()) << "the build still runs";
  EXPECT_EQ(sent_.messages().size(), before) << "a lost build sent more";
  EXPECT_FALSE(sent_.AwaitComplete(1, 0ms).has_value());
}

TEST_F(BuildRunnerTest, AFailedUploadIsAHostFailureAndLeavesNothing) {
  upload_error_ = absl::UnavailableError("controller unreachable");
  std::unique_ptr<BuildRunner> runner = Runner();
  runner->OnTask(Task(1, "main"));
  std::optional<v1::BuildComplete> complete = sent_.AwaitComplete(1);
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->status(), v1::BUILD_STATUS_HOST_FAILED);
  EXPECT_EQ(complete->reason(), "uploading the artifact: controller unreachable");
  EXPECT_EQ(complete->artifact_id(), "");
  EXPECT_FALSE(std::filesystem::exists(Staging() + "/builds/task-1"));
}

}  // namespace
}  // namespace tlbfleet::agent
