#include "agent/runner/build_runner.h"

#include <filesystem>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "agent/builder/git_repo.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::agent {
namespace {

// The build's log to the controller in BuildProgress messages: a batch goes when it holds
// `max_lines` lines (on the build's thread) or when it is `interval` old (on a flusher thread
// of its own: make may print nothing for a minute while it links). Batches go out in order.
class BuildLogBatcher {
 public:
  BuildLogBatcher(int64_t task_id, std::function<void(const v1::AgentMessage&)> send,
                  absl::Duration interval, size_t max_lines)
      : task_id_(task_id), send_(std::move(send)), interval_(interval), max_lines_(max_lines) {
    flusher_ = std::thread([this] { FlushLoop(); });
  }
  // Sends what is left.
  ~BuildLogBatcher() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
      cv_.SignalAll();
    }
    flusher_.join();
    Flush();
  }

  void Add(std::string_view line) {
    bool full = false;
    {
      absl::MutexLock lock(&mu_);
      if (lines_.empty()) first_line_at_ = absl::Now();
      lines_.emplace_back(line);
      full = lines_.size() >= max_lines_;
      if (lines_.size() == 1) cv_.SignalAll();
    }
    if (full) Flush();
  }

  void Flush() {
    // send_mu_ first: a batch taken is sent before the next one is taken.
    absl::MutexLock send_lock(&send_mu_);
    std::vector<std::string> lines;
    {
      absl::MutexLock lock(&mu_);
      lines.swap(lines_);
    }
    if (lines.empty()) return;
    v1::AgentMessage message;
    v1::BuildProgress* progress = message.mutable_build_progress();
    progress->set_task_id(task_id_);
    for (std::string& line : lines) progress->add_log_lines(std::move(line));
    send_(message);
  }

 private:
  void FlushLoop() {
    absl::MutexLock lock(&mu_);
    while (!stop_) {
      if (lines_.empty()) {
        cv_.Wait(&mu_);
        continue;
      }
      const absl::Time due = first_line_at_ + interval_;
      if (absl::Now() < due) {
        cv_.WaitWithDeadline(&mu_, due);
        continue;
      }
      mu_.Unlock();
      Flush();
      mu_.Lock();
    }
  }

  const int64_t task_id_;
  const std::function<void(const v1::AgentMessage&)> send_;
  const absl::Duration interval_;
  const size_t max_lines_;
  absl::Mutex send_mu_;
  absl::Mutex mu_;
  absl::CondVar cv_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
  absl::Time first_line_at_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread flusher_;
};

v1::BuildStatus StatusOfFailure(builder::BuildFailure::Kind kind) {
  switch (kind) {
    case builder::BuildFailure::Kind::kBuild:
      return v1::BUILD_STATUS_FAILED;
    case builder::BuildFailure::Kind::kHost:
      return v1::BUILD_STATUS_HOST_FAILED;
    case builder::BuildFailure::Kind::kCancelled:
      return v1::BUILD_STATUS_CANCELLED;
  }
  return v1::BUILD_STATUS_HOST_FAILED;
}

// "3h", "90m", "1.5s": the timeout as --kernel-build-timeout takes it.
std::string FormatTimeout(absl::Duration timeout) { return absl::FormatDuration(timeout); }

void Fail(v1::BuildComplete& complete, v1::BuildStatus status, std::string reason) {
  complete.set_status(status);
  complete.set_reason(std::move(reason));
}

}  // namespace

BuildRunner::BuildRunner(builder::KernelSources sources, BuildRunnerOptions options,
                         ArtifactUploader upload, Sender send)
    : sources_(std::move(sources)),
      builder_(sources_, options.builder),
      options_(std::move(options)),
      upload_(std::move(upload)),
      send_(std::move(send)) {
  // What an agent killed mid-build or mid-upload left: builds are not resumed.
  std::error_code ec;
  std::filesystem::remove_all(options_.staging_dir + "/builds", ec);
  if (ec) spdlog::warn("removing {}/builds: {}", options_.staging_dir, ec.message());
}

BuildRunner::~BuildRunner() {
  std::unique_ptr<Build> build;
  {
    absl::MutexLock lock(&mu_);
    build = std::move(build_);
    if (build != nullptr && !build->done) {
      build->lost = true;
      build->cancel.Cancel("agent stopping");
    }
  }
  if (build != nullptr && build->thread.joinable()) build->thread.join();
}

std::optional<int64_t> BuildRunner::running() const {
  absl::MutexLock lock(&mu_);
  if (build_ == nullptr || build_->done) return std::nullopt;
  return build_->task.task_id();
}

void BuildRunner::OnTask(const v1::BuildTask& task) {
  std::unique_ptr<Build> previous;
  std::optional<int64_t> busy_with;
  {
    absl::MutexLock lock(&mu_);
    if (build_ != nullptr && !build_->done) {
      if (build_->task.task_id() == task.task_id()) {
        spdlog::info("build task {} is already running; ignoring the repeat", task.task_id());
        return;
      }
      busy_with = build_->task.task_id();
    } else {
      previous = std::move(build_);
      build_ = std::make_unique<Build>();
      build_->task = task;
      build_->thread = std::thread(&BuildRunner::Run, this, build_.get());
    }
  }
  if (previous != nullptr && previous->thread.joinable()) previous->thread.join();
  if (busy_with.has_value()) {
    spdlog::warn("refusing build task {}: busy with task {}", task.task_id(), *busy_with);
    v1::AgentMessage message;
    v1::BuildComplete* complete = message.mutable_build_complete();
    complete->set_task_id(task.task_id());
    Fail(*complete, v1::BUILD_STATUS_HOST_FAILED, absl::StrCat("busy: building task ", *busy_with));
    send_(message);
  }
}

void BuildRunner::OnCancel(const v1::CancelBuild& cancel) {
  absl::MutexLock lock(&mu_);
  if (build_ != nullptr && !build_->done && build_->task.task_id() == cancel.task_id()) {
    spdlog::info("cancelling build task {}: {}", cancel.task_id(), cancel.reason());
    build_->cancel.Cancel(absl::StrCat("cancelled by the controller: ", cancel.reason()));
  } else {
    spdlog::info("cancel of build task {} ignored: not running", cancel.task_id());
  }
}

void BuildRunner::CancelRunning(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (build_ == nullptr || build_->done) return;
  spdlog::warn("cancelling build task {}: {}", build_->task.task_id(), reason);
  build_->lost = true;
  build_->cancel.Cancel(reason);
}

void BuildRunner::SendFor(Build* build, const v1::AgentMessage& message) {
  {
    absl::MutexLock lock(&mu_);
    if (build->lost) return;
  }
  send_(message);
}

void BuildRunner::Run(Build* build) {
  const absl::Time start = absl::Now();
  const v1::BuildTask& task = build->task;
  spdlog::info("build task {}: source={} rev={} config={}", task.task_id(), task.source(),
               task.rev(), task.config());
  v1::AgentMessage message;
  v1::BuildComplete& complete = *message.mutable_build_complete();
  complete.set_task_id(task.task_id());
  // The watchdog of --kernel-build-timeout: a build that hangs (a make waiting on a
  // terminal, an NFS tree gone) would keep this builder from every other build for ever.
  absl::Notification finished;
  std::thread watchdog;
  if (options_.timeout > absl::ZeroDuration() && options_.timeout < absl::InfiniteDuration()) {
    watchdog = std::thread([this, build, &finished] {
      if (finished.WaitForNotificationWithTimeout(options_.timeout)) return;
      absl::MutexLock lock(&mu_);
      if (build->cancel.cancelled()) return;  // cancelled already, by someone else
      build->timed_out = true;
      build->cancel.Cancel(absl::StrCat("timed out after ", FormatTimeout(options_.timeout)));
    });
  }
  Execute(build, complete);
  finished.Notify();
  if (watchdog.joinable()) watchdog.join();
  bool timed_out = false;
  {
    absl::MutexLock lock(&mu_);
    timed_out = build->timed_out;
  }
  // Whatever a cancelled build ended with (make killed, an upload given up), it was
  // cancelled, and the token says by whom. One that ran out of time says nothing of the
  // commit: a host failure (the controller may give it to another builder), with the step it
  // was in ("timed out after 3h during make ARCH=x86_64 -j8 all").
  if (build->cancel.cancelled() && complete.status() != v1::BUILD_STATUS_SUCCEEDED) {
    std::string reason = build->cancel.reason();
    if (timed_out) {
      absl::string_view during = complete.reason();
      if (absl::ConsumePrefix(&during, "cancelled during ")) {
        absl::StrAppend(&reason, " during ", std::string(during));
      }
    }
    Fail(complete, timed_out ? v1::BUILD_STATUS_HOST_FAILED : v1::BUILD_STATUS_CANCELLED,
         std::move(reason));
  }
  complete.set_elapsed_seconds(absl::ToDoubleSeconds(absl::Now() - start));
  spdlog::info("build task {} ended {}{}{} after {:.1f}s", task.task_id(),
               v1::BuildStatus_Name(complete.status()), complete.reason().empty() ? "" : ": ",
               complete.reason(), complete.elapsed_seconds());
  bool lost = false;
  {
    // Done before the completion goes: a controller that answers it with the next task finds
    // the runner idle.
    absl::MutexLock lock(&mu_);
    build->done = true;
    lost = build->lost;
  }
  if (!lost) send_(message);
}

void BuildRunner::Execute(Build* build, v1::BuildComplete& complete) {
  const v1::BuildTask& task = build->task;
  absl::StatusOr<const builder::KernelSource*> source = sources_.FindSource(task.source());
  if (!source.ok()) {
    return Fail(complete, v1::BUILD_STATUS_BAD_REVISION, std::string(source.status().message()));
  }
  // A task without a config means the only one there is (KernelRevision.config).
  std::string config_name = task.config();
  if (config_name.empty() && sources_.configs().size() == 1) {
    config_name = sources_.configs().front().name;
  }
  absl::StatusOr<const builder::BuildConfig*> config = sources_.FindConfig(config_name);
  if (!config.ok()) {
    return Fail(complete, v1::BUILD_STATUS_BAD_REVISION, std::string(config.status().message()));
  }
  const builder::GitRepo repo((*source)->repository);
  absl::StatusOr<std::string> commit = repo.ResolveCommit(task.rev());
  if (!commit.ok()) {
    // INVALID_ARGUMENT: the revision names no commit (or is not a revision at all); anything
    // else is git or the repository failing on this host.
    return Fail(complete,
                absl::IsInvalidArgument(commit.status()) ? v1::BUILD_STATUS_BAD_REVISION
                                                         : v1::BUILD_STATUS_HOST_FAILED,
                absl::StrCat("rev: ", std::string(commit.status().message())));
  }
  std::string revert;
  if (!task.revert().empty()) {
    absl::StatusOr<std::string> resolved = repo.ResolveCommit(task.revert());
    if (!resolved.ok()) {
      return Fail(complete,
                  absl::IsInvalidArgument(resolved.status()) ? v1::BUILD_STATUS_BAD_REVISION
                                                             : v1::BUILD_STATUS_HOST_FAILED,
                  absl::StrCat("revert: ", std::string(resolved.status().message())));
    }
    revert = *std::move(resolved);
  }
  // The commit built is reported once the builder knows it (on_commit below): with a revert,
  // the revert commit it makes, never `rev`'s own (the controller would take an earlier build
  // of `rev` for this one). Until then a failure names `rev`'s commit, or none with a revert.
  if (revert.empty()) {
    absl::StatusOr<builder::CommitInfo> info = repo.Describe(*commit);
    if (!info.ok()) {
      return Fail(complete, v1::BUILD_STATUS_HOST_FAILED,
                  absl::StrCat("describing ", *commit, ": ", std::string(info.status().message())));
    }
    complete.set_commit(*commit);
    complete.set_subject(info->subject);
    complete.set_author(info->author);
  }
  if (build->cancel.cancelled()) {
    return Fail(complete, v1::BUILD_STATUS_CANCELLED, build->cancel.reason());
  }

  const std::string artifact_dir =
      absl::StrCat(options_.staging_dir, "/builds/task-", task.task_id());
  std::error_code ec;
  std::filesystem::remove_all(artifact_dir, ec);  // an earlier attempt of the same task
  builder::BuildRequest request;
  request.source = (*source)->name;
  request.config = (*config)->name;
  request.commit = *commit;
  request.artifact_dir = artifact_dir;
  request.cancel_fd = build->cancel.fd();
  request.revert = revert;
  request.on_commit = [this, build, &complete](const builder::CommitInfo& built) {
    complete.set_commit(built.hash);
    complete.set_subject(built.subject);
    complete.set_author(built.author);
    v1::AgentMessage first;
    v1::BuildProgress* progress = first.mutable_build_progress();
    progress->set_task_id(build->task.task_id());
    progress->set_commit(built.hash);
    progress->set_subject(built.subject);
    progress->set_author(built.author);
    SendFor(build, first);
  };
  absl::StatusOr<builder::BuildResult> result;
  {
    BuildLogBatcher log(
        task.task_id(), [this, build](const v1::AgentMessage& m) { SendFor(build, m); },
        options_.log_flush_interval, options_.log_flush_lines);
    result = builder_.Build(request, [&log](std::string_view line) { log.Add(line); });
  }  // the last lines go before the completion
  if (!result.ok()) {
    return Fail(complete,
                absl::IsInvalidArgument(result.status()) ? v1::BUILD_STATUS_BAD_REVISION
                                                         : v1::BUILD_STATUS_HOST_FAILED,
                std::string(result.status().message()));
  }
  if (!result->ok()) {
    const builder::BuildFailure& failure = *result->failure;
    Fail(complete, StatusOfFailure(failure.kind), failure.reason);
    complete.set_failed_target(failure.target);
    for (const std::string& line : failure.log_tail) complete.add_log_tail(line);
    return;
  }
  const artifacts::ArtifactManifest& manifest = result->manifest;
  complete.set_build_id(manifest.build_id);
  complete.set_kernel_release(manifest.kernel_release);
  complete.set_compiler(manifest.compiler);

  absl::StatusOr<std::string> artifact_id = absl::FailedPreconditionError("no artifact upload");
  if (upload_) {
    spdlog::info("build task {}: uploading {}", task.task_id(), result->artifact_dir);
    artifact_id = upload_(result->artifact_dir, [build] { return build->cancel.cancelled(); });
  }
  // Uploaded or not, the local copy goes: builds are not resumed, the store keeps the result.
  std::filesystem::remove_all(result->artifact_dir, ec);
  if (ec) spdlog::warn("removing {}: {}", result->artifact_dir, ec.message());
  if (!artifact_id.ok()) {
    if (build->cancel.cancelled()) {
      return Fail(complete, v1::BUILD_STATUS_CANCELLED, build->cancel.reason());
    }
    return Fail(
        complete, v1::BUILD_STATUS_HOST_FAILED,
        absl::StrCat("uploading the artifact: ", std::string(artifact_id.status().message())));
  }
  complete.set_artifact_id(*artifact_id);
  complete.set_status(v1::BUILD_STATUS_SUCCEEDED);
}

}  // namespace tlbfleet::agent
