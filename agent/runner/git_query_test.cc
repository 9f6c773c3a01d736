// Git questions answered from a real repository (agent/builder/test_repo_for_test.h).
#include "agent/runner/git_query.h"

#include <string>

#include "absl/strings/str_cat.h"
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

}  // namespace
}  // namespace tlbfleet::agent
