// Git questions answered from a real repository (agent/builder/test_repo_for_test.h).
#include "agent/runner/git_query.h"

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "agent/builder/test_repo_for_test.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

using ::testing::HasSubstr;

class GitQueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c0_ = repo_.Commit({{"a", "1\n"}}, "c0");
    c1_ = repo_.Commit({{"a", "2\n"}}, "c1");
    c2_ = repo_.Commit({{"b", "1\n"}}, "c2");
    sources_ = builder::KernelSources::Parse(
                   absl::StrCat("sources:\n  linux:\n    repository: ", repo_.path(),
                                "\n    work_dir: ", repo_.temp().File("build"),
                                "\nconfigs:\n  lab: {base: defconfig}\n"),
                   "test")
                   .value();
  }
  v1::GitAnswer Ask(v1::GitQuery::Kind kind, const std::string& rev, const std::string& good = "",
                    const std::string& bad = "", const std::string& onto = "",
                    const std::string& source = "linux") {
    v1::GitQuery query;
    query.set_query_id(9);
    query.set_source(source);
    query.set_kind(kind);
    query.set_rev(rev);
    query.set_good(good);
    query.set_bad(bad);
    query.set_onto(onto);
    return AnswerGitQuery(sources_, query);
  }

  builder::TestRepo repo_;
  std::string c0_, c1_, c2_;
  builder::KernelSources sources_;
};

TEST_F(GitQueryTest, ResolvesARevision) {
  v1::GitAnswer answer = Ask(v1::GitQuery::KIND_RESOLVE, "main~1");
  EXPECT_EQ(answer.query_id(), 9);
  EXPECT_EQ(answer.error(), "");
  EXPECT_EQ(answer.resolved(), c1_);
  ASSERT_EQ(answer.commits_size(), 1);
  EXPECT_EQ(answer.commits(0).subject(), "c1");
  EXPECT_EQ(answer.commits(0).author(), "Ada Lovelace <ada@example.org>");
}

TEST_F(GitQueryTest, ListsTheRangeOldestFirst) {
  v1::GitAnswer answer = Ask(v1::GitQuery::KIND_RANGE, "", c0_, "main");
  EXPECT_EQ(answer.error(), "");
  ASSERT_EQ(answer.commits_size(), 2);
  EXPECT_EQ(answer.commits(0).hash(), c1_);
  EXPECT_EQ(answer.commits(1).hash(), c2_);
}

TEST_F(GitQueryTest, TellsWhetherARevertApplies) {
  EXPECT_TRUE(Ask(v1::GitQuery::KIND_REVERT_APPLIES, c1_, "", "", c2_).revert_applies());
}

TEST_F(GitQueryTest, ABranchResolvesToItsHeadAndAMissingOneIsInvalid) {
  v1::GitAnswer answer = Ask(v1::GitQuery::KIND_BRANCH, "main");
  EXPECT_EQ(answer.error(), "");
  EXPECT_EQ(answer.resolved(), c2_);
  ASSERT_EQ(answer.commits_size(), 1);
  EXPECT_EQ(answer.commits(0).subject(), "c2");
  // A tag is not a branch: a schedule following it would never move.
  repo_.Git({"tag", "v1", c1_});
  answer = Ask(v1::GitQuery::KIND_BRANCH, "v1");
  EXPECT_TRUE(answer.invalid());
  EXPECT_THAT(answer.error(), HasSubstr("branch \"v1\" does not exist"));
}

// A source with a remote: the fetch brings the remote's new head, which wins over a stale local
// branch of the same name.
TEST_F(GitQueryTest, AFetchedBranchIsTheRemotesHead) {
  builder::TestRepo upstream;
  upstream.Commit({{"a", "1\n"}}, "u0");
  repo_.Git({"remote", "add", "up", upstream.path()});
  const std::string u1 = upstream.Commit({{"a", "2\n"}}, "u1");
  sources_ = builder::KernelSources::Parse(
                 absl::StrCat("sources:\n  linux:\n    repository: ", repo_.path(),
                              "\n    remote: up\n    work_dir: ", repo_.temp().File("build"),
                              "\nconfigs:\n  lab: {base: defconfig}\n"),
                 "test")
                 .value();
  v1::GitQuery query;
  query.set_source("linux");
  query.set_kind(v1::GitQuery::KIND_BRANCH);
  query.set_rev("main");
  query.set_fetch(true);
  v1::GitAnswer answer = AnswerGitQuery(sources_, query);
  EXPECT_EQ(answer.error(), "");
  EXPECT_EQ(answer.resolved(), u1);
  // The next night: the remote moved on.
  const std::string u2 = upstream.Commit({{"a", "3\n"}}, "u2");
  answer = AnswerGitQuery(sources_, query);
  EXPECT_EQ(answer.resolved(), u2);
  EXPECT_EQ(answer.commits(0).subject(), "u2");
}

TEST_F(GitQueryTest, AWrongQuestionIsInvalidNamingWhatIsWrong) {
  v1::GitAnswer answer = Ask(v1::GitQuery::KIND_RESOLVE, "v9.9");
  EXPECT_TRUE(answer.invalid());
  EXPECT_THAT(answer.error(), HasSubstr("\"v9.9\""));
  answer = Ask(v1::GitQuery::KIND_RANGE, "", c2_, c0_);
  EXPECT_TRUE(answer.invalid());
  EXPECT_THAT(answer.error(), HasSubstr("is not an ancestor of bad"));
  answer = Ask(v1::GitQuery::KIND_RESOLVE, "main", "", "", "", "mainline");
  EXPECT_TRUE(answer.invalid());
  EXPECT_THAT(answer.error(), HasSubstr("unknown kernel source \"mainline\""));
}

// The threads of this process, as the kernel counts them.
size_t ProcessThreads() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// The answers sent, in the order they came.
class Answers {
 public:
  GitQueryWorkers::Send Sender() {
    return [this](const v1::AgentMessage& m) {
      std::lock_guard<std::mutex> lock(mu_);
      ids_.push_back(m.git_answer().query_id());
      resolved_.push_back(m.git_answer().resolved());
      cv_.notify_all();
    };
  }
  bool Await(size_t n, std::chrono::seconds timeout = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return ids_.size() >= n; });
  }
  std::vector<int64_t> ids() {
    std::lock_guard<std::mutex> lock(mu_);
    return ids_;
  }
  std::vector<std::string> resolved() {
    std::lock_guard<std::mutex> lock(mu_);
    return resolved_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int64_t> ids_;
  std::vector<std::string> resolved_;
};

v1::GitQuery Question(int64_t id, const std::string& rev = "HEAD") {
  v1::GitQuery query;
  query.set_query_id(id);
  query.set_source("linux");
  query.set_kind(v1::GitQuery::KIND_RESOLVE);
  query.set_rev(rev);
  return query;
}

TEST_F(GitQueryTest, ManyQuestionsDoNotLeaveManyThreads) {
  Answers answers;
  const size_t before = ProcessThreads();
  {
    GitQueryWorkers workers([this](const v1::GitQuery& q) { return AnswerGitQuery(sources_, q); },
                            answers.Sender());
    for (int64_t id = 1; id <= 200; ++id) workers.Submit(Question(id, id % 2 ? "HEAD" : "HEAD~2"));
    ASSERT_TRUE(answers.Await(200)) << answers.ids().size() << " of 200 answered";
    EXPECT_LE(workers.threads(), 2u);
    EXPECT_LE(ProcessThreads(), before + 2);
    // Every question answered once, from the repository.
    const std::vector<int64_t> ids = answers.ids();
    EXPECT_EQ(std::set<int64_t>(ids.begin(), ids.end()).size(), 200u);
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(answers.resolved()[i], ids[i] % 2 ? c2_ : c0_) << "question " << ids[i];
    }
    // More, later: the same workers take them.
    for (int64_t id = 201; id <= 250; ++id) workers.Submit(Question(id));
    ASSERT_TRUE(answers.Await(250));
    EXPECT_LE(ProcessThreads(), before + 2);
  }
  EXPECT_LE(ProcessThreads(), before);  // all joined (earlier tests' threads may end too)
}

TEST_F(GitQueryTest, AQuestionStuckInAFetchDoesNotHoldUpTheNext) {
  Answers answers;
  absl::Notification release;
  GitQueryWorkers workers(
      [&](const v1::GitQuery& q) {
        if (q.fetch()) release.WaitForNotification();  // a fetch that hangs
        v1::GitAnswer answer;
        answer.set_query_id(q.query_id());
        return answer;
      },
      answers.Sender());
  v1::GitQuery stuck = Question(1);
  stuck.set_fetch(true);
  workers.Submit(stuck);
  workers.Submit(Question(2));
  workers.Submit(Question(3));
  ASSERT_TRUE(answers.Await(2));
  EXPECT_EQ(answers.ids(), (std::vector<int64_t>{2, 3}));
  release.Notify();
  ASSERT_TRUE(answers.Await(3));
  EXPECT_EQ(answers.ids().back(), 1);
  EXPECT_EQ(workers.threads(), 2u);
}

TEST_F(GitQueryTest, StoppingDropsQuestionsNotStarted) {
  Answers answers;
  absl::Notification started, release;
  std::thread releaser;
  {
    GitQueryWorkers workers(
        [&](const v1::GitQuery& q) {
          if (!started.HasBeenNotified()) started.Notify();
          release.WaitForNotification();
          v1::GitAnswer answer;
          answer.set_query_id(q.query_id());
          return answer;
        },
        answers.Sender(), /*max_threads=*/1);
    for (int64_t id = 1; id <= 5; ++id) workers.Submit(Question(id));
    started.WaitForNotification();
    // Released once the destructor below is (most likely) waiting for it.
    releaser = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      release.Notify();
    });
  }  // waits for the question being answered, drops the other four
  releaser.join();
  EXPECT_EQ(answers.ids(), (std::vector<int64_t>{1}));
}

}  // namespace
}  // namespace tlbfleet::agent
