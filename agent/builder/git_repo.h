#pragma once
// One git repository on the agent's host, through the `git` binary (argv vectors, never a
// shell): revisions resolved to commit hashes, the commits between two of them, commit
// descriptions, fetches, branch heads, whether a revert applies, and the worktrees builds run in.
//
// Revisions and branch names come from the controller: they are only ever single argv words
// after the options, and a word starting with '-' (which git would take for an option) or
// holding a control character is refused before git sees it.
//
// Every git runs with LC_ALL=C (its messages are parsed) and GIT_TERMINAL_PROMPT=0 (a fetch
// must fail, not wait for a password). Thread-compatible: calls on one repository from
// several threads are as safe as the same git commands run at once (worktree updates of one
// path are not; the builder locks a build tree before touching it).

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tlbfleet::agent::builder {

struct CommitInfo {
  std::string hash;
  std::string subject;
  std::string author;       // "Name <email>"
  std::string author_date;  // ISO 8601 with the author's offset: 2024-05-01T12:00:00+02:00
  // The committer date in RFC 2822 ("Wed, 1 May 2024 12:00:00 +0200"): what a build uses as
  // KBUILD_BUILD_TIMESTAMP, so one commit always builds with one timestamp.
  std::string commit_date_rfc2822;
};

class GitRepo {
 public:
  // `repository`: the top of a work tree, or a bare repository. Nothing is checked here.
  explicit GitRepo(std::string repository);

  const std::string& path() const { return repository_; }

  // The full commit hash (40 hex digits; 64 in a SHA-256 repository) `revision` names: a
  // hash, an abbreviation, a tag (peeled to its commit), a branch, HEAD~3... INVALID_ARGUMENT
  // "revision \"v6.1\" does not name a commit in <repo>" when it does not resolve.
  absl::StatusOr<std::string> ResolveCommit(absl::string_view revision) const;

  // Whether `ancestor` is reachable from `descendant` (a commit is its own ancestor).
  // Both are resolved first (INVALID_ARGUMENT naming the one that does not resolve).
  absl::StatusOr<bool> IsAncestor(absl::string_view ancestor, absl::string_view descendant) const;

  // The commits reachable from `bad` and not from `good` (`good` excluded, `bad` included),
  // oldest first in `git rev-list --topo-order --reverse good..bad` order: a parent before its
  // children, so the list's midpoint is where `git bisect` would look first.
  absl::StatusOr<std::vector<std::string>> CommitsBetween(absl::string_view good,
                                                          absl::string_view bad) const;

  absl::StatusOr<CommitInfo> Describe(absl::string_view revision) const;

  // `git fetch <remote>` (tags included), bounded by `timeout`. UNAVAILABLE with git's last
  // words when it fails (a network outage is not a bad request).
  absl::Status Fetch(absl::string_view remote,
                     std::chrono::milliseconds timeout = std::chrono::minutes(15)) const;

  // The commit a branch points at: refs/remotes/<remote>/<branch> when a remote is given and
  // has that branch (what the last fetch brought), else refs/heads/<branch>. INVALID_ARGUMENT
  // "branch \"x\" does not exist in <repo> (looked for refs/remotes/origin/x, refs/heads/x)".
  absl::StatusOr<std::string> ResolveBranch(absl::string_view branch,
                                            absl::string_view remote = "") const;

  // Whether reverting `commit` on top of `onto` applies without conflict, as `git revert`
  // would (a three-way merge whose base is `commit`). Done on a temporary index file, so no
  // work tree is checked out (a kernel tree is a gigabyte of files): `git read-tree <onto>`
  // into it, then `git apply --cached --3way` of the reverse diff (`git diff commit commit^`).
  // Not `git merge-tree`: git 2.39's has no --merge-base (2.40), and without it the merge base
  // would be the commits' common ancestor, not `commit`. And not `git apply --check` alone:
  // it refuses a hunk whose context a later commit changed, where the three-way merge of
  // `git revert` succeeds. INVALID_ARGUMENT for a root or merge commit (git revert needs a
  // parent, or -m to choose one).
  absl::StatusOr<bool> RevertApplies(absl::string_view commit, absl::string_view onto) const;

  // Makes the commit `git revert <commit>` would make on top of `onto`, without a work tree
  // (as RevertApplies, on a temporary index: then `git write-tree` and `git commit-tree -p
  // <onto>`), and returns its full hash. Its message is git revert's ("Revert \"<subject>\"",
  // "This reverts commit <hash>."), its author and committer "tlbfleet <tlbfleet@localhost>"
  // at the committer date of `onto`: the same revert onto the same commit is the same hash
  // wherever and whenever it is made. Kept reachable under refs/tlbfleet/reverts/<its hash>,
  // so `git gc` does not drop it while a build uses it (one small ref per revert built; never
  // removed by the agent). ABORTED "the revert of <12 hex> does not apply onto <12 hex>:
  // <git's words>" when it conflicts, or `commit` is a root or merge commit; INVALID_ARGUMENT
  // when either does not resolve.
  absl::StatusOr<std::string> MakeRevert(absl::string_view commit, absl::string_view onto) const;

  // Makes `worktree` a detached checkout of `commit` (a full hash): `git worktree add
  // --detach` the first time, `git checkout --force --detach` after, which rewrites only the
  // files that differ between the two commits, so the build outputs beside them stay and the
  // next build is incremental. Untracked files are kept (a build tree's objects are
  // untracked); changes to tracked files are discarded. FAILED_PRECONDITION when `worktree`
  // exists and is not a worktree of this repository.
  absl::Status CheckoutWorktree(const std::string& worktree, absl::string_view commit) const;

 private:
  // Runs git with `args` in the repository (git -C <repo>); stdout lines, or an error.
  absl::StatusOr<std::vector<std::string>> Git(std::vector<std::string> args,
                                               std::vector<std::string> env = {}) const;

  // Both revisions resolved (the error names the first that does not resolve).
  absl::StatusOr<std::pair<std::string, std::string>> ResolveBoth(absl::string_view first,
                                                                  absl::string_view second) const;

  // The only parent of `commit` (a full hash); INVALID_ARGUMENT for a root or merge commit.
  absl::StatusOr<std::string> ParentToRevert(const std::string& commit) const;

  // A temporary index (in the directory `scratch`) holding `onto` with the reverse diff of
  // `commit` applied three-way, or why it did not apply.
  struct RevertIndex {
    bool applied = false;
    std::string conflict;   // git apply's words when it did not apply, on one line
    std::string index_env;  // GIT_INDEX_FILE=<the index>
  };
  absl::StatusOr<RevertIndex> ApplyRevert(const std::string& commit, const std::string& parent,
                                          const std::string& onto,
                                          const std::string& scratch) const;

  std::string repository_;
};

// Where GitRepo::MakeRevert keeps the reverts it made: <prefix><hash of the revert commit>.
inline constexpr char kRevertRefPrefix[] = "refs/tlbfleet/reverts/";

// Whether `text` is a full commit hash: 40 or 64 lowercase hex digits.
bool IsFullCommitHash(absl::string_view text);

}  // namespace tlbfleet::agent::builder
