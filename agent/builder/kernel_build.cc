#include "agent/builder/kernel_build.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/builder/git_repo.h"
#include "common/files.h"
#include "common/scoped_fd.h"

namespace tlbfleet::agent::builder {
namespace {

namespace fs = std::filesystem;

constexpr char kNoSpace[] = "No space left on device";

// Per architecture: the image make leaves and the name it gets in the artifact.
struct ArchInfo {
  const char* arch;
  const char* image_path;
  const char* image_name;
};
constexpr ArchInfo kArchInfo[] = {{"x86_64", "arch/x86/boot/bzImage", "bzImage"}};

const ArchInfo* FindArch(const std::string& arch) {
  for (const ArchInfo& info : kArchInfo) {
    if (arch == info.arch) return &info;
  }
  return nullptr;
}

// "CONFIG_FOO=y" → {CONFIG_FOO, "y"}; "# CONFIG_FOO is not set" → {CONFIG_FOO, "n"}.
std::map<std::string, std::string> ConfigValues(absl::string_view text) {
  std::map<std::string, std::string> values;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "# ")) {
      if (absl::ConsumeSuffix(&line, " is not set") && absl::StartsWith(line, "CONFIG_")) {
        values[std::string(line)] = "n";
      }
      continue;
    }
    const size_t eq = line.find('=');
    if (absl::StartsWith(line, "CONFIG_") && eq != absl::string_view::npos) {
      values[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    }
  }
  return values;
}

bool HasModules(const std::map<std::string, std::string>& config) {
  auto modules = config.find("CONFIG_MODULES");
  if (modules == config.end() || modules->second != "y") return false;
  for (const auto& [symbol, value] : config) {
    if (value == "m") return true;
  }
  return false;
}

// GNU make's report of a failed recipe, "make[2]: *** [scripts/Makefile.build:250: mm/x.o]
// Error 1", as {target, status}; the first one in a log is the innermost failure.
std::optional<std::pair<std::string, int>> FailedTarget(absl::string_view line) {
  if (!absl::StartsWith(line, "make")) return std::nullopt;
  const size_t open = line.find("*** [");
  const size_t close = line.find("] Error ", open);
  if (open == absl::string_view::npos || close == absl::string_view::npos) return std::nullopt;
  absl::string_view target = line.substr(open + 5, close - open - 5);
  if (size_t where = target.rfind(": "); where != absl::string_view::npos) {
    target = target.substr(where + 2);  // after the recipe's "Makefile:12: "
  }
  int status = 0;
  if (!absl::SimpleAtoi(line.substr(close + 8), &status)) status = 0;
  return std::make_pair(std::string(target), status);
}

int OnlineCpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

// One build's steps and what they have logged so far.
class BuildRun {
 public:
  BuildRun(const LineFn& log, const std::string& tree, int cancel_fd)
      : log_(log), tree_(tree), cancel_fd_(cancel_fd) {}

  void set_env(std::vector<std::string> env) { env_ = std::move(env); }

  void Log(std::string_view line) {
    tail_.emplace_back(line);
    if (tail_.size() > static_cast<size_t>(kLogTailLines)) tail_.pop_front();
    if (log_) log_(line);
  }

  // Runs one step in the build tree; its lines go to the log (and to `capture`). nullopt when
  // it succeeded.
  std::optional<BuildFailure> Run(const std::vector<std::string>& argv,
                                  std::vector<std::string>* capture = nullptr) {
    const std::string step = CommandLine(argv);
    Log("==> " + step);
    Command command;
    command.argv = argv;
    command.cwd = tree_;
    command.env = env_;
    command.merge_stderr = true;
    command.cancel_fd = cancel_fd_;
    std::optional<std::pair<std::string, int>> failed;
    bool no_space = false;
    absl::StatusOr<CommandResult> result = RunCommand(command, [&](std::string_view text) {
      const absl::string_view line(text.data(), text.size());  // Debian's absl has its own
      if (!failed) failed = FailedTarget(line);
      no_space |= absl::StrContains(line, kNoSpace);
      if (capture != nullptr) capture->emplace_back(text);
      Log(text);
    });
    if (!result.ok()) return HostFailure(step, result.status());
    if (result->ok()) return std::nullopt;
    BuildFailure failure;
    failure.step = step;
    failure.exit_status = result->exit_code;
    if (result->cancelled) {
      failure.kind = BuildFailure::Kind::kCancelled;
      failure.reason = absl::StrCat("cancelled during ", step);
    } else if (no_space) {
      failure.kind = BuildFailure::Kind::kHost;
      failure.reason = absl::StrCat("disk full (", kNoSpace, ") during ", step);
    } else {
      failure.kind = BuildFailure::Kind::kBuild;
      if (failed) {
        failure.target = failed->first;
        failure.reason = absl::StrCat(step, ": target ", failed->first, " failed (Error ",
                                      failed->second, "); ");
      } else {
        failure.reason = absl::StrCat(step, ": ");
      }
      absl::StrAppend(&failure.reason, result->Describe());
    }
    return Finish(std::move(failure));
  }

  // A step the builder does itself that failed for `reason` (logged).
  BuildFailure Failed(BuildFailure::Kind kind, const std::string& step, std::string reason) {
    BuildFailure failure;
    failure.kind = kind;
    failure.step = step;
    failure.reason = std::move(reason);
    Log("==> failed: " + failure.reason);
    return Finish(std::move(failure));
  }

  // A step the builder does itself (a checkout, a copy) that failed with `status`.
  BuildFailure HostFailure(const std::string& step, const absl::Status& status) {
    BuildFailure failure;
    failure.kind = BuildFailure::Kind::kHost;
    failure.step = step;
    const bool no_space = status.code() == absl::StatusCode::kResourceExhausted ||
                          absl::StrContains(status.message(), kNoSpace);
    failure.reason = absl::StrCat(no_space ? "disk full: " : "", step, ": ", status.message());
    Log("==> failed: " + failure.reason);
    return Finish(std::move(failure));
  }

 private:
  BuildFailure Finish(BuildFailure failure) {
    failure.log_tail.assign(tail_.begin(), tail_.end());
    return failure;
  }

  const LineFn& log_;
  const std::string tree_;
  const int cancel_fd_;
  std::vector<std::string> env_;
  std::deque<std::string> tail_;
};

// Steps 2: .config from the base and the fragments. Returns the failure, if any; warnings
// for fragment values the final .config lacks.
std::optional<BuildFailure> WriteConfig(BuildRun& run, const BuildConfig& config,
                                        const std::vector<std::string>& make,
                                        const std::string& tree,
                                        std::vector<std::string>& warnings) {
  const std::string dot_config = tree + "/.config";
  if (config.base_is_target()) {
    std::vector<std::string> argv = make;
    argv.push_back(config.base);
    if (auto failure = run.Run(argv)) return failure;
  } else {
    run.Log(absl::StrCat("==> cp ", config.base, " .config"));
    std::error_code ec;
    fs::copy_file(config.base, dot_config, fs::copy_options::overwrite_existing, ec);
    if (ec) return run.HostFailure("config base", ErrnoStatus(ec.value(), "copy " + config.base));
  }
  std::map<std::string, std::pair<std::string, std::string>> wanted;  // symbol → {value, file}
  if (!config.fragments.empty()) {
    absl::StatusOr<std::string> text = ReadFile(dot_config);
    if (!text.ok()) return run.HostFailure("config", text.status());
    for (const std::string& fragment : config.fragments) {
      run.Log(absl::StrCat("==> append ", fragment, " to .config"));
      absl::StatusOr<std::string> more = ReadFile(fragment);
      if (!more.ok()) return run.HostFailure("config fragment", more.status());
      absl::StrAppend(&*text, "\n# fragment ", fragment, "\n", *more, "\n");
      for (const auto& [symbol, value] : ConfigValues(*more)) wanted[symbol] = {value, fragment};
    }
    if (absl::Status s = WriteFileAtomic(dot_config, *text); !s.ok()) {
      return run.HostFailure("config", s);
    }
  }
  std::vector<std::string> argv = make;
  argv.push_back("olddefconfig");
  if (auto failure = run.Run(argv)) return failure;
  absl::StatusOr<std::string> final_text = ReadFile(dot_config);
  if (!final_text.ok()) return run.HostFailure("config", final_text.status());
  const std::map<std::string, std::string> final_values = ConfigValues(*final_text);
  for (const auto& [symbol, want] : wanted) {
    auto got = final_values.find(symbol);
    const std::string have = got == final_values.end() ? "n" : got->second;
    if (have != want.first) {
      warnings.push_back(absl::StrCat(want.second, " asks for ", symbol, "=", want.first,
                                      "; the final .config has ", symbol, "=", have));
      run.Log("==> warning: " + warnings.back());
    }
  }
  return std::nullopt;
}

}  // namespace

KernelBuilder::KernelBuilder(KernelSources sources, BuilderOptions options)
    : sources_(std::move(sources)), options_(options) {}

std::string KernelBuilder::BuildTree(const KernelSource& source, const BuildConfig& config) {
  return absl::StrCat(source.work_dir, "/", config.name);
}

absl::StatusOr<BuildResult> KernelBuilder::Build(const BuildRequest& request,
                                                 const LineFn& log) const {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<const KernelSource*> source = sources_.FindSource(request.source);
  if (!source.ok()) return source.status();
  absl::StatusOr<const BuildConfig*> config = sources_.FindConfig(request.config);
  if (!config.ok()) return config.status();
  const ArchInfo* arch = FindArch((*source)->arch);
  if (arch == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("source: arch ", (*source)->arch, " of source ",
                                                   (*source)->name, " cannot be built"));
  }
  if (!IsFullCommitHash(request.commit)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "commit: \"", request.commit, "\" is not a full commit hash (resolve the revision first)"));
  }
  if (!request.revert.empty() && !IsFullCommitHash(request.revert)) {
    return absl::InvalidArgumentError(
        absl::StrCat("revert: \"", request.revert, "\" is not a full commit hash"));
  }
  GitRepo repo((*source)->repository);
  for (const auto& [field, hash] :
       {std::pair<const char*, const std::string&>{"commit", request.commit},
        std::pair<const char*, const std::string&>{"revert", request.revert}}) {
    if (hash.empty()) continue;
    absl::StatusOr<std::string> resolved = repo.ResolveCommit(hash);
    if (!resolved.ok() && resolved.status().code() != absl::StatusCode::kInvalidArgument) {
      return resolved.status();
    }
    if (!resolved.ok() || *resolved != hash) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": ", hash, " is not a commit of ", repo.path()));
    }
  }
  absl::StatusOr<CommitInfo> commit = repo.Describe(request.commit);
  if (!commit.ok()) return commit.status();

  // One build per tree at a time: the tree has one checkout.
  const std::string tree = BuildTree(**source, **config);
  if (absl::Status s = MakeDirs((*source)->work_dir); !s.ok()) return s;
  const std::string lock_path = tree + ".lock";
  ScopedFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!lock) return ErrnoStatus(errno, "open " + lock_path);
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    return absl::UnavailableError(absl::StrCat("build tree ", tree, " is busy with another build"));
  }
  absl::StatusOr<PartialArtifact> artifact = PartialArtifact::Create(
      request.artifact_dir,
      options_.disk != nullptr ? *options_.disk : artifacts::DiskWriter::Real());
  if (!artifact.ok()) return artifact.status();

  BuildResult result;
  BuildRun run(log, tree, request.cancel_fd);
  auto fail = [&](BuildFailure failure) {
    result.failure = std::move(failure);
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  };
  // Step 0: the revert, a commit of its own, built from here on as any other commit.
  result.commit = *commit;
  // Its log lines come after on_commit, so a caller's first word of the build is the commit.
  std::vector<std::string> revert_log;
  if (!request.revert.empty()) {
    const std::string step = absl::StrCat("git revert ", request.revert, " onto ", request.commit);
    absl::StatusOr<std::string> made = repo.MakeRevert(request.revert, request.commit);
    absl::StatusOr<CommitInfo> revert = made.ok() ? repo.Describe(*made) : made.status();
    if (!revert.ok()) {
      run.Log(absl::StrCat("==> ", step, " (on a temporary index)"));
      result.commit = CommitInfo{};
      if (absl::IsAborted(revert.status())) {
        return fail(
            run.Failed(BuildFailure::Kind::kBuild, step, std::string(revert.status().message())));
      }
      return fail(run.HostFailure(step, revert.status()));
    }
    result.commit = *std::move(revert);
    revert_log = {absl::StrCat("==> ", step, " (on a temporary index)"),
                  absl::StrCat("==> made ", result.commit.hash, " (", result.commit.subject, ")")};
  }
  const CommitInfo& built = result.commit;
  if (request.on_commit) request.on_commit(built);
  for (const std::string& line : revert_log) run.Log(line);

  run.Log(absl::StrCat("==> build ", (*source)->name, " ", built.hash, " (", built.subject,
                       ") with config ", (*config)->name, " in ", tree));
  run.Log(absl::StrCat("==> git checkout --force --detach ", built.hash));
  if (absl::Status s = repo.CheckoutWorktree(tree, built.hash); !s.ok()) {
    return fail(run.HostFailure("git checkout", s));
  }

  run.set_env({"LC_ALL=C", "KBUILD_BUILD_TIMESTAMP=" + built.commit_date_rfc2822,
               "KBUILD_BUILD_USER=tlbfleet", "KBUILD_BUILD_HOST=tlbfleet"});
  std::vector<std::string> make = {"make", absl::StrCat("ARCH=", arch->arch)};
  if (options_.use_ccache && FindProgram("ccache").ok()) make.push_back("CC=ccache gcc");
  if (auto failure = WriteConfig(run, **config, make, tree, result.warnings)) {
    return fail(*std::move(failure));
  }
  std::vector<std::string> all = make;
  all.push_back(absl::StrCat("-j", options_.jobs > 0 ? options_.jobs : OnlineCpus()));
  all.push_back("all");
  if (auto failure = run.Run(all)) return fail(*std::move(failure));

  absl::StatusOr<std::string> config_text = ReadFile(tree + "/.config");
  if (!config_text.ok()) return fail(run.HostFailure("read .config", config_text.status()));
  if (HasModules(ConfigValues(*config_text))) {
    const std::string root = artifact->ScratchPath("modules-root");
    std::vector<std::string> install = make;
    install.insert(install.end(),
                   {"INSTALL_MOD_PATH=" + root, "INSTALL_MOD_STRIP=1", "modules_install"});
    if (auto failure = run.Run(install)) return fail(*std::move(failure));
    // Sorted, owned by root at time 0: one set of modules makes one tarball.
    if (auto failure =
            run.Run({"tar", "--create", "--gzip", "--sort=name", "--mtime=@0", "--owner=0",
                     "--group=0", "--numeric-owner",
                     "--file=" + artifact->FilePath("modules.tar.gz"), "-C", root, "."})) {
      return fail(*std::move(failure));
    }
    std::error_code ec;
    fs::remove_all(root, ec);
    if (ec) return fail(run.HostFailure("remove " + root, ErrnoStatus(ec.value(), root)));
  }

  std::vector<std::string> release_lines;
  std::vector<std::string> release = make;
  release.insert(release.end(), {"-s", "kernelrelease"});
  if (auto failure = run.Run(release, &release_lines)) return fail(*std::move(failure));
  // Not logged: the version is in the manifest, gcc's copyright notice is not worth the lines.
  Command gcc_version;
  gcc_version.argv = {"gcc", "--version"};
  absl::StatusOr<std::vector<std::string>> compiler = CommandOutput(gcc_version);
  if (!compiler.ok()) return fail(run.HostFailure("gcc --version", compiler.status()));

  artifacts::ArtifactManifest& manifest = result.manifest;
  manifest.source = (*source)->name;
  manifest.config = (*config)->name;
  manifest.commit = built.hash;
  manifest.arch = arch->arch;
  for (const std::string& line : release_lines) {
    if (!Trim(line).empty()) manifest.kernel_release = Trim(line);
  }
  manifest.compiler = compiler->empty() ? "" : compiler->front();
  const std::pair<std::string, std::string> copies[] = {
      {arch->image_path, arch->image_name}, {".config", "config"}, {"System.map", "System.map"}};
  for (const auto& [from, name] : copies) {
    if (absl::Status s = artifact->CopyIn(tree + "/" + from, name); !s.ok()) {
      return fail(run.HostFailure("collect the artifact", s));
    }
  }
  if (absl::Status s = artifact->Commit(manifest, arch->image_name); !s.ok()) {
    return fail(run.HostFailure("write the artifact", s));
  }
  result.artifact_dir = request.artifact_dir;
  run.Log(absl::StrCat("==> built ", manifest.kernel_release, ", build id ", manifest.build_id,
                       ", in ", request.artifact_dir));
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tlbfleet::agent::builder
