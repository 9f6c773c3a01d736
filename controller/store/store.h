#pragma once
// The controller's durable state: hosts, runs, jobs, host slots, samples, run events, reboot
// requests and peer reservations in one SQLite file (WAL mode, synchronous=FULL).
//
// `Store` is the one facade the core calls. It owns the connections and the transactions;
// the SQL lives in units that never lock or begin a transaction themselves:
//   runs.h      runs and their jobs: create, read, cancel, fail, finish, adaptive growth
//   dispatch.h  leases, host slots, boots: lease the next job, renew, expire, release
//   agents.h    hosts, what a returning agent holds, reboot requests
//   results.h   samples and completions
//   events.h    run events (what happened to a run, with its counts after it)
//   imports.h   runs imported from mmtests and LKP result directories
//
// Writes go through one writer (writer.h): a thread applies them in submission order, many per
// transaction (one fsync for all), each in a savepoint of its own, and every write method is
// all-or-nothing, so a crash never leaves a run half written. Reads run on a pool of other
// connections (reader_pool.h) and never wait for the writer. Thread-safe.
//
// Most writes come in two forms: a synchronous one that returns once the change is committed
// (or failed), and an asynchronous one (…Async) whose callback runs on the writer's callback
// thread, in commit order, never under a lock of the store. The hot paths of the agent streams
// use the asynchronous ones, so no gRPC thread waits for a disk.
//
// Job lifecycle: queued -> leased (by one agent, with a lease that heartbeats renew)
//   -> succeeded | failed | cancelled; an expired lease returns the job to queued and
//   discards the samples of that attempt.
// Run lifecycle: queued -> running (first lease) -> succeeded (every job succeeded)
//   | failed (a job failed; the rest are cancelled) | cancelled (by a user).
//
// Run events are recorded in the same transaction as the change they report; after COMMIT
// the store hands them, in id order, to the event sink (SetEventSink).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/scheduler/expand.h"
#include "controller/store/builds.h"
#include "controller/store/reader_pool.h"
#include "controller/store/sqlite.h"
#include "controller/store/writer.h"
#include "tlbfleet/v1/agent.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::store {

struct StoredHost {
  std::string agent_id;
  v1::HostInfo info;
  std::string principal;  // who registered it first; "" when not bound
  int64_t first_seen_ms = 0;
  int64_t last_seen_ms = 0;
  // The job it holds a lease for; lease_id is empty when it holds none.
  std::string lease_id, lease_run_id, lease_job_id, lease_benchmark, lease_arm;
  int64_t lease_iteration = 0;
};

struct StoreOptions {
  // false: writes run on the calling thread, and asynchronous callbacks right after, on it
  // too (deterministic unit tests). true: the writer thread batches them (the controller).
  bool writer_thread = true;
  size_t max_batch = 1024;    // writes per transaction, at most
  int64_t max_batch_ms = 20;  // a transaction takes no more writes after this long (Writer)
  size_t readers = 4;         // read connections
};

// A run that may still get jobs dispatched, with what dispatch needs to filter hosts and to
// skip the agents it has nothing for (read in one snapshot, so no query per agent).
struct ActiveRun {
  std::string run_id;
  v1::RunSpec spec;
  std::map<std::string, int64_t> slot_of;  // agent id -> the slot of this run it is bound to
  std::set<int64_t> bound_slots;           // the values of slot_of
  // The machine behind each bound slot, as its agent reported it when it took the slot.
  struct Holder {
    std::string agent_id;
    std::string machine_id;  // "" for a slot bound before machines were recorded
    std::string hostname;
  };
  std::map<int64_t, Holder> holders;  // slot -> who holds it
  std::set<int64_t> slots_with_work;  // slots with queued jobs
  int64_t slots_to_expand = 0;        // a deferred run's slots no host has taken yet

  // False when Store::Lease would certainly lease nothing of this run to `agent_id` (its
  // slot has no queued job, or it has none and no free slot has one).
  bool MayHaveWorkFor(const std::string& agent_id) const;
};

// Computes the jobs of one slot of a run whose sweep depends on the host, for the host that
// takes the slot (see LeaseRequest::expander).
using SlotExpander =
    std::function<absl::StatusOr<scheduler::SlotExpansion>(const v1::RunSpec& spec)>;

// What Store::Lease needs to lease the next job of some runs to one agent.
struct LeaseRequest {
  // The runs to try, in order (oldest first); the first with a job for the agent wins. If
  // none has one but some has work on a fresh boot of the agent, the result says so.
  std::vector<std::string> run_ids;
  std::string agent_id;
  // The host's current boot. For a run with more than one boot (scheduler::RunNeedsReboots)
  // jobs of one boot index run on one boot, and a boot serves one boot index of a slot.
  // Empty: boots are ignored.
  std::string boot_id;
  // What the host's agent says this boot is (HostInfo.boot_entry), and whether its check of
  // the entry it selected failed (HostInfo.boot_entry_error). A run whose arms name boot
  // entries takes a new boot for the boot index it asked a reboot for only when the boot is
  // that entry, or when that check failed (the job then fails, naming both): a reboot asked
  // for by another run, into another entry, is not its boot.
  std::string boot_entry;
  bool boot_entry_failed = false;
  // The agent's machine (HostInfo.machine_id) and hostname, recorded with a slot it takes. A
  // slot is one machine for the whole run: an agent id that reports another machine than the
  // one its slot was bound on gets nothing of that slot.
  std::string machine_id;
  std::string hostname;
  int64_t now_ms = 0;
  int64_t lease_ms = 0;
  // For a run whose sweep depends on the host (CreateDeferredRun): the jobs of the slot this
  // agent takes, stored with the slot binding and the lease in one transaction. A slot
  // expanded for another host is taken over only when the expansion has the same basis, or
  // when none of its jobs has run yet (it is then expanded again). An expander error fails
  // the run with that error. Unset: such a run leases nothing to an agent without a slot.
  // Called with the run's id, inside the writer's transaction.
  std::function<SlotExpander(const std::string& run_id)> expander_for;
  // Called inside the transaction with a job just leased: may point it at a peer (rewriting
  // the assignment) and returns the peer's agent id, stored with the lease so that the
  // reservation survives a restart ("" when the job needs none). Unset: no peers.
  std::function<std::string(v1::JobAssignment& assignment)> peer_for;
};

struct LeaseResult {
  enum class Kind {
    kNothing,      // no job of this run for this agent
    kLeased,       // `assignment` is leased to the agent
    kNeedsReboot,  // the agent's slot has work, but none for its current boot
  };
  Kind kind = Kind::kNothing;
  std::string run_id;            // kLeased, kNeedsReboot: which run
  v1::JobAssignment assignment;  // kLeased: with lease_id and job_id
  std::string peer_agent_id;     // kLeased: what LeaseRequest::peer_for returned
  std::string reboot_reason;     // kNeedsReboot: which boot needs a fresh boot, and why
  std::string reboot_entry;      // kNeedsReboot: the boot entry it must be ("" = any)
  // kNeedsReboot into a kernel built from source: the build to boot (RebootRequest.kernel).
  v1::KernelToBoot reboot_kernel;
  // kNeedsReboot into an entry: the boot request (boot_requests.h) Lease records for it. Only
  // the reboot Lease returns is recorded: another run's reboot must not count as a miss of a
  // request that was never sent.
  struct BootRequest {
    int64_t run_id = 0, slot = 0, boot_index = 0;
    std::string entry, from_boot_id;
  };
  std::optional<BootRequest> boot_request;
};

// What an expired (or released) lease turned into.
struct ExpiredLease {
  std::string run_id;
  int64_t job_id = 0;
  std::string lease_id;
  std::string agent_id;
  bool requeued = false;  // false: too many attempts, the run failed
};

// What Store::RestartSlot did.
struct SlotRestart {
  bool restarted = false;  // false: the slot was no longer held by that agent; nothing changed
  uint32_t jobs = 0;       // finished jobs abandoned, measured again
  uint64_t samples = 0;    // their samples: kept, left out of comparisons
};

// What a slot has measured so far (jobs that count, not abandoned ones).
struct SlotProgress {
  uint32_t jobs_done = 0;
  uint32_t jobs_total = 0;
  uint32_t boots_touched = 0;  // boot indexes with a finished job
  uint64_t samples = 0;
};

// What an agent says it holds when its stream starts (Hello).
struct AgentReport {
  std::string running_lease;         // the lease its job thread runs ("" none)
  std::vector<std::string> spooled;  // finished leases in its spool, to be replayed
};

// What the database made of an AgentReport (Store::RegisterAgent).
struct Reconciled {
  std::string running_lease;           // held and reported running: renewed ("" none)
  std::vector<std::string> renewed;    // held and spooled: renewed until the replay ends them
  std::vector<ExpiredLease> released;  // held but not reported: the agent lost them
};

// A reboot the controller asked a host for (controller/core/reboots.h), kept so that a
// controller restart does not forget a host that is on its way down.
struct RebootRecord {
  std::string agent_id;
  std::string run_id;    // the run that needs the fresh boot
  std::string boot_id;   // the boot the host was asked to leave
  int times = 0;         // requests that found the host still on boot_id
  bool pending = false;  // asked, and not back on another boot yet
  int64_t requested_ms = 0;
  int64_t deadline_ms = 0;   // still connected on boot_id after this: the reboot failed
  int64_t return_by_ms = 0;  // not back on another boot by this: the host is lost
};

struct IngestResult {
  bool rejected = false;
  std::string reason;
  uint64_t stored = 0;       // newly stored samples
  uint64_t through_seq = 0;  // highest seq of the batch (all stored or already present)
};

// A (sweep value, arm) of a run, as its jobs name it: (param_name, param_value, arm).
using SweepArmKey = std::tuple<std::string, std::string, std::string>;

// How an adaptive run grows (Store::ExtendRun): a new boot of every measured (sweep value,
// arm), or more iterations in the latest boot.
struct RunExtension {
  bool add_boot = false;
  // !add_boot: the latest boot's new total. add_boot: the new boot's iterations (0 = the
  // current iterations per boot); it becomes the run's iterations_per_boot.
  uint32_t iterations_per_boot = 0;
  std::string note;  // why, kept as the run's stop_reason while it runs
  // The (sweep value, arm) that get the new jobs; unset: every one of the run (stop:
  // precision). A stop: verdict run leaves out those whose rows are all decided
  // (docs/statistics.md#rows-that-stop-on-their-own).
  std::optional<std::set<SweepArmKey>> measured;
  // stop: verdict: every row's state after this look, stored with the run (Run.adaptive_rows,
  // replacing the stored ones); empty: the stored rows stay.
  std::vector<v1::AdaptiveRow> rows;
};

struct CompletionResult {
  bool rejected = false;
  std::string reason;
  bool replay = false;  // the completion was already recorded; nothing changed
  // A REFUSED completion: the lease was given back and the job re-queued (or, after too many
  // attempts, failed with its run).
  bool requeued = false;
  std::string run_id;
  std::string benchmark;
  v1::JobState job_state = v1::JOB_STATE_UNSPECIFIED;  // as recorded
  bool run_finished = false;  // the run reached a terminal state with this completion
  v1::RunState run_state = v1::RUN_STATE_UNSPECIFIED;
  // An adaptive run has done its plan so far and waits for a decision (ExtendRun or
  // FinishAdaptiveRun).
  bool awaiting_decision = false;
};

// Counts for scrape-time gauges, read from the run rows' counters.
struct StoreCounts {
  std::map<v1::RunState, uint64_t> runs;  // every run, by state
  std::map<v1::JobState, uint64_t> jobs;  // every job, by state
  uint64_t queued_jobs_of_active_runs = 0;
  uint64_t hosts = 0;  // every agent that ever registered
};

// A finished run made of another tool's results (Store::ImportRun).
struct ImportedRunRecord {
  v1::RunSpec spec;
  std::string spec_yaml;  // what GetRun shows as the spec the user wrote: how it was imported
  // job_id numbers the import's jobs (one per arm, boot, sweep value and iteration); each
  // becomes a succeeded job of the run. Every sample of one job_id shares its provenance.
  std::vector<v1::Sample> samples;
  int64_t created_ms = 0;   // 0: unknown (stored as 0)
  int64_t finished_ms = 0;  // 0: unknown (stored as created_ms)
  bool failed = false;      // the other tool recorded a failed test: the run is failed
  std::string digest;       // of the files the run was made of; one run per digest
  std::string format;       // "mmtests", "lkp"
  std::string source;       // where the files came from (the directory named), for people
};

struct ImportedRunResult {
  std::string run_id;
  bool already_imported = false;  // a run with this digest existed: run_id is it, nothing stored
  uint64_t samples = 0;           // stored now
};

template <typename T>
using StoreCallback = std::function<void(absl::StatusOr<T>)>;

class Store {
 public:
  // Opens (creating if needed) and migrates the database at `path`. FAILED_PRECONDITION
  // when it cannot be written (read-only file system, permissions) or is newer than this
  // binary.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path,
                                                     StoreOptions options = {});
  // Applies the writes still queued and delivers their callbacks.
  ~Store();

  // Called after every COMMIT that recorded run events, with them in id order, on the writer
  // thread (so calls never overlap and never reorder). It must be quick and must not call
  // back into the store: queue the events. Set it before the store is shared.
  using EventSink = std::function<void(const std::vector<v1::RunEvent>& events)>;
  void SetEventSink(EventSink sink);

  // --- hosts ---
  // Records the agent's host. `principal` is who the transport authenticated ("" in
  // development mode: not checked, binds nothing). The first non-empty principal to
  // register an agent id is bound to it; another one gets PERMISSION_DENIED naming both.
  absl::Status RegisterHost(const std::string& agent_id, const v1::HostInfo& info,
                            const std::string& principal, int64_t now_ms);
  // RegisterHost, and in the same transaction: judges the leases the database says the agent
  // holds by what it reports. Reported running or spooled: renewed (until now + lease_ms).
  // Not reported: the agent lost it (it restarted mid-job): released like an expired lease
  // (samples of the attempt discarded, re-queued, or the run failed after max_attempts) but
  // the agent keeps its slot, since it is back.
  absl::StatusOr<Reconciled> RegisterAgent(const std::string& agent_id, const v1::HostInfo& info,
                                           const std::string& principal, const AgentReport& report,
                                           int64_t now_ms, int64_t lease_ms, int max_attempts);
  absl::StatusOr<std::vector<StoredHost>> ListHosts();

  // --- runs ---
  // Stores the run and its jobs in one transaction; returns the new run id.
  absl::StatusOr<std::string> CreateRun(const v1::RunSpec& spec, const std::string& spec_yaml,
                                        const std::vector<scheduler::JobPlan>& jobs,
                                        int64_t now_ms);
  // Stores a run whose sweep depends on the host (scheduler::SweepDependsOnHost) without
  // jobs: each host slot is expanded by Lease when a host takes it.
  absl::StatusOr<std::string> CreateDeferredRun(const v1::RunSpec& spec,
                                                const std::string& spec_yaml, int64_t now_ms);
  absl::StatusOr<v1::Run> GetRun(const std::string& run_id);
  // The newest `limit` runs (0: 50), newest first.
  absl::StatusOr<std::vector<v1::Run>> ListRuns(uint32_t limit);
  // Filtered and paged, newest first (run_query.cc). INVALID_ARGUMENT naming the field.
  absl::StatusOr<v1::ListRunsResponse> QueryRuns(const v1::ListRunsRequest& request);
  // Cancels queued and leased jobs and marks the run cancelled; returns the leases that were
  // running so the caller can tell their agents. NOT_FOUND for an unknown run; terminal runs
  // are unchanged.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> CancelRun(
      const std::string& run_id, int64_t now_ms);  // (agent_id, lease_id)
  absl::StatusOr<std::vector<ActiveRun>> ActiveRuns();
  // Those of `run_ids` that are still active (queued or running), in id order; ids that
  // do not parse are not active.
  absl::StatusOr<std::vector<ActiveRun>> ActiveRunsAmong(const std::vector<std::string>& run_ids);
  // Marks a non-terminal run failed with `error`, cancelling its queued jobs.
  absl::Status FailRun(const std::string& run_id, const std::string& error, int64_t now_ms);

  // --- dispatch ---
  // Leases the next queued job of the first of `request.run_ids` that has one the agent may
  // take: a job of the slot this agent is bound to, or of an unbound slot when the agent holds
  // no slot of that run (the slot is then bound to it).
  absl::StatusOr<LeaseResult> Lease(const LeaseRequest& request);
  void LeaseAsync(LeaseRequest request, StoreCallback<LeaseResult> done);
  // Extends the lease if `agent_id` holds it. Returns false if it does not.
  absl::StatusOr<bool> RenewLease(const std::string& lease_id, const std::string& agent_id,
                                  int64_t now_ms, int64_t lease_ms);
  void RenewLeaseAsync(std::string lease_id, std::string agent_id, int64_t now_ms, int64_t lease_ms,
                       StoreCallback<bool> done);
  // Every lease that expires before `until_ms` now expires then: after a controller restart
  // or a storage outage, agents get that long to come back and report (RegisterAgent) before
  // their leases are judged. Returns how many were extended.
  absl::StatusOr<int64_t> ExtendLeases(int64_t until_ms);
  // Re-queues every job whose lease expired before `now_ms`, discarding that attempt's
  // samples. The silent host keeps its slot: a slot's jobs never go to another agent (what
  // becomes of a lost host's slot is the run's on_host_lost policy, RestartSlot). After
  // `max_attempts` leases a job fails its run instead.
  absl::StatusOr<std::vector<ExpiredLease>> ExpireLeases(int64_t now_ms, int max_attempts);
  // on_host_lost: restart. If `agent_id` still holds `slot` of active run `run_id`: takes back
  // its lease, abandons the slot's finished jobs (kept with their samples, marked with
  // `reason`, left out of every comparison), queues copies of all the slot's jobs in their
  // order (a deferred run's slot is instead expanded anew by the next host), frees the slot
  // for any eligible host and records the abandoned work and a SlotHostEvent. One
  // transaction.
  absl::StatusOr<SlotRestart> RestartSlot(const std::string& run_id, int64_t slot,
                                          const std::string& agent_id, const std::string& reason,
                                          int64_t now_ms);
  absl::StatusOr<SlotProgress> SlotProgressOf(const std::string& run_id, int64_t slot);
  // Gives back a lease `agent_id` holds that it did not run: an assignment the agent never
  // got or refused. Re-queued with the agent keeping its slot; `count_attempt` false gives
  // the attempt back (the job never started). nullopt when the agent does not hold it.
  absl::StatusOr<std::optional<ExpiredLease>> ReleaseLease(const std::string& lease_id,
                                                           const std::string& agent_id,
                                                           const std::string& reason,
                                                           bool count_attempt, int64_t now_ms,
                                                           int max_attempts);
  // The lease `agent_id` holds, if any.
  absl::StatusOr<std::optional<std::string>> LeaseHeldBy(const std::string& agent_id);
  // (lease id, peer agent id) of every leased job that reserved a peer.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> PeerReservations();

  // --- reboot requests ---
  absl::Status SaveReboot(const RebootRecord& record);
  absl::Status DeleteReboot(const std::string& agent_id);
  absl::StatusOr<std::vector<RebootRecord>> Reboots();

  // --- results ---
  // Stores samples of `lease_id` sent by `agent_id`. Rejected (nothing stored) when the
  // lease is unknown or not held by that agent. Provenance that the controller knows (run,
  // arm, sweep value, iteration) comes from the job row, not from the agent's message.
  absl::StatusOr<IngestResult> IngestSamples(const std::string& agent_id,
                                             const v1::SampleBatch& batch);
  // `chain` (optional): the writes of one agent stream; see WriteChain. An accepted batch
  // also renews its lease until `renew_until_ms` (0: not).
  void IngestSamplesAsync(std::string agent_id, v1::SampleBatch batch, int64_t renew_until_ms,
                          std::shared_ptr<WriteChain> chain, StoreCallback<IngestResult> done);
  // Ends the job of `complete.lease_id`. Idempotent: completing an already completed lease
  // again is accepted without change. A REFUSED completion (the agent did not start the job)
  // gives the lease back: re-queued, the agent keeps its slot, the attempt counts.
  absl::StatusOr<CompletionResult> CompleteJob(const std::string& agent_id,
                                               const v1::JobComplete& complete, int64_t now_ms,
                                               int max_attempts = 3);
  void CompleteJobAsync(std::string agent_id, v1::JobComplete complete, int64_t now_ms,
                        int max_attempts, std::shared_ptr<WriteChain> chain,
                        StoreCallback<CompletionResult> done);
  absl::StatusOr<std::vector<v1::Sample>> GetSamples(const std::string& run_id);
  // Stores an imported run, finished, with its jobs (succeeded) and samples, in one
  // transaction: a failure stores nothing. A run of the same digest already stored is returned
  // as it is (already_imported). INVALID_ARGUMENT naming the field for an empty digest or a
  // sample without a job number.
  absl::StatusOr<ImportedRunResult> ImportRun(const ImportedRunRecord& record, int64_t now_ms);

  // --- adaptive runs (docs/statistics.md#adaptive-runs) ---
  // Adaptive runs whose every job succeeded (and, for a deferred run, every slot was
  // expanded): each needs a decision, ExtendRun or FinishAdaptiveRun.
  absl::StatusOr<std::vector<ActiveRun>> AdaptiveRunsAwaitingDecision();
  // Adds jobs to every slot, copying the first iteration of each of the slot's measured
  // (sweep value, arm) (RetargetJob), stores the rows and counts the round. One transaction.
  // FAILED_PRECONDITION when nothing would be added (no job of a measured (sweep value, arm)
  // to copy).
  absl::Status ExtendRun(const std::string& run_id, const RunExtension& extension, int64_t now_ms);
  // Marks a queued or running adaptive run succeeded, saying why it stopped; `rows` (stop:
  // verdict), when given, replace the stored Run.adaptive_rows.
  absl::Status FinishAdaptiveRun(const std::string& run_id, const std::string& reason,
                                 int64_t now_ms, const std::vector<v1::AdaptiveRow>& rows = {});

  // --- kernel builds (builds.h says what each does) ---
  absl::StatusOr<std::optional<v1::KernelBuild>> TakeBuild(const std::string& agent_id,
                                                           const v1::HostInfo& host,
                                                           int64_t now_ms);
  absl::StatusOr<builds::ProgressResult> BuildProgress(const std::string& agent_id,
                                                       const v1::BuildProgress& progress,
                                                       int64_t now_ms);
  absl::StatusOr<builds::CompleteResult> CompleteBuild(const std::string& agent_id,
                                                       const v1::BuildComplete& complete,
                                                       int64_t now_ms);
  absl::StatusOr<builds::CompleteResult> ReuseBuild(int64_t task_id, const v1::KernelBuild& from,
                                                    int64_t now_ms);
  // agent_id "" = every build building (a controller that starts: their builders' streams
  // ended with the old controller, and a builder ends its build when its stream does).
  absl::StatusOr<std::vector<int64_t>> ReleaseBuilds(const std::string& agent_id,
                                                     const std::string& reason, int64_t now_ms);
  absl::StatusOr<std::optional<v1::KernelBuild>> GetBuild(int64_t task_id);
  absl::StatusOr<std::string> RunOfBuild(int64_t task_id);  // NOT_FOUND for an unknown build
  absl::StatusOr<std::vector<std::string>> BuildLog(int64_t task_id);
  // --- run events ---
  // Records an event that only the core knows about (e.g. a reboot): fills in its id and the
  // run's counts, and passes it to the sink like the others. Returns it as stored.
  absl::StatusOr<v1::RunEvent> RecordRunEvent(v1::RunEvent event);
  // Events of `run_id` with an id above `after_id`, oldest first, at most `limit` (0: 1000).
  // NOT_FOUND for an unknown run.
  absl::StatusOr<std::vector<v1::RunEvent>> RunEventsSince(const std::string& run_id,
                                                           uint64_t after_id, uint32_t limit);

  // --- gauges ---
  absl::StatusOr<StoreCounts> Counts();

  // --- health ---
  // Whether the last write failed for a storage reason (disk full, I/O error, read-only),
  // and why; cleared by the next write that commits a change.
  bool writes_failing() const { return writer_->failing(); }
  absl::Status last_write_failure() const { return writer_->last_failure(); }
  // Every write fails with `status` until called with OK (tests of outages).
  void FailWritesForTest(absl::Status status) { writer_->FailWritesForTest(std::move(status)); }
  // Transactions the writer has run (tests of batching).
  uint64_t TransactionsForTest() const { return writer_->transactions(); }

 private:
  Store(std::unique_ptr<Writer> writer, std::string path, size_t readers)
      : writer_(std::move(writer)), readers_(std::move(path), readers) {}

  // `body(db, events)` (returning absl::StatusOr<T>) in the writer's next transaction;
  // returns once it is committed or failed.
  template <typename T, typename Body>
  absl::StatusOr<T> WriteSync(Body body);
  // The same, with `done` called on the writer's callback thread; `urgent`: ahead of the
  // ordinary writes waiting (WriteOp::urgent).
  template <typename T, typename Body>
  void WriteAsync(Body body, StoreCallback<T> done, std::shared_ptr<WriteChain> chain,
                  bool urgent = false);

  std::unique_ptr<Writer> writer_;
  ReaderPool readers_;
};

// Run ids are decimal row ids; INVALID_ARGUMENT names the field for anything else.
absl::StatusOr<int64_t> ParseRunId(const std::string& run_id);

}  // namespace tlbfleet::store
