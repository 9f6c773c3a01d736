#include "controller/store/store.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "controller/store/agents.h"
#include "controller/store/builds.h"
#include "controller/store/dispatch.h"
#include "controller/store/events.h"
#include "controller/store/imports.h"
#include "controller/store/internal.h"
#include "controller/store/migrations.h"
#include "controller/store/results.h"
#include "controller/store/runs.h"
#include "controller/store/slots.h"

namespace tlbfleet::store {

namespace internal {

v1::RunState RunStateFromText(std::string_view s) {
  if (s == "queued") return v1::RUN_STATE_QUEUED;
  if (s == "running") return v1::RUN_STATE_RUNNING;
  if (s == "succeeded") return v1::RUN_STATE_SUCCEEDED;
  if (s == "failed") return v1::RUN_STATE_FAILED;
  if (s == "cancelled") return v1::RUN_STATE_CANCELLED;
  return v1::RUN_STATE_UNSPECIFIED;
}

v1::JobState JobStateFromText(std::string_view s) {
  if (s == "queued") return v1::JOB_STATE_QUEUED;
  if (s == "leased") return v1::JOB_STATE_RUNNING;
  if (s == "succeeded") return v1::JOB_STATE_SUCCEEDED;
  if (s == "failed") return v1::JOB_STATE_FAILED;
  if (s == "cancelled") return v1::JOB_STATE_CANCELLED;
  return v1::JOB_STATE_UNSPECIFIED;
}

std::string LeaseId(int64_t job_id, int64_t attempt) {
  return absl::StrCat("j", job_id, "a", attempt);
}

}  // namespace internal

absl::StatusOr<int64_t> ParseRunId(const std::string& run_id) {
  int64_t id = 0;
  auto [end, ec] = std::from_chars(run_id.data(), run_id.data() + run_id.size(), id);
  if (run_id.empty() || ec != std::errc() || end != run_id.data() + run_id.size() || id <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("run_id: \"", run_id, "\" is not a run id (a positive integer)"));
  }
  return id;
}

bool ActiveRun::MayHaveWorkFor(const std::string& agent_id) const {
  if (auto it = slot_of.find(agent_id); it != slot_of.end()) {
    return slots_with_work.count(it->second) > 0;
  }
  if (slots_to_expand > 0) return true;
  return std::any_of(slots_with_work.begin(), slots_with_work.end(),
                     [&](int64_t slot) { return bound_slots.count(slot) == 0; });
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path, StoreOptions options) {
  TLB_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path));
  TLB_RETURN_IF_ERROR(Migrate(*db));
  Writer::Options writer;
  writer.thread = options.writer_thread;
  writer.max_batch = std::max<size_t>(1, options.max_batch);
  writer.max_batch_ms = options.max_batch_ms;
  return std::unique_ptr<Store>(new Store(std::make_unique<Writer>(std::move(db), writer), path,
                                          std::max<size_t>(1, options.readers)));
}

Store::~Store() { writer_.reset(); }

void Store::SetEventSink(EventSink sink) { writer_->SetEventSink(std::move(sink)); }

template <typename T, typename Body>
absl::StatusOr<T> Store::WriteSync(Body body) {
  std::optional<T> value;
  absl::Status status;
  absl::Notification done;
  WriteOp op;
  op.sync = true;
  op.apply = [&](Database& db, EventBatch& events) -> absl::Status {
    absl::StatusOr<T> result = body(db, events);
    if (!result.ok()) return result.status();
    value = *std::move(result);
    return absl::OkStatus();
  };
  op.done = [&](absl::Status s) {
    status = std::move(s);
    done.Notify();
  };
  writer_->Submit(std::move(op));
  done.WaitForNotification();
  if (!status.ok()) return status;
  return *std::move(value);
}

template <typename T, typename Body>
void Store::WriteAsync(Body body, StoreCallback<T> done, std::shared_ptr<WriteChain> chain,
                       bool urgent) {
  auto value = std::make_shared<std::optional<T>>();
  WriteOp op;
  op.urgent = urgent;
  op.chain = std::move(chain);
  op.apply = [body = std::move(body), value](Database& db, EventBatch& events) -> absl::Status {
    absl::StatusOr<T> result = body(db, events);
    if (!result.ok()) return result.status();
    *value = *std::move(result);
    return absl::OkStatus();
  };
  op.done = [done = std::move(done), value](absl::Status s) {
    if (!done) return;
    if (!s.ok()) {
      done(std::move(s));
    } else {
      done(std::move(**value));
    }
  };
  writer_->Submit(std::move(op));
}

namespace {

// For writes with nothing to return.
struct Nothing {};

template <typename Body>
auto Returning(Body body) {
  return [body = std::move(body)](Database& db, EventBatch& events) -> absl::StatusOr<Nothing> {
    TLB_RETURN_IF_ERROR(body(db, events));
    return Nothing{};
  };
}

}  // namespace

// --- hosts --------------------------------------------------------------------------------

absl::Status Store::RegisterHost(const std::string& agent_id, const v1::HostInfo& info,
                                 const std::string& principal, int64_t now_ms) {
  return WriteSync<Nothing>(Returning([&](Database& db, EventBatch&) {
           return agents::Register(db, agent_id, info, principal, now_ms);
         }))
      .status();
}

absl::StatusOr<Reconciled> Store::RegisterAgent(const std::string& agent_id,
                                                const v1::HostInfo& info,
                                                const std::string& principal,
                                                const AgentReport& report, int64_t now_ms,
                                                int64_t lease_ms, int max_attempts) {
  return WriteSync<Reconciled>([&](Database& db, EventBatch& events) -> absl::StatusOr<Reconciled> {
    TLB_RETURN_IF_ERROR(agents::Register(db, agent_id, info, principal, now_ms));
    return agents::Reconcile(db, events, agent_id, report, now_ms, lease_ms, max_attempts);
  });
}

absl::StatusOr<std::vector<StoredHost>> Store::ListHosts() {
  return readers_.Read([](Database& db) { return agents::List(db); });
}

// --- runs ---------------------------------------------------------------------------------

absl::StatusOr<std::string> Store::CreateRun(const v1::RunSpec& spec, const std::string& spec_yaml,
                                             const std::vector<scheduler::JobPlan>& jobs,
                                             int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(
      int64_t run_id,
      WriteSync<int64_t>([&](Database& db, EventBatch& events) -> absl::StatusOr<int64_t> {
        TLB_ASSIGN_OR_RETURN(int64_t id, runs::Insert(db, spec, spec_yaml, now_ms, false));
        TLB_RETURN_IF_ERROR(builds::InsertForRun(db, id, spec));
        TLB_RETURN_IF_ERROR(runs::InsertJobs(db, id, spec, jobs, -1));
        TLB_RETURN_IF_ERROR(runs::Submitted(db, events, id, now_ms));
        return id;
      }));
  return absl::StrCat(run_id);
}

absl::StatusOr<std::string> Store::CreateDeferredRun(const v1::RunSpec& spec,
                                                     const std::string& spec_yaml, int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(
      int64_t run_id,
      WriteSync<int64_t>([&](Database& db, EventBatch& events) -> absl::StatusOr<int64_t> {
        TLB_ASSIGN_OR_RETURN(int64_t id, runs::Insert(db, spec, spec_yaml, now_ms, true));
        TLB_RETURN_IF_ERROR(builds::InsertForRun(db, id, spec));
        TLB_RETURN_IF_ERROR(runs::Submitted(db, events, id, now_ms));
        return id;
      }));
  return absl::StrCat(run_id);
}

absl::StatusOr<v1::Run> Store::GetRun(const std::string& run_id) {
  TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run_id));
  return readers_.Read([id](Database& db) -> absl::StatusOr<v1::Run> {
    TLB_ASSIGN_OR_RETURN(v1::Run run, runs::Load(db, id));
    TLB_RETURN_IF_ERROR(slots::LoadAbandoned(db, id, &run));
    TLB_RETURN_IF_ERROR(builds::LoadForRun(db, id, &run));
    return run;
  });
}

absl::StatusOr<std::vector<v1::Run>> Store::ListRuns(uint32_t limit) {
  return readers_.Read([limit](Database& db) -> absl::StatusOr<std::vector<v1::Run>> {
    TLB_ASSIGN_OR_RETURN(std::vector<v1::Run> list, runs::List(db, limit));
    for (v1::Run& run : list) {
      TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run.id()));
      TLB_RETURN_IF_ERROR(slots::LoadAbandoned(db, id, &run));
    }
    return list;
  });
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Store::CancelRun(
    const std::string& run_id, int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run_id));
  using Running = std::vector<std::pair<std::string, std::string>>;
  return WriteSync<Running>(
      [&](Database& db, EventBatch& events) { return runs::Cancel(db, events, id, now_ms); });
}

absl::StatusOr<std::vector<ActiveRun>> Store::ActiveRuns() {
  return readers_.Read([](Database& db) { return runs::Active(db); });
}

absl::StatusOr<std::vector<ActiveRun>> Store::ActiveRunsAmong(
    const std::vector<std::string>& run_ids) {
  std::vector<int64_t> ids;
  for (const std::string& run_id : run_ids) {
    if (absl::StatusOr<int64_t> id = ParseRunId(run_id); id.ok()) ids.push_back(*id);
  }
  return readers_.Read([&ids](Database& db) { return runs::ActiveAmong(db, ids); });
}

absl::Status Store::FailRun(const std::string& run_id, const std::string& error, int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run_id));
  return WriteSync<Nothing>(Returning([&](Database& db, EventBatch& events) {
           return runs::Fail(db, events, id, error, now_ms);
         }))
      .status();
}

// --- dispatch -----------------------------------------------------------------------------

absl::StatusOr<LeaseResult> Store::Lease(const LeaseRequest& request) {
  return WriteSync<LeaseResult>(
      [&](Database& db, EventBatch& events) { return dispatch::Lease(db, events, request); });
}

void Store::LeaseAsync(LeaseRequest request, StoreCallback<LeaseResult> done) {
  // Urgent: an idle agent waits for it, and it depends on nothing of the agent's still queued
  // (the controller asks for a lease once the agent's completion has committed).
  WriteAsync<LeaseResult>(
      [request = std::move(request)](Database& db, EventBatch& events) {
        return dispatch::Lease(db, events, request);
      },
      std::move(done), nullptr, /*urgent=*/true);
}

absl::StatusOr<bool> Store::RenewLease(const std::string& lease_id, const std::string& agent_id,
                                       int64_t now_ms, int64_t lease_ms) {
  return WriteSync<bool>([&](Database& db, EventBatch&) {
    return dispatch::Renew(db, lease_id, agent_id, now_ms, lease_ms);
  });
}

void Store::RenewLeaseAsync(std::string lease_id, std::string agent_id, int64_t now_ms,
                            int64_t lease_ms, StoreCallback<bool> done) {
  WriteAsync<bool>(
      [lease_id = std::move(lease_id), agent_id = std::move(agent_id), now_ms, lease_ms](
          Database& db, EventBatch&) {
        return dispatch::Renew(db, lease_id, agent_id, now_ms, lease_ms);
      },
      std::move(done), nullptr);
}

absl::StatusOr<int64_t> Store::ExtendLeases(int64_t until_ms) {
  return WriteSync<int64_t>(
      [&](Database& db, EventBatch&) { return dispatch::ExtendAll(db, until_ms); });
}

absl::StatusOr<std::vector<ExpiredLease>> Store::ExpireLeases(int64_t now_ms, int max_attempts) {
  return WriteSync<std::vector<ExpiredLease>>([&](Database& db, EventBatch& events) {
    return dispatch::Expire(db, events, now_ms, max_attempts);
  });
}

absl::StatusOr<SlotRestart> Store::RestartSlot(const std::string& run_id, int64_t slot,
                                               const std::string& agent_id,
                                               const std::string& reason, int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run_id));
  return WriteSync<SlotRestart>([&](Database& db, EventBatch& events) {
    return slots::Restart(db, events, id, slot, agent_id, reason, now_ms);
  });
}

absl::StatusOr<SlotProgress> Store::SlotProgressOf(const std::string& run_id, int64_t slot) {
  TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run_id));
  return readers_.Read([id, slot](Database& db) { return slots::Progress(db, id, slot); });
}

absl::StatusOr<std::optional<ExpiredLease>> Store::ReleaseLease(const std::string& lease_id,
                                                                const std::string& agent_id,
                                                                const std::string& reason,
                                                                bool count_attempt, int64_t now_ms,
                                                                int max_attempts) {
  return WriteSync<std::optional<ExpiredLease>>(
      [&](Database& db, EventBatch& events) -> absl::StatusOr<std::optional<ExpiredLease>> {
        TLB_ASSIGN_OR_RETURN(std::optional<dispatch::HeldJob> held,
                             dispatch::Held(db, lease_id, agent_id));
        if (!held.has_value()) return std::optional<ExpiredLease>();
        dispatch::Requeue how;
        how.why = reason;
        how.count_attempt = count_attempt;
        TLB_ASSIGN_OR_RETURN(ExpiredLease e,
                             dispatch::TakeBack(db, events, *held, how, now_ms, max_attempts));
        return std::optional<ExpiredLease>(std::move(e));
      });
}

absl::StatusOr<std::optional<std::string>> Store::LeaseHeldBy(const std::string& agent_id) {
  return readers_.Read([&](Database& db) { return dispatch::HeldBy(db, agent_id); });
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Store::PeerReservations() {
  return readers_.Read([](Database& db) { return dispatch::PeerReservations(db); });
}

// --- reboot requests ----------------------------------------------------------------------

absl::Status Store::SaveReboot(const RebootRecord& record) {
  return WriteSync<Nothing>(
             Returning([&](Database& db, EventBatch&) { return agents::SaveReboot(db, record); }))
      .status();
}

absl::Status Store::DeleteReboot(const std::string& agent_id) {
  return WriteSync<Nothing>(Returning([&](Database& db, EventBatch&) {
           return agents::DeleteReboot(db, agent_id);
         }))
      .status();
}

absl::StatusOr<std::vector<RebootRecord>> Store::Reboots() {
  return readers_.Read([](Database& db) { return agents::Reboots(db); });
}

// --- results ------------------------------------------------------------------------------

absl::StatusOr<IngestResult> Store::IngestSamples(const std::string& agent_id,
                                                  const v1::SampleBatch& batch) {
  return WriteSync<IngestResult>(
      [&](Database& db, EventBatch&) { return results::Ingest(db, agent_id, batch); });
}

void Store::IngestSamplesAsync(std::string agent_id, v1::SampleBatch batch, int64_t renew_until_ms,
                               std::shared_ptr<WriteChain> chain,
                               StoreCallback<IngestResult> done) {
  WriteAsync<IngestResult>(
      [agent_id = std::move(agent_id), batch = std::move(batch), renew_until_ms](Database& db,
                                                                                 EventBatch&) {
        return results::Ingest(db, agent_id, batch, renew_until_ms);
      },
      std::move(done), std::move(chain));
}

absl::StatusOr<CompletionResult> Store::CompleteJob(const std::string& agent_id,
                                                    const v1::JobComplete& complete, int64_t now_ms,
                                                    int max_attempts) {
  return WriteSync<CompletionResult>([&](Database& db, EventBatch& events) {
    return results::Complete(db, events, agent_id, complete, now_ms, max_attempts);
  });
}

void Store::CompleteJobAsync(std::string agent_id, v1::JobComplete complete, int64_t now_ms,
                             int max_attempts, std::shared_ptr<WriteChain> chain,
                             StoreCallback<CompletionResult> done) {
  WriteAsync<CompletionResult>(
      [agent_id = std::move(agent_id), complete = std::move(complete), now_ms, max_attempts](
          Database& db, EventBatch& events) {
        return results::Complete(db, events, agent_id, complete, now_ms, max_attempts);
      },
      std::move(done), std::move(chain));
}

absl::StatusOr<std::vector<v1::Sample>> Store::GetSamples(const std::string& run_id) {
  TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run_id));
  return readers_.Read([id](Database& db) { return results::Samples(db, id); });
}

absl::StatusOr<ImportedRunResult> Store::ImportRun(const ImportedRunRecord& record,
                                                   int64_t now_ms) {
  return WriteSync<ImportedRunResult>(
      [&](Database& db, EventBatch& events) -> absl::StatusOr<ImportedRunResult> {
        return imports::Insert(db, events, record, now_ms);
      });
}

// --- adaptive runs ------------------------------------------------------------------------

absl::StatusOr<std::vector<ActiveRun>> Store::AdaptiveRunsAwaitingDecision() {
  return readers_.Read([](Database& db) { return runs::AwaitingDecision(db); });
}

absl::Status Store::ExtendRun(const std::string& run_id, const RunExtension& extension,
                              int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run_id));
  return WriteSync<Nothing>(Returning([&](Database& db, EventBatch& events) {
           return runs::Extend(db, events, id, extension, now_ms);
         }))
      .status();
}

absl::Status Store::FinishAdaptiveRun(const std::string& run_id, const std::string& reason,
                                      int64_t now_ms, const std::vector<v1::AdaptiveRow>& rows) {
  TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run_id));
  return WriteSync<Nothing>(Returning([&](Database& db, EventBatch& events) {
           return runs::FinishAdaptive(db, events, id, reason, now_ms, rows);
         }))
      .status();
}

// --- run events and gauges ----------------------------------------------------------------

// --- kernel builds --------------------------------------------------------------------------

absl::StatusOr<std::optional<v1::KernelBuild>> Store::TakeBuild(const std::string& agent_id,
                                                                const v1::HostInfo& host,
                                                                int64_t now_ms) {
  return WriteSync<std::optional<v1::KernelBuild>>(
      [&](Database& db, EventBatch& events) -> absl::StatusOr<std::optional<v1::KernelBuild>> {
        return builds::Take(db, events, agent_id, host, now_ms);
      });
}

absl::StatusOr<builds::ProgressResult> Store::BuildProgress(const std::string& agent_id,
                                                            const v1::BuildProgress& progress,
                                                            int64_t now_ms) {
  return WriteSync<builds::ProgressResult>(
      [&](Database& db, EventBatch& events) -> absl::StatusOr<builds::ProgressResult> {
        return builds::Progress(db, events, agent_id, progress, now_ms);
      });
}

absl::StatusOr<builds::CompleteResult> Store::CompleteBuild(const std::string& agent_id,
                                                            const v1::BuildComplete& complete,
                                                            int64_t now_ms) {
  return WriteSync<builds::CompleteResult>(
      [&](Database& db, EventBatch& events) -> absl::StatusOr<builds::CompleteResult> {
        return builds::Complete(db, events, agent_id, complete, now_ms);
      });
}

absl::StatusOr<builds::CompleteResult> Store::ReuseBuild(int64_t task_id,
                                                         const v1::KernelBuild& from,
                                                         int64_t now_ms) {
  return WriteSync<builds::CompleteResult>(
      [&](Database& db, EventBatch& events) -> absl::StatusOr<builds::CompleteResult> {
        return builds::Reuse(db, events, task_id, from, now_ms);
      });
}

absl::StatusOr<std::vector<int64_t>> Store::ReleaseBuilds(const std::string& agent_id,
                                                          const std::string& reason,
                                                          int64_t now_ms) {
  return WriteSync<std::vector<int64_t>>(
      [&](Database& db, EventBatch& events) -> absl::StatusOr<std::vector<int64_t>> {
        return builds::Release(db, events, agent_id, reason, now_ms);
      });
}

absl::StatusOr<std::optional<v1::KernelBuild>> Store::GetBuild(int64_t task_id) {
  return readers_.Read([&](Database& db) { return builds::Load(db, task_id); });
}

absl::StatusOr<std::string> Store::RunOfBuild(int64_t task_id) {
  TLB_ASSIGN_OR_RETURN(int64_t run,
                       readers_.Read([&](Database& db) { return builds::RunOf(db, task_id); }));
  if (run == 0) return absl::NotFoundError(absl::StrCat("build ", task_id, " not found"));
  return absl::StrCat(run);
}

absl::StatusOr<std::vector<std::string>> Store::BuildLog(int64_t task_id) {
  return readers_.Read([&](Database& db) { return builds::LogLines(db, task_id); });
}

absl::StatusOr<v1::RunEvent> Store::RecordRunEvent(v1::RunEvent event) {
  TLB_RETURN_IF_ERROR(ParseRunId(event.run_id()).status());
  return WriteSync<v1::RunEvent>(
      [&](Database& db, EventBatch& events) -> absl::StatusOr<v1::RunEvent> {
        TLB_RETURN_IF_ERROR(events::Record(db, events, event));
        return events.back();
      });
}

absl::StatusOr<std::vector<v1::RunEvent>> Store::RunEventsSince(const std::string& run_id,
                                                                uint64_t after_id, uint32_t limit) {
  TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run_id));
  return readers_.Read([&](Database& db) -> absl::StatusOr<std::vector<v1::RunEvent>> {
    TLB_RETURN_IF_ERROR(runs::Load(db, id).status());  // NOT_FOUND for an unknown run
    return events::Since(db, id, after_id, limit == 0 ? 1000 : limit);
  });
}

absl::StatusOr<StoreCounts> Store::Counts() {
  return readers_.Read([](Database& db) -> absl::StatusOr<StoreCounts> {
    TLB_ASSIGN_OR_RETURN(StoreCounts counts, runs::Counts(db));
    TLB_ASSIGN_OR_RETURN(Statement hosts, db.Prepare("SELECT COUNT(*) FROM hosts"));
    TLB_ASSIGN_OR_RETURN(bool row, hosts.Step());
    if (row) counts.hosts = static_cast<uint64_t>(hosts.Int(0));
    return counts;
  });
}

}  // namespace tlbfleet::store
