// Build times of the lab's kernel through the builder agent's own code (agent/builder:
// KernelBuilder::Build — checkout, config, make, artifact), for docs/performance.md (issue 21):
// a build from scratch (a new tree and an empty ccache: what a new builder does first), then
// neighbouring commits in the same tree (what a bisection step does), the tip 16 commits on,
// and the first commit again in a second new tree with ccache warm (what a builder whose tree
// was lost does). The from-scratch build is the reference every other row is a ratio of, so the
// figures of one run compare like with like.
//
//   tlbfleet_kernel_build_times [--repo /var/cache/tlbfleet-lab/linux]
//       [--config deploy/vm-lab/lab-kernel.config] [--work /var/tmp/tlbfleet-build-times]
//       [--jobs 0]
//
// Needs the lab's planted repository (`deploy/vm-lab/lab source`). Prints one row per build:
// what, the commit, seconds, the ratio to the from-scratch build and the log's line count.
// Its work directory (trees and the cold ccache, ~2 GB) is deleted at the start and the end.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/builder/git_repo.h"
#include "agent/builder/kernel_build.h"
#include "agent/builder/kernel_sources.h"

namespace {

using tlbfleet::agent::builder::BuildRequest;
using tlbfleet::agent::builder::BuildResult;
using tlbfleet::agent::builder::GitRepo;
using tlbfleet::agent::builder::KernelBuilder;
using tlbfleet::agent::builder::KernelSources;

struct Step {
  std::string what;
  std::string rev;
  std::string tree;  // the work_dir of the source: "a" or "b" (a second, new tree)
};

std::string Flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return argv[i + 1];
  }
  return fallback;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "kernel_build_times: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string repo = Flag(argc, argv, "--repo", "/var/cache/tlbfleet-lab/linux");
  const std::string config =
      std::filesystem::absolute(Flag(argc, argv, "--config", "deploy/vm-lab/lab-kernel.config"));
  const std::string work = Flag(argc, argv, "--work", "/var/tmp/tlbfleet-build-times");
  const int jobs = std::atoi(Flag(argc, argv, "--jobs", "0").c_str());
  if (!std::filesystem::exists(config)) return Fail(absl::StrCat("--config ", config, ": missing"));

  std::error_code ec;
  std::filesystem::remove_all(work, ec);
  std::filesystem::create_directories(work + "/ccache", ec);
  if (ec) return Fail(absl::StrCat("--work ", work, ": ", ec.message()));
  // An empty ccache of its own: the first build is from scratch whatever the machine's cache
  // holds; the later ones hit what the earlier ones of this run left.
  ::setenv("CCACHE_DIR", (work + "/ccache").c_str(), 1);

  const auto sources_for = [&](const std::string& tree) {
    return KernelSources::Parse(
        absl::StrCat("sources:\n  lab:\n    repository: ", repo, "\n    work_dir: ", work, "/tree-",
                     tree, "\nconfigs:\n  lab:\n    base: ", config, "\n"),
        "kernel_build_times");
  };
  const GitRepo git(repo);

  // The planted history (docs/vm-lab.md): lab-base, then commits 1..16 = lab-tip~15..lab-tip.
  const std::vector<Step> steps = {
      {"lab-base from scratch (new tree, no ccache)", "lab-base", "a"},
      {"commit 1 (Documentation only)", "lab-tip~15", "a"},
      {"commit 9 (mm/Kconfig, x86/mm, kernel/fork.c)", "lab-tip~7", "a"},
      {"commit 11 (arch/x86/mm/tlb.c, arm64)", "lab-tip~5", "a"},
      {"lab-tip (commit 16, 5 commits on)", "lab-tip", "a"},
      {"lab-base again, same tree", "lab-base", "a"},
      {"lab-base in a new tree, ccache warm", "lab-base", "b"},
  };
  std::printf("%-46s %-13s %9s %8s %9s\n", "build", "commit", "seconds", "ratio", "log lines");
  double reference = 0;
  int n = 0;
  for (const Step& step : steps) {
    absl::StatusOr<std::string> commit = git.ResolveCommit(step.rev);
    if (!commit.ok()) return Fail(absl::StrCat(step.rev, ": ", commit.status().message()));
    absl::StatusOr<KernelSources> sources = sources_for(step.tree);
    if (!sources.ok()) return Fail(std::string(sources.status().message()));
    tlbfleet::agent::builder::BuilderOptions options;
    options.jobs = jobs;
    KernelBuilder builder(*std::move(sources), options);
    BuildRequest request;
    request.source = "lab";
    request.config = "lab";
    request.commit = *commit;
    request.artifact_dir = absl::StrCat(work, "/artifact-", n);
    uint64_t lines = 0;
    absl::StatusOr<BuildResult> result = builder.Build(request, [&](std::string_view) { ++lines; });
    if (!result.ok()) return Fail(absl::StrCat(step.what, ": ", result.status().message()));
    if (!result->ok()) return Fail(absl::StrCat(step.what, ": ", result->failure->reason));
    if (n == 0) reference = result->seconds;
    std::printf("%-46s %-13s %9.1f %8.3f %9llu\n", step.what.c_str(), commit->substr(0, 12).c_str(),
                result->seconds, reference > 0 ? result->seconds / reference : 0.0,
                static_cast<unsigned long long>(lines));
    std::fflush(stdout);
    ++n;
  }
  std::filesystem::remove_all(work, ec);
  return 0;
}
