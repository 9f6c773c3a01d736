#pragma once
// The builds table: kernels built from source for the arms of runs that name `kernel:`
// (docs/kernels.md). One build per such arm, created with its run; a builder agent takes a
// queued one (Take), reports the commit it resolved and its log (Progress) and how it ended
// (Complete). A run's jobs on a kernel arm wait until its build has succeeded (dispatch.cc
// asks ForEntry before it reboots a host into the arm's entry); a build that fails fails the
// run. Functions run inside the caller's transaction.
//
// Build states: queued -> building (leased to one builder agent) -> succeeded | failed, or
// back to queued when the builder went away or could not build it for a reason of its own
// (disk full, busy), up to kMaxBuildAttempts; cancelled when its run ended first.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/store/internal.h"
#include "controller/store/sqlite.h"
#include "tlbfleet/v1/agent.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::store::builds {

inline constexpr int kMaxBuildAttempts = 3;
// Lines of a build's log kept in the database; later lines are counted, not kept.
inline constexpr int64_t kMaxLogLines = 200'000;
// Lines of the log's end shown with a run (KernelBuild.log_tail).
inline constexpr int kLogTailLines = 20;

// A queued build for every arm of `spec` with a kernel (whose boot_entry the caller named).
absl::Status InsertForRun(Database& db, int64_t run_id, const v1::RunSpec& spec);

// The run's builds, in arm order, with the end of each log.
absl::Status LoadForRun(Database& db, int64_t run_id, v1::Run* run);
absl::StatusOr<std::optional<v1::KernelBuild>> Load(Database& db, int64_t task_id);
// The run of a build (0 when there is no such build).
absl::StatusOr<int64_t> RunOf(Database& db, int64_t task_id);

// The oldest queued build of an active run that `host` can build (HostInfo.kernel_sources:
// the source, with the config), now building on `agent_id`; nullopt when there is none.
absl::StatusOr<std::optional<v1::KernelBuild>> Take(Database& db, EventBatch& events,
                                                    const std::string& agent_id,
                                                    const v1::HostInfo& host, int64_t now_ms);

struct ProgressResult {
  bool accepted = false;  // false: the build is not building on this agent (any more)
  int64_t run_id = 0;
  // Set when the commit was just resolved and an earlier build of the same source, config and
  // commit succeeded: its artifact serves this build too (the caller checks the artifact is
  // still in the store, then calls Reuse).
  std::optional<v1::KernelBuild> reusable;
};
absl::StatusOr<ProgressResult> Progress(Database& db, EventBatch& events,
                                        const std::string& agent_id,
                                        const v1::BuildProgress& progress, int64_t now_ms);

struct CompleteResult {
  bool accepted = false;  // false: the build is not building on this agent (any more)
  v1::KernelBuild build;  // as stored after the change
  bool requeued = false;  // the builder could not build it: queued for another try
  bool run_failed = false;
  std::string run_error;
};
// SUCCEEDED records the artifact; FAILED and BAD_REVISION fail the run, naming the arm, the
// revision and why; HOST_FAILED and CANCELLED (not asked for) queue it again, or fail the run
// after kMaxBuildAttempts.
absl::StatusOr<CompleteResult> Complete(Database& db, EventBatch& events,
                                        const std::string& agent_id,
                                        const v1::BuildComplete& complete, int64_t now_ms);
// Ends build `task_id` with the artifact of the earlier build `from` (same commit and config).
absl::StatusOr<CompleteResult> Reuse(Database& db, EventBatch& events, int64_t task_id,
                                     const v1::KernelBuild& from, int64_t now_ms);

// Builds building on `agent_id` ("" = on any agent) go back to the queue (the builder's
// stream ended: builds are not spooled), or fail their runs after kMaxBuildAttempts. Returns
// the task ids given back.
absl::StatusOr<std::vector<int64_t>> Release(Database& db, EventBatch& events,
                                             const std::string& agent_id, const std::string& reason,
                                             int64_t now_ms);

// The run ended (failed, cancelled): its queued and building builds are cancelled. Returns
// (agent id, task id) of those that were building, to be told to stop.
absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> CancelOfRun(
    Database& db, EventBatch& events, int64_t run_id, const std::string& reason, int64_t now_ms);

// Whether run `run_id` has a build that has not succeeded (its jobs wait).
absl::StatusOr<bool> Unfinished(Database& db, int64_t run_id);

// The build behind boot entry `entry` (a kernel arm's), or nullopt.
absl::StatusOr<std::optional<v1::KernelBuild>> ForEntry(Database& db, const std::string& entry);

// The whole log of a build.
absl::StatusOr<std::vector<std::string>> LogLines(Database& db, int64_t task_id);

// What a RebootRequest needs to boot build `build`.
v1::KernelToBoot KernelToBootOf(const v1::KernelBuild& build);

}  // namespace tlbfleet::store::builds
