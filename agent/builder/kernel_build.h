#pragma once
// Builds one commit of one of the agent's kernel sources with one of its configs, in a build
// tree kept per (source, config), and collects the artifact (agent/builder/artifact.h).
//
// A build, in the tree <work_dir>/<config> (a git worktree of the source's repository):
//   1. `git checkout --force --detach <commit>`: only the files that differ change, so make
//      rebuilds only what depends on them;
//   2. the config: `make <base>` (defconfig, tinyconfig) or a copy of the base file, each
//      fragment appended in order, then `make olddefconfig`; a fragment's value that did not
//      survive (a dependency is missing) is a warning, as merge_config.sh says;
//   3. `make -j<online CPUs> all`, with CC="ccache gcc" when ccache is on PATH;
//   4. `make modules_install` into the artifact (stripped, as a tarball) when the config has
//      modules, `make -s kernelrelease`, `gcc --version`, then the image, .config and
//      System.map copied in and the manifest written (agent/builder/artifact.h).
// With BuildRequest::revert, step 0 makes the revert commit (GitRepo::MakeRevert, no work
// tree) and the steps build it.
// Every make runs with ARCH=<arch>, LC_ALL=C, and KBUILD_BUILD_TIMESTAMP = the commit's
// committer date, KBUILD_BUILD_USER/HOST = "tlbfleet", so a rebuild of one commit is the same
// build (and a ccache hit) whenever and wherever it runs.
//
// Each line of every step's output (stdout and stderr interleaved) goes to the log callback as
// it is written, after a "==> <command>" line naming the step.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/builder/artifact.h"
#include "agent/builder/command.h"
#include "agent/builder/git_repo.h"
#include "agent/builder/kernel_sources.h"

namespace tlbfleet::agent::builder {

struct BuildRequest {
  std::string source;  // a source name of the agent's KernelSources
  std::string config;  // a config name of the agent's KernelSources
  std::string commit;  // a full hash (resolve a revision with GitRepo::ResolveCommit first)
  // Where the finished artifact goes: an absolute path that must not exist yet (its parent is
  // created). Nothing is there unless the build succeeds.
  std::string artifact_dir;
  // Readable once the build must stop (agent::CancelToken::fd()); the running step's process
  // group is killed. -1 = not cancellable.
  int cancel_fd = -1;
  // A full hash, or empty: build `commit` with this commit reverted (a bisection's check of
  // its culprit: bad without it). The revert is made as a commit of its own onto `commit`
  // (GitRepo::MakeRevert: the same revert is the same hash everywhere), and that commit is
  // built as any other, in the same tree; BuildResult::commit and the manifest name it. One
  // that does not apply is a kBuild failure: "the revert of <12 hex> does not apply onto
  // <12 hex>: <git's words>".
  std::string revert;
  // Called once, on the building thread, when the commit to build is known (the revert
  // commit when `revert` is set), before its checkout. May be empty.
  std::function<void(const CommitInfo& commit)> on_commit;
};

struct BuildFailure {
  enum class Kind {
    kBuild,      // the commit does not build with this config (bisection: skip it)
    kHost,       // this host could not build it: disk full, git failed, a config file missing
    kCancelled,  // BuildRequest::cancel_fd
  };
  Kind kind = Kind::kBuild;
  std::string step;     // the command that failed, as in the log: "make ARCH=x86_64 -j2 all"
  std::string target;   // the innermost make target that failed ("mm/memory.o"); "" if unknown
  int exit_status = 0;  // the failed command's exit status
  // One line: "make ARCH=x86_64 -j2 all: target mm/memory.o failed (Error 1); exited with
  // status 2", "disk full (No space left on device) during make ...", "cancelled".
  std::string reason;
  std::vector<std::string> log_tail;  // the last lines of the log (up to kLogTailLines)
};

struct BuildResult {
  std::optional<BuildFailure> failure;  // unset: the build succeeded
  // The commit built (or being built when it failed): BuildRequest::commit, or the revert
  // commit made onto it. Empty hash when a revert did not apply.
  CommitInfo commit;
  artifacts::ArtifactManifest manifest;  // when it succeeded; build_id = sha256 of the image
  std::string artifact_dir;              // when it succeeded: BuildRequest::artifact_dir
  std::vector<std::string> warnings;     // fragment values the final .config does not have
  double seconds = 0;

  bool ok() const { return !failure.has_value(); }
};

struct BuilderOptions {
  int jobs = 0;            // make -j; 0 = the online CPUs
  bool use_ccache = true;  // CC="ccache gcc" when ccache is on PATH
  // The artifact's writes (a test fills the disk here); DiskWriter::Real() when null. Must
  // outlive the builder.
  artifacts::DiskWriter* disk = nullptr;
};

inline constexpr int kLogTailLines = 40;

// Thread-safe: builds of different (source, config) pairs may run at once; a second build of a
// pair whose tree is busy is refused (UNAVAILABLE), as the tree has one checkout.
class KernelBuilder {
 public:
  explicit KernelBuilder(KernelSources sources, BuilderOptions options = {});

  const KernelSources& sources() const { return sources_; }

  // <work_dir>/<config>: the build tree (a git worktree) of the pair.
  static std::string BuildTree(const KernelSource& source, const BuildConfig& config);

  // Runs the build; `log` (may be empty) is called on this thread. Not OK when nothing was
  // attempted: INVALID_ARGUMENT naming the field (unknown source or config, a commit that is
  // not a full hash or not in the repository), ALREADY_EXISTS (artifact_dir), UNAVAILABLE (the
  // tree is busy), FAILED_PRECONDITION (the repository is not usable). A build that ran and
  // failed is OK with BuildResult::failure set. Must not run on a thread that exits before
  // it returns (the steps' parent-death signal is tied to it).
  absl::StatusOr<BuildResult> Build(const BuildRequest& request, const LineFn& log) const;

 private:
  KernelSources sources_;
  BuilderOptions options_;
};

}  // namespace tlbfleet::agent::builder
