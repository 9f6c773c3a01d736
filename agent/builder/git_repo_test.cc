#include "agent/builder/git_repo.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "agent/builder/test_repo_for_test.h"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent::builder {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Twenty numbered lines, with some replaced: {5, "five"} puts "five" on line 5.
std::string Lines(const std::map<int, std::string>& changed = {}) {
  std::string out;
  for (int i = 1; i <= 20; ++i) {
    auto it = changed.find(i);
    absl::StrAppend(&out, it == changed.end() ? std::to_string(i) : it->second, "\n");
  }
  return out;
}

// main: A - B ------- C - M
//            \           /
//  side:      S1 - S2 --'
class GitRepoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = repo_.Commit({{"f", Lines()}}, "A: the first commit");
    repo_.Git({"tag", "v1.0"});
    b_ = repo_.Commit({{"f", Lines({{5, "five"}})}}, "B: five");
    repo_.Git({"checkout", "--quiet", "-b", "side"});
    s1_ = repo_.Commit({{"g", "side one\n"}}, "S1: side one");
    s2_ = repo_.Commit({{"g", "side two\n"}}, "S2: side two");
    repo_.Git({"checkout", "--quiet", "main"});
    c_ = repo_.Commit({{"f", Lines({{5, "five"}, {15, "fifteen"}})}}, "C: fifteen");
    repo_.Git({"merge", "--quiet", "--no-ff", "-m", "M: merge side", "side"});
    m_ = repo_.Git({"rev-parse", "HEAD"}).at(0);
  }

  TestRepo repo_;
  GitRepo git_{repo_.path()};
  std::string a_, b_, s1_, s2_, c_, m_;
};

TEST_F(GitRepoTest, ResolvesRevisionsToFullHashes) {
  EXPECT_EQ(git_.ResolveCommit("v1.0").value(), a_);  // an annotated tag would peel the same
  EXPECT_EQ(git_.ResolveCommit("main").value(), m_);
  EXPECT_EQ(git_.ResolveCommit("HEAD^1").value(), c_);
  EXPECT_EQ(git_.ResolveCommit(s1_.substr(0, 10)).value(), s1_);
  EXPECT_EQ(git_.ResolveCommit(s1_).value(), s1_);
  EXPECT_TRUE(IsFullCommitHash(m_));
}

TEST_F(GitRepoTest, RevisionThatDoesNotResolveIsInvalidArgumentNamingIt) {
  absl::StatusOr<std::string> r = git_.ResolveCommit("v6.1");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("revision \"v6.1\" does not name a commit"));
  // What git would take for options never reaches it.
  for (const char* word : {"--output=/tmp/x", "-h", "main\nHEAD", ""}) {
    EXPECT_EQ(git_.ResolveCommit(word).status().code(), absl::StatusCode::kInvalidArgument) << word;
  }
  EXPECT_EQ(git_.IsAncestor("v1.0", "nope").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(git_.CommitsBetween("nope", "main").status().message(), HasSubstr("\"nope\""));
}

TEST_F(GitRepoTest, NotARepositoryIsFailedPrecondition) {
  GitRepo elsewhere(repo_.temp().path());
  EXPECT_EQ(elsewhere.ResolveCommit("HEAD").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(GitRepoTest, CommitsBetweenAreRevListTopoOrderReversed) {
  std::vector<std::string> between = git_.CommitsBetween("v1.0", "main").value();
  EXPECT_EQ(between, repo_.Git({"rev-list", "--topo-order", "--reverse", a_ + ".." + m_}));
  ASSERT_EQ(between.size(), 5u);
  EXPECT_EQ(between.front(), b_);  // good excluded, bad included
  EXPECT_EQ(between.back(), m_);
  auto pos = [&](const std::string& hash) {
    return std::find(between.begin(), between.end(), hash) - between.begin();
  };
  EXPECT_LT(pos(s1_), pos(s2_));  // every parent before its children
  EXPECT_LT(pos(b_), pos(c_));
  EXPECT_THAT(git_.CommitsBetween(c_, c_).value(), ElementsAre());
  EXPECT_THAT(git_.CommitsBetween(s1_, "side").value(), ElementsAre(s2_));
}

TEST_F(GitRepoTest, IsAncestor) {
  EXPECT_TRUE(git_.IsAncestor("v1.0", "main").value());
  EXPECT_TRUE(git_.IsAncestor(s2_, m_).value());
  EXPECT_TRUE(git_.IsAncestor(c_, c_).value());  // a commit is its own ancestor
  EXPECT_FALSE(git_.IsAncestor(s1_, c_).value());
  EXPECT_FALSE(git_.IsAncestor("main", "v1.0").value());
}

TEST_F(GitRepoTest, DescribesACommit) {
  CommitInfo info = git_.Describe(b_.substr(0, 12)).value();
  EXPECT_EQ(info.hash, b_);
  EXPECT_EQ(info.subject, "B: five");
  EXPECT_EQ(info.author, "Ada Lovelace <ada@example.org>");
  EXPECT_EQ(info.author_date, "2023-11-14T22:14:20+00:00");  // the second commit's minute
  EXPECT_EQ(info.commit_date_rfc2822, "Tue, 14 Nov 2023 22:14:20 +0000");
}

TEST_F(GitRepoTest, BranchHeads) {
  EXPECT_EQ(git_.ResolveBranch("side").value(), s2_);
  EXPECT_EQ(git_.ResolveBranch("main", "origin").value(), m_);  // no such remote: local branch
  absl::StatusOr<std::string> missing = git_.ResolveBranch("next", "origin");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("branch \"next\" does not exist in " + repo_.path() +
                        " (looked for refs/remotes/origin/next, refs/heads/next)"));
  EXPECT_EQ(git_.ResolveBranch("-D").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(GitRepoTest, FetchBringsTheRemoteBranchHead) {
  const std::string clone = repo_.temp().File("clone");
  repo_.Git({"clone", "--quiet", repo_.path(), clone});
  GitRepo cloned(clone);
  EXPECT_EQ(cloned.ResolveBranch("side", "origin").value(), s2_);

  repo_.Git({"checkout", "--quiet", "side"});
  const std::string s3 = repo_.Commit({{"g", "side three\n"}}, "S3: side three");
  EXPECT_EQ(cloned.ResolveBranch("side", "origin").value(), s2_);  // not fetched yet
  ASSERT_TRUE(cloned.Fetch("origin").ok());
  EXPECT_EQ(cloned.ResolveBranch("side", "origin").value(), s3);

  absl::Status unknown = cloned.Fetch("upstream");
  EXPECT_EQ(unknown.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(unknown.message(), HasSubstr("git fetch upstream"));
  EXPECT_EQ(cloned.Fetch("--upload-pack=touch /tmp/x").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(GitRepoTest, RevertAppliesWhereGitRevertWould) {
  // D changes line 3, two lines above B's change: `git apply --check` of B's reverse diff
  // fails on the context, the three-way merge of `git revert` does not.
  const std::string d =
      repo_.Commit({{"f", Lines({{3, "three"}, {5, "five"}, {15, "fifteen"}})}}, "D: three");
  // E changes B's own line again: reverting B conflicts.
  const std::string e =
      repo_.Commit({{"f", Lines({{3, "three"}, {5, "FIVE"}, {15, "fifteen"}})}}, "E: FIVE");
  const std::string head_before = repo_.Git({"rev-parse", "HEAD"}).at(0);

  EXPECT_TRUE(git_.RevertApplies(c_, e).value());     // line 15: nothing touched it since
  EXPECT_TRUE(git_.RevertApplies(b_, d).value());     // context changed, merge is clean
  EXPECT_FALSE(git_.RevertApplies(b_, e).value());    // the same line changed again
  EXPECT_TRUE(git_.RevertApplies(s1_, s1_).value());  // on top of itself: always
  EXPECT_EQ(git_.RevertApplies(a_, e).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<bool> merge = git_.RevertApplies(m_, e);
  EXPECT_EQ(merge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(merge.status().message(), HasSubstr("merge commit"));

  // Neither the work tree nor the index nor HEAD of the repository moved.
  EXPECT_EQ(repo_.Git({"rev-parse", "HEAD"}).at(0), head_before);
  EXPECT_THAT(repo_.Git({"status", "--porcelain"}), ElementsAre());
}

TEST_F(GitRepoTest, MakeRevertMakesTheSameCommitEverywhere) {
  const std::string d =
      repo_.Commit({{"f", Lines({{3, "three"}, {5, "five"}, {15, "fifteen"}})}}, "D: three");
  const std::string e =
      repo_.Commit({{"f", Lines({{3, "three"}, {5, "FIVE"}, {15, "fifteen"}})}}, "E: FIVE");
  const std::string head_before = repo_.Git({"rev-parse", "HEAD"}).at(0);

  // B reverted onto D (a three-way merge: D changed B's context): f as D has it, but line 5
  // as it was before B.
  absl::StatusOr<std::string> revert = git_.MakeRevert(b_.substr(0, 10), d);
  ASSERT_TRUE(revert.ok()) << revert.status();
  EXPECT_EQ(repo_.Git({"rev-parse", *revert + "^@"}), std::vector<std::string>{d});
  std::string f;
  for (const std::string& line : repo_.Git({"show", *revert + ":f"})) f += line + "\n";
  EXPECT_EQ(f, Lines({{3, "three"}, {15, "fifteen"}}));
  EXPECT_EQ(repo_.Git({"log", "-1", "--format=%an <%ae>|%cn <%ce>|%ct|%s", *revert}).at(0),
            absl::StrCat("tlbfleet <tlbfleet@localhost>|tlbfleet <tlbfleet@localhost>|",
                         repo_.Git({"log", "-1", "--format=%ct", d}).at(0), "|Revert \"B: five\""));
  EXPECT_THAT(repo_.Git({"log", "-1", "--format=%b", *revert}),
              testing::Contains("This reverts commit " + b_ + "."));
  EXPECT_THAT(repo_.Git({"for-each-ref", "--format=%(refname) %(objectname)", kRevertRefPrefix}),
              ElementsAre(std::string(kRevertRefPrefix) + *revert + " " + *revert));

  // Again, and in a clone made later by someone else: the same hash.
  EXPECT_EQ(git_.MakeRevert(b_, d).value(), *revert);
  const std::string clone = repo_.temp().File("clone");
  repo_.Git({"clone", "--quiet", "--bare", repo_.path(), clone});
  EXPECT_EQ(GitRepo(clone).MakeRevert(b_, d).value(), *revert);

  // One that conflicts: ABORTED with the hashes and git's words; no commit, no ref.
  absl::StatusOr<std::string> conflict = git_.MakeRevert(b_, e);
  EXPECT_EQ(conflict.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(conflict.status().message()),
              testing::StartsWith(absl::StrCat("the revert of ", b_.substr(0, 12),
                                               " does not apply onto ", e.substr(0, 12), ": ")));
  EXPECT_THAT(conflict.status().message(), HasSubstr("Applied patch to 'f' with conflicts"));
  absl::StatusOr<std::string> merge = git_.MakeRevert(m_, e);
  EXPECT_EQ(merge.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(merge.status().message(), HasSubstr("is a merge commit"));
  EXPECT_EQ(git_.MakeRevert("nope", e).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(repo_.Git({"for-each-ref", kRevertRefPrefix}), testing::SizeIs(1));

  // Neither the work tree nor the index nor HEAD of the repository moved.
  EXPECT_EQ(repo_.Git({"rev-parse", "HEAD"}).at(0), head_before);
  EXPECT_THAT(repo_.Git({"status", "--porcelain"}), ElementsAre());
}

struct timespec MTime(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mtim;
}

TEST_F(GitRepoTest, WorktreeIsAddedOnceThenCheckedOutInPlace) {
  const std::string tree = repo_.temp().File("build/lab");
  ASSERT_TRUE(git_.CheckoutWorktree(tree, b_).ok());
  EXPECT_EQ(ReadFile(tree + "/f").value(), Lines({{5, "five"}}));
  std::ofstream(tree + "/f.o") << "an object file";  // untracked, like a build output
  std::ofstream(tree + "/f") << "changed by hand";   // a tracked file changed in the tree

  ASSERT_TRUE(git_.CheckoutWorktree(tree, s2_).ok());
  const struct timespec g_before = MTime(tree + "/g");
  EXPECT_EQ(ReadFile(tree + "/f").value(), Lines({{5, "five"}}));  // the change is gone
  EXPECT_EQ(ReadFile(tree + "/f.o").value(), "an object file");    // the output stays

  ASSERT_TRUE(git_.CheckoutWorktree(tree, m_).ok());  // m has S2's g: g is not rewritten
  const struct timespec g_after = MTime(tree + "/g");
  EXPECT_EQ(g_after.tv_sec, g_before.tv_sec);
  EXPECT_EQ(g_after.tv_nsec, g_before.tv_nsec);
  EXPECT_EQ(ReadFile(tree + "/f").value(), Lines({{5, "five"}, {15, "fifteen"}}));
  EXPECT_THAT(repo_.Git({"-C", tree, "rev-parse", "HEAD"}), ElementsAre(m_));
  EXPECT_THAT(repo_.Git({"status", "--porcelain"}), ElementsAre());  // the main tree is untouched

  // A tree deleted behind git's back is registered still; it is pruned and added again.
  std::filesystem::remove_all(tree);
  ASSERT_TRUE(git_.CheckoutWorktree(tree, a_).ok());
  EXPECT_EQ(ReadFile(tree + "/f").value(), Lines());
}

TEST_F(GitRepoTest, WorktreeRefusesAStrangerDirectoryAndAShortHash) {
  const std::string stranger = repo_.temp().File("stranger");
  std::filesystem::create_directories(stranger);
  std::ofstream(stranger + "/precious") << "not ours";
  absl::Status s = git_.CheckoutWorktree(stranger, b_);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("is not a worktree of"));
  EXPECT_EQ(ReadFile(stranger + "/precious").value(), "not ours");

  EXPECT_EQ(git_.CheckoutWorktree(repo_.temp().File("t"), b_.substr(0, 12)).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tlbfleet::agent::builder
