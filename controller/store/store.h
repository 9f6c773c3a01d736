#pragma once
// The controller's durable state: hosts, runs, jobs, host slots and samples in one SQLite
// file (WAL mode, one connection, one writer). Thread-safe: every method takes the store's
// mutex, and every multi-row change is one transaction, so a crash never leaves a run half
// written.
//
// Job lifecycle: queued -> leased (by one agent, with a lease that heartbeats renew)
//   -> succeeded | failed | cancelled; an expired lease returns the job to queued and
//   discards the samples of that attempt.
// Run lifecycle: queued -> running (first lease) -> succeeded (every job succeeded)
//   | failed (a job failed; the rest are cancelled) | cancelled (by a user).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "controller/scheduler/expand.h"
#include "controller/store/sqlite.h"
#include "tlbfleet/v1/agent.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::store {

struct StoredHost {
  std::string agent_id;
  v1::HostInfo info;
  int64_t first_seen_ms = 0;
  int64_t last_seen_ms = 0;
};

// A run that may still get jobs dispatched, with what dispatch needs to filter hosts.
struct ActiveRun {
  std::string run_id;
  v1::RunSpec spec;
};

// What an expired lease turned into.
struct ExpiredLease {
  std::string run_id;
  int64_t job_id = 0;
  std::string lease_id;
  std::string agent_id;
  bool requeued = false;  // false: too many attempts, the run failed
};

struct IngestResult {
  bool rejected = false;
  std::string reason;
  uint64_t stored = 0;       // newly stored samples
  uint64_t through_seq = 0;  // highest seq of the batch (all stored or already present)
};

// How an adaptive run grows (Store::ExtendRun): a new boot of every arm at the current
// iterations per boot, or more iterations in the latest boot.
struct RunExtension {
  bool add_boot = false;
  uint32_t iterations_per_boot = 0;  // the new total when !add_boot
  std::string note;                  // why, kept as the run's stop_reason while it runs
};

struct CompletionResult {
  bool rejected = false;
  std::string reason;
  std::string run_id;
  bool run_finished = false;  // the run reached a terminal state with this completion
  v1::RunState run_state = v1::RUN_STATE_UNSPECIFIED;
};

class Store {
 public:
  // Opens (creating if needed) and migrates the database at `path`.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path);

  // --- hosts ---
  absl::Status UpsertHost(const std::string& agent_id, const v1::HostInfo& info, int64_t now_ms);
  absl::StatusOr<std::vector<StoredHost>> ListHosts();

  // --- runs ---
  // Stores the run and its jobs in one transaction; returns the new run id.
  absl::StatusOr<std::string> CreateRun(const v1::RunSpec& spec, const std::string& spec_yaml,
                                        const std::vector<scheduler::JobPlan>& jobs,
                                        int64_t now_ms);
  // Stores a run whose sweep depends on the host (scheduler::SweepDependsOnHost) without
  // jobs: each host slot is expanded by LeaseNextJob when a host takes it.
  absl::StatusOr<std::string> CreateDeferredRun(const v1::RunSpec& spec,
                                                const std::string& spec_yaml, int64_t now_ms);
  absl::StatusOr<v1::Run> GetRun(const std::string& run_id);
  absl::StatusOr<std::vector<v1::Run>> ListRuns(uint32_t limit);
  // Cancels queued jobs and marks the run cancelled; returns the leases still running so the
  // caller can tell their agents. NOT_FOUND for an unknown run; terminal runs are unchanged.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> CancelRun(
      const std::string& run_id, int64_t now_ms);  // (agent_id, lease_id)
  absl::StatusOr<std::vector<ActiveRun>> ActiveRuns();
  // Marks a non-terminal run failed with `error`, cancelling its queued jobs.
  absl::Status FailRun(const std::string& run_id, const std::string& error, int64_t now_ms);

  // --- dispatch ---
  // Leases the next queued job of `run_id` that `agent_id` may take: a job of the slot this
  // agent is bound to, or of an unbound slot when the agent holds no slot of this run (the
  // slot is then bound to it). Returns nullopt when there is none.
  //
  // For a deferred run (CreateDeferredRun), `expander` computes the jobs of one slot for
  // this agent's host; they are stored, the slot bound and the first job leased in one
  // transaction. A slot expanded for another host is taken over only when `expander` gives
  // the same basis, or when none of its jobs has run yet (it is then expanded again). An
  // expander error fails the run with that error. Without an expander a deferred run
  // leases nothing to an agent that holds no slot of it.
  using SlotExpander =
      std::function<absl::StatusOr<scheduler::SlotExpansion>(const v1::RunSpec& spec)>;
  //
  // For a run with more than one boot (RunNeedsReboots), `boot_id` is the host's current
  // boot: jobs of one boot index run on one boot, and a boot serves one boot index of a
  // slot. When the slot still has work but none for this boot, nothing is leased and
  // `reboot_reason` (if given) says which boot needs a fresh boot. An empty `boot_id`
  // ignores boots.
  absl::StatusOr<std::optional<v1::JobAssignment>> LeaseNextJob(
      const std::string& run_id, const std::string& agent_id, int64_t now_ms, int64_t lease_ms,
      const SlotExpander& expander = nullptr, const std::string& boot_id = "",
      std::string* reboot_reason = nullptr);
  // Extends the lease if `agent_id` holds it. Returns false if it does not.
  absl::StatusOr<bool> RenewLease(const std::string& lease_id, const std::string& agent_id,
                                  int64_t now_ms, int64_t lease_ms);
  // Re-queues every job whose lease expired before `now_ms`, discarding that attempt's
  // samples and unbinding the slot from the silent host. After `max_attempts` leases a job
  // fails its run instead.
  absl::StatusOr<std::vector<ExpiredLease>> ExpireLeases(int64_t now_ms, int max_attempts);
  // The lease `agent_id` holds, if any.
  absl::StatusOr<std::optional<std::string>> LeaseHeldBy(const std::string& agent_id);

  // --- results ---
  // Stores samples of `lease_id` sent by `agent_id`. Rejected (nothing stored) when the
  // lease is unknown or not held by that agent. Provenance that the controller knows (run,
  // arm, sweep value, iteration) comes from the job row, not from the agent's message.
  absl::StatusOr<IngestResult> IngestSamples(const std::string& agent_id,
                                             const v1::SampleBatch& batch);
  // Ends the job of `complete.lease_id`. Idempotent: completing an already completed lease
  // again is accepted without change.
  absl::StatusOr<CompletionResult> CompleteJob(const std::string& agent_id,
                                               const v1::JobComplete& complete, int64_t now_ms);
  absl::StatusOr<std::vector<v1::Sample>> GetSamples(const std::string& run_id);

  // --- adaptive runs (docs/statistics.md#adaptive-runs) ---
  // Adaptive runs whose every job succeeded (and, for a deferred run, every slot was
  // expanded): each needs a decision, ExtendRun or FinishAdaptiveRun.
  absl::StatusOr<std::vector<ActiveRun>> AdaptiveRunsAwaitingDecision();
  // Adds jobs to every slot, copying each slot's first iteration (RetargetJob), and counts
  // the round. One transaction.
  absl::Status ExtendRun(const std::string& run_id, const RunExtension& extension, int64_t now_ms);
  // Marks a queued or running adaptive run succeeded, saying why it stopped.
  absl::Status FinishAdaptiveRun(const std::string& run_id, const std::string& reason,
                                 int64_t now_ms);

 private:
  explicit Store(std::unique_ptr<Database> db) : db_(std::move(db)) {}

  absl::StatusOr<v1::Run> LoadRunLocked(int64_t run_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The runs row of a new run (queued, plan = the spec's iterations and boots); its id.
  absl::StatusOr<int64_t> InsertRunLocked(const v1::RunSpec& spec, const std::string& spec_yaml,
                                          int64_t now_ms, bool expand_on_bind)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status InsertJobsLocked(int64_t run_id, const v1::RunSpec& spec,
                                const std::vector<scheduler::JobPlan>& jobs, int64_t slot)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The slot of deferred run `run_id` this agent may take (expanding it if needed), or
  // nullopt; see LeaseNextJob.
  struct BootJob {
    int64_t job_id = 0;
    int64_t attempts = 0;
    std::string assignment;
  };
  // The next queued job of `slot` that boot `boot_id` may run (see LeaseNextJob), recording
  // which boot index a fresh boot serves.
  absl::StatusOr<std::optional<BootJob>> PickJobForBootLocked(int64_t run_id, int64_t slot,
                                                              const std::string& boot_id,
                                                              std::string* reboot_reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::optional<int64_t>> PrepareDeferredSlotLocked(int64_t run_id,
                                                                   const v1::RunSpec& spec,
                                                                   const SlotExpander& expander,
                                                                   int64_t now_ms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FinishRunIfDoneLocked(int64_t run_id, int64_t now_ms, CompletionResult* result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status FailRunLocked(int64_t run_id, const std::string& error, int64_t now_ms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::unique_ptr<Database> db_ ABSL_GUARDED_BY(mu_);
};

// Whether `spec` plans, or may grow to, more than one boot per arm, so that hosts must
// reboot between its boot indexes.
inline bool RunNeedsReboots(const v1::RunSpec& spec) {
  return spec.boots() > 1 || spec.adaptive().boots().max() > 1;
}

// Whether `spec` grows its plan until its comparison settles (docs/statistics.md).
inline bool RunIsAdaptive(const v1::RunSpec& spec) {
  return spec.adaptive().iterations().max() > 0 || spec.adaptive().boots().max() > 0;
}

// Run ids are decimal row ids; INVALID_ARGUMENT names the field for anything else.
absl::StatusOr<int64_t> ParseRunId(const std::string& run_id);

}  // namespace tlbfleet::store
