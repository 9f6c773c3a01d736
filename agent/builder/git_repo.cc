#include "agent/builder/git_repo.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/builder/command.h"
#include "common/files.h"
#include "common/yaml_fields.h"

namespace tlbfleet::agent::builder {
namespace {

namespace fs = std::filesystem;
using yaml_fields::Quote;

// A revision or branch name from the controller, as one argv word: it must not look like an
// option, and control characters have no place in one.
absl::Status CheckWord(absl::string_view what, absl::string_view word) {
  if (word.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  const bool control = std::any_of(word.begin(), word.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (word[0] == '-' || control) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", Quote(word), " is not valid"));
  }
  return absl::OkStatus();
}

Command GitCommand(const std::string& dir, std::vector<std::string> args,
                   std::vector<std::string> env) {
  Command command;
  command.argv = {"git", "-C", dir};
  for (std::string& arg : args) command.argv.push_back(std::move(arg));
  command.env = {"LC_ALL=C", "GIT_TERMINAL_PROMPT=0"};
  for (std::string& e : env) command.env.push_back(std::move(e));
  return command;
}

// git in `dir`; stdout lines, or INTERNAL naming the command and git's last words.
absl::StatusOr<std::vector<std::string>> GitIn(const std::string& dir,
                                               std::vector<std::string> args,
                                               std::vector<std::string> env = {}) {
  return CommandOutput(GitCommand(dir, std::move(args), std::move(env)));
}

// git in `dir` when its exit status is an answer (0 = yes, 1 = no); anything else is an error.
absl::StatusOr<bool> GitYesNo(const std::string& dir, std::vector<std::string> args,
                              std::vector<std::string> env = {}) {
  Command command = GitCommand(dir, std::move(args), std::move(env));
  absl::StatusOr<CommandResult> result = RunCommand(command, nullptr);
  if (!result.ok()) return result.status();
  if (result->ok()) return true;
  if (result->exit_code == 1 && result->signal == 0 && !result->timed_out) return false;
  return absl::InternalError(absl::StrCat(CommandLine(command.argv), ": ", result->Describe(), ": ",
                                          Trim(result->stderr_tail)));
}

std::string FirstLine(const std::vector<std::string>& lines) {
  return lines.empty() ? "" : lines.front();
}

// A temporary directory, removed with what it holds when the object goes.
class ScratchDir {
 public:
  static absl::StatusOr<ScratchDir> Make() {
    const char* base = ::getenv("TMPDIR");
    std::string tmpl =
        absl::StrCat(base != nullptr && *base != '\0' ? base : "/tmp", "/tlbfleet-git-XXXXXX");
    if (::mkdtemp(tmpl.data()) == nullptr) return ErrnoStatus(errno, "mkdtemp " + tmpl);
    return ScratchDir(std::move(tmpl));
  }
  ScratchDir(ScratchDir&& other) noexcept : path_(std::exchange(other.path_, "")) {}
  ~ScratchDir() {
    std::error_code ignored;  // a leftover in $TMPDIR is not worth failing for
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace

bool IsFullCommitHash(absl::string_view text) {
  if (text.size() != 40 && text.size() != 64) return false;
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

GitRepo::GitRepo(std::string repository) : repository_(std::move(repository)) {}

absl::StatusOr<std::vector<std::string>> GitRepo::Git(std::vector<std::string> args,
                                                      std::vector<std::string> env) const {
  return GitIn(repository_, std::move(args), std::move(env));
}

absl::StatusOr<std::string> GitRepo::ResolveCommit(absl::string_view revision) const {
  if (absl::Status s = CheckWord("revision", revision); !s.ok()) return s;
  absl::StatusOr<std::vector<std::string>> hash =
      Git({"rev-parse", "--verify", "--quiet", absl::StrCat(revision, "^{commit}")});
  if (hash.ok() && IsFullCommitHash(FirstLine(*hash))) return FirstLine(*hash);
  // Not resolving is the caller's mistake only if the repository itself is fine.
  if (absl::StatusOr<std::vector<std::string>> dir = Git({"rev-parse", "--git-dir"}); !dir.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(repository_, " is not a usable git repository: ", dir.status().message()));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("revision ", Quote(revision), " does not name a commit in ", repository_));
}

absl::StatusOr<std::pair<std::string, std::string>> GitRepo::ResolveBoth(
    absl::string_view first, absl::string_view second) const {
  absl::StatusOr<std::string> a = ResolveCommit(first);
  if (!a.ok()) return a.status();
  absl::StatusOr<std::string> b = ResolveCommit(second);
  if (!b.ok()) return b.status();
  return std::make_pair(*std::move(a), *std::move(b));
}

absl::StatusOr<bool> GitRepo::IsAncestor(absl::string_view ancestor,
                                         absl::string_view descendant) const {
  absl::StatusOr<std::pair<std::string, std::string>> both = ResolveBoth(ancestor, descendant);
  if (!both.ok()) return both.status();
  return GitYesNo(repository_, {"merge-base", "--is-ancestor", both->first, both->second});
}

absl::StatusOr<std::vector<std::string>> GitRepo::CommitsBetween(absl::string_view good,
                                                                 absl::string_view bad) const {
  absl::StatusOr<std::pair<std::string, std::string>> both = ResolveBoth(good, bad);
  if (!both.ok()) return both.status();
  return Git({"rev-list", "--topo-order", "--reverse", both->first + ".." + both->second});
}

absl::StatusOr<CommitInfo> GitRepo::Describe(absl::string_view revision) const {
  absl::StatusOr<std::string> hash = ResolveCommit(revision);
  if (!hash.ok()) return hash.status();
  // The subject last: %s folds a multi-line subject into one line, and may be empty.
  absl::StatusOr<std::vector<std::string>> lines =
      Git({"show", "-s", "--no-show-signature", "--format=%H%n%an <%ae>%n%aI%n%cD%n%s", *hash});
  if (!lines.ok()) return lines.status();
  if (lines->size() < 4) {
    return absl::InternalError(absl::StrCat("git show ", *hash, ": unexpected output"));
  }
  CommitInfo info;
  info.hash = (*lines)[0];
  info.author = (*lines)[1];
  info.author_date = (*lines)[2];
  info.commit_date_rfc2822 = (*lines)[3];
  if (lines->size() > 4) info.subject = (*lines)[4];
  return info;
}

absl::Status GitRepo::Fetch(absl::string_view remote, std::chrono::milliseconds timeout) const {
  if (absl::Status s = CheckWord("remote", remote); !s.ok()) return s;
  Command command =
      GitCommand(repository_, {"fetch", "--quiet", "--tags", std::string(remote)}, {});
  command.timeout = timeout;
  absl::StatusOr<CommandResult> result = RunCommand(command, nullptr);
  if (!result.ok()) return result.status();
  if (result->ok()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("git fetch ", remote, " in ", repository_, ": ",
                                             result->Describe(), ": ", Trim(result->stderr_tail)));
}

absl::StatusOr<std::string> GitRepo::ResolveBranch(absl::string_view branch,
                                                   absl::string_view remote) const {
  if (absl::Status s = CheckWord("branch", branch); !s.ok()) return s;
  std::vector<std::string> refs;
  if (!remote.empty()) {
    if (absl::Status s = CheckWord("remote", remote); !s.ok()) return s;
    refs.push_back(absl::StrCat("refs/remotes/", remote, "/", branch));
  }
  refs.push_back(absl::StrCat("refs/heads/", branch));
  for (const std::string& ref : refs) {
    absl::StatusOr<std::vector<std::string>> hash =
        Git({"rev-parse", "--verify", "--quiet", absl::StrCat(ref, "^{commit}")});
    if (hash.ok() && IsFullCommitHash(FirstLine(*hash))) return FirstLine(*hash);
  }
  return absl::InvalidArgumentError(absl::StrCat("branch ", Quote(branch), " does not exist in ",
                                                 repository_, " (looked for ",
                                                 absl::StrJoin(refs, ", "), ")"));
}

absl::StatusOr<std::string> GitRepo::ParentToRevert(const std::string& commit) const {
  absl::StatusOr<std::vector<std::string>> parents =
      Git({"rev-list", "--parents", "-n", "1", commit});
  if (!parents.ok()) return parents.status();
  std::vector<std::string> words = absl::StrSplit(FirstLine(*parents), ' ', absl::SkipEmpty());
  if (words.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "commit ", commit, words.size() < 2 ? " is a root commit" : " is a merge commit",
        ": git revert cannot undo it on its own"));
  }
  return words[1];
}

absl::StatusOr<GitRepo::RevertIndex> GitRepo::ApplyRevert(const std::string& commit,
                                                          const std::string& parent,
                                                          const std::string& onto,
                                                          const std::string& scratch) const {
  const std::string index = scratch + "/index";
  const std::string patch = scratch + "/revert.patch";
  RevertIndex out;
  out.index_env = "GIT_INDEX_FILE=" + index;
  // Explicit prefixes: a repository's diff.noprefix would make a patch apply cannot read.
  absl::StatusOr<std::vector<std::string>> diff =
      Git({"diff", "--binary", "--full-index", "--no-color", "--no-ext-diff", "--no-textconv",
           "--src-prefix=a/", "--dst-prefix=b/", "--output=" + patch, commit, parent});
  if (!diff.ok()) return diff.status();
  absl::StatusOr<std::vector<std::string>> read = Git({"read-tree", onto}, {out.index_env});
  if (!read.ok()) return read.status();
  std::error_code ec;
  if (fs::file_size(patch, ec) == 0 && !ec) {  // the commit changed nothing: onto's tree
    out.applied = true;
    return out;
  }
  Command command =
      GitCommand(repository_, {"apply", "--cached", "--3way", patch}, {out.index_env});
  absl::StatusOr<CommandResult> result = RunCommand(command, nullptr);
  if (!result.ok()) return result.status();
  if (result->ok()) {
    out.applied = true;
    return out;
  }
  if (result->exit_code == 1 && result->signal == 0 && !result->timed_out) {
    // git's own account of the conflict, on one line: "Applied patch to 'f' with
    // conflicts.; U f".
    std::vector<std::string> lines;
    for (absl::string_view line : absl::StrSplit(result->stderr_tail, '\n', absl::SkipEmpty())) {
      line = absl::StripAsciiWhitespace(line);
      if (!line.empty()) lines.emplace_back(line);
    }
    out.conflict = absl::StrJoin(lines, "; ");
    return out;
  }
  return absl::InternalError(absl::StrCat(CommandLine(command.argv), ": ", result->Describe(), ": ",
                                          Trim(result->stderr_tail)));
}

absl::StatusOr<bool> GitRepo::RevertApplies(absl::string_view commit,
                                            absl::string_view onto) const {
  absl::StatusOr<std::pair<std::string, std::string>> both = ResolveBoth(commit, onto);
  if (!both.ok()) return both.status();
  absl::StatusOr<std::string> parent = ParentToRevert(both->first);
  if (!parent.ok()) return parent.status();
  absl::StatusOr<ScratchDir> scratch = ScratchDir::Make();
  if (!scratch.ok()) return scratch.status();
  absl::StatusOr<RevertIndex> index =
      ApplyRevert(both->first, *parent, both->second, scratch->path());
  if (!index.ok()) return index.status();
  return index->applied;
}

absl::StatusOr<std::string> GitRepo::MakeRevert(absl::string_view commit,
                                                absl::string_view onto) const {
  absl::StatusOr<std::pair<std::string, std::string>> both = ResolveBoth(commit, onto);
  if (!both.ok()) return both.status();
  const std::string& c = both->first;
  const std::string& o = both->second;
  const std::string does_not_apply = absl::StrCat("the revert of ", c.substr(0, 12),
                                                  " does not apply onto ", o.substr(0, 12), ": ");
  absl::StatusOr<std::string> parent = ParentToRevert(c);
  if (!parent.ok()) {
    if (!absl::IsInvalidArgument(parent.status())) return parent.status();
    return absl::AbortedError(absl::StrCat(does_not_apply, parent.status().message()));
  }
  absl::StatusOr<ScratchDir> scratch = ScratchDir::Make();
  if (!scratch.ok()) return scratch.status();
  absl::StatusOr<RevertIndex> index = ApplyRevert(c, *parent, o, scratch->path());
  if (!index.ok()) return index.status();
  if (!index->applied) return absl::AbortedError(absl::StrCat(does_not_apply, index->conflict));
  absl::StatusOr<std::vector<std::string>> tree = Git({"write-tree"}, {index->index_env});
  if (!tree.ok()) return tree.status();
  // The identity and both dates fixed (the committer date of `onto`), the message git
  // revert's: the same revert is the same commit hash on every builder and every time, so a
  // build of it is found again (the controller reuses a commit built before) and ccache hits.
  absl::StatusOr<std::vector<std::string>> about =
      Git({"show", "-s", "--no-show-signature", "--format=%ct %cz%n%s", c + "^{commit}"});
  absl::StatusOr<std::vector<std::string>> onto_date =
      Git({"show", "-s", "--no-show-signature", "--format=%ct %cz", o});
  if (!about.ok()) return about.status();
  if (!onto_date.ok()) return onto_date.status();
  const std::string subject = about->size() > 1 ? (*about)[1] : "";
  const std::string date = FirstLine(*onto_date);
  absl::StatusOr<std::vector<std::string>> made =
      Git({"-c", "i18n.commitEncoding=UTF-8", "commit-tree", "--no-gpg-sign", FirstLine(*tree),
           "-p", o, "-m", absl::StrCat("Revert \"", subject, "\"\n\nThis reverts commit ", c, ".")},
          {"GIT_AUTHOR_NAME=tlbfleet", "GIT_AUTHOR_EMAIL=tlbfleet@localhost",
           "GIT_COMMITTER_NAME=tlbfleet", "GIT_COMMITTER_EMAIL=tlbfleet@localhost",
           "GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date});
  if (!made.ok()) return made.status();
  const std::string revert = FirstLine(*made);
  if (!IsFullCommitHash(revert)) {
    return absl::InternalError(absl::StrCat("git commit-tree answered ", Quote(revert)));
  }
  // Reachable from a ref: otherwise a `git gc` (or git's own auto gc) may prune it while a
  // build, or the next build of the same revert, still needs it.
  absl::StatusOr<std::vector<std::string>> kept =
      Git({"update-ref", absl::StrCat(kRevertRefPrefix, revert), revert});
  if (!kept.ok()) return kept.status();
  return revert;
}

absl::Status GitRepo::CheckoutWorktree(const std::string& worktree,
                                       absl::string_view commit) const {
  if (!IsFullCommitHash(commit)) {
    return absl::InvalidArgumentError(
        absl::StrCat("commit ", Quote(commit), " is not a full commit hash"));
  }
  std::error_code ec;
  const bool fresh = !fs::exists(worktree, ec) || fs::is_empty(worktree, ec);
  if (fresh) {
    // A worktree whose directory was deleted stays registered until pruned, and `worktree
    // add` refuses a registered path.
    absl::StatusOr<std::vector<std::string>> pruned = Git({"worktree", "prune"});
    if (!pruned.ok()) return pruned.status();
    if (absl::Status s = MakeDirs(DirName(worktree)); !s.ok()) return s;
    absl::StatusOr<std::vector<std::string>> added =
        Git({"worktree", "add", "--quiet", "--detach", worktree, std::string(commit)});
    if (!added.ok()) return added.status();
  } else {
    const std::vector<std::string> common = {"rev-parse", "--path-format=absolute",
                                             "--git-common-dir"};
    absl::StatusOr<std::vector<std::string>> ours = Git(common);
    if (!ours.ok()) return ours.status();
    absl::StatusOr<std::vector<std::string>> theirs = GitIn(worktree, common);
    if (!theirs.ok() || fs::weakly_canonical(FirstLine(*theirs), ec) !=
                            fs::weakly_canonical(FirstLine(*ours), ec)) {
      return absl::FailedPreconditionError(absl::StrCat(
          worktree, " exists and is not a worktree of ", repository_, ": move it away"));
    }
    absl::StatusOr<std::vector<std::string>> checked_out =
        GitIn(worktree, {"checkout", "--quiet", "--force", "--detach", std::string(commit)});
    if (!checked_out.ok()) return checked_out.status();
  }
  absl::StatusOr<std::vector<std::string>> head = GitIn(worktree, {"rev-parse", "HEAD"});
  if (!head.ok()) return head.status();
  if (FirstLine(*head) != commit) {
    return absl::InternalError(
        absl::StrCat(worktree, ": HEAD is ", FirstLine(*head), " after checking out ", commit));
  }
  return absl::OkStatus();
}

}  // namespace tlbfleet::agent::builder
