#pragma once
// Kernel builds a builder agent runs for the controller (BuildTask; docs/kernels.md), one at a
// time, in a thread of their own beside any benchmark job.
//
//   BuildTask ──► source, config, rev ──► BuildProgress{commit, subject, author}
//                 resolved (git)           then the log, batched (every 0.5 s or 200 lines)
//                    │ no                              │
//                    ▼                                 ▼
//   BuildComplete BAD_REVISION        KernelBuilder::Build into <staging>/builds/task-<N>
//                                                      │ ok
//                                                      ▼
//                                     upload (ArtifactUploader) ──► BuildComplete SUCCEEDED
//                                     and the local copy removed    {artifact_id, build_id...}
//
// A task with `revert` set builds the commit the builder makes by reverting that commit onto
// `rev` (KernelBuilder, GitRepo::MakeRevert): BuildProgress and BuildComplete name the revert
// commit, never `rev`'s; one that does not apply ends FAILED with git's words and no commit.
//
// A task that comes while a build runs is answered BuildComplete HOST_FAILED ("busy: building
// task N"). CancelBuild cancels the running build (the builder kills make's process group) and
// it ends CANCELLED; one that runs longer than BuildRunnerOptions::timeout is cancelled the
// same way and ends HOST_FAILED "timed out after ...". Builds are not spooled: when the stream to
// the controller is lost the running build is cancelled and reports nothing (the controller gives
// the task out again).
//
// Thread-safe: OnTask/OnCancel from the stream's reader, CancelRunning from any thread. The
// sender is called on the build's threads, never with the runner's lock held.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/builder/kernel_build.h"
#include "agent/builder/kernel_sources.h"
#include "agent/runner/child_process.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::agent {

// Uploads the finished artifact in `artifact_dir` (the layout of common/artifacts/manifest.h)
// to the controller's store and returns its artifact id. `cancelled` turns true once the
// build is cancelled; an uploader may give up then. In production UploadArtifact of
// common/artifacts/artifact_rpc.h; a fake in tests.
using ArtifactUploader = std::function<absl::StatusOr<std::string>(
    const std::string& artifact_dir, const std::function<bool()>& cancelled)>;

struct BuildRunnerOptions {
  // Builds are written under <staging_dir>/builds/ (the agent's --kernel-staging-dir) and
  // removed once uploaded. Required.
  std::string staging_dir;
  builder::BuilderOptions builder;
  // The log goes to the controller in BuildProgress messages of at most this many lines, at
  // least this often while lines come.
  absl::Duration log_flush_interval = absl::Milliseconds(500);
  size_t log_flush_lines = 200;
  // A build (with its upload) still running after this long is cancelled and ends
  // HOST_FAILED "timed out after 3h during <step>" (--kernel-build-timeout). Zero or infinite:
  // no limit.
  absl::Duration timeout = absl::Hours(3);
};

class BuildRunner {
 public:
  // Best effort: a message that cannot be written is lost (the build goes on).
  using Sender = std::function<void(const v1::AgentMessage& message)>;

  // `sources` must not be empty. `upload` may be null: every build then ends HOST_FAILED
  // after building ("no artifact upload").
  BuildRunner(builder::KernelSources sources, BuildRunnerOptions options, ArtifactUploader upload,
              Sender send);
  // Cancels a running build (it reports nothing) and waits for its thread.
  ~BuildRunner();
  BuildRunner(const BuildRunner&) = delete;
  BuildRunner& operator=(const BuildRunner&) = delete;

  // Starts the task's build, or answers HOST_FAILED "busy: building task N" while another
  // runs. A repeat of the running task's id is ignored (logged).
  void OnTask(const v1::BuildTask& task);
  // Cancels the running build when it is that task (it ends CANCELLED with the reason);
  // otherwise ignored (logged).
  void OnCancel(const v1::CancelBuild& cancel);
  // Cancels the running build, if any, and drops what it would still send: the stream it
  // belonged to is gone (or the agent stops).
  void CancelRunning(const std::string& reason);

  // The running task's id, if one runs.
  std::optional<int64_t> running() const;

 private:
  struct Build {
    v1::BuildTask task;
    CancelToken cancel;
    std::thread thread;
    bool done = false;       // guarded by mu_
    bool lost = false;       // guarded by mu_: CancelRunning(); nothing more is sent
    bool timed_out = false;  // guarded by mu_: cancelled by BuildRunnerOptions::timeout
  };

  void Run(Build* build);
  // Sends `message` unless `build` was lost.
  void SendFor(Build* build, const v1::AgentMessage& message);
  // The build itself, from resolving the revision to the upload; fills `complete`.
  void Execute(Build* build, v1::BuildComplete& complete);

  const builder::KernelSources sources_;
  const builder::KernelBuilder builder_;
  const BuildRunnerOptions options_;
  const ArtifactUploader upload_;
  const Sender send_;

  mutable absl::Mutex mu_;
  std::unique_ptr<Build> build_ ABSL_GUARDED_BY(mu_);  // the running (or last) build
};

}  // namespace tlbfleet::agent
