#include "controller/store/store.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "controller/store/migrations.h"

namespace tlbfleet::store {

namespace {

v1::RunState RunStateFromText(const std::string& s) {
  if (s == "queued") return v1::RUN_STATE_QUEUED;
  if (s == "running") return v1::RUN_STATE_RUNNING;
  if (s == "succeeded") return v1::RUN_STATE_SUCCEEDED;
  if (s == "failed") return v1::RUN_STATE_FAILED;
  if (s == "cancelled") return v1::RUN_STATE_CANCELLED;
  return v1::RUN_STATE_UNSPECIFIED;
}

std::string LeaseId(int64_t job_id, int64_t attempt) {
  return absl::StrCat("j", job_id, "a", attempt);
}

}  // namespace

absl::StatusOr<int64_t> ParseRunId(const std::string& run_id) {
  int64_t id = 0;
  auto [end, ec] = std::from_chars(run_id.data(), run_id.data() + run_id.size(), id);
  if (run_id.empty() || ec != std::errc() || end != run_id.data() + run_id.size() || id <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("run_id: \"", run_id, "\" is not a run id (a positive integer)"));
  }
  return id;
}

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  TLB_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path));
  TLB_RETURN_IF_ERROR(Migrate(*db));
  return std::unique_ptr<Store>(new Store(std::move(db)));
}

// --- hosts --------------------------------------------------------------------------------

absl::Status Store::UpsertHost(const std::string& agent_id, const v1::HostInfo& info,
                               int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt,
                       db_->Prepare("INSERT INTO hosts(agent_id, hostname, info, first_seen_ms,"
                                    " last_seen_ms) VALUES(?1, ?2, ?3, ?4, ?4)"
                                    " ON CONFLICT(agent_id) DO UPDATE SET hostname = ?2,"
                                    " info = ?3, last_seen_ms = ?4"));
  return stmt.Bind(1, agent_id)
      .Bind(2, info.hostname())
      .BindBlob(3, info.SerializeAsString())
      .Bind(4, now_ms)
      .Run();
}

absl::StatusOr<std::vector<StoredHost>> Store::ListHosts() {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt,
                       db_->Prepare("SELECT agent_id, info, first_seen_ms, last_seen_ms FROM hosts"
                                    " ORDER BY hostname, agent_id"));
  std::vector<StoredHost> hosts;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    StoredHost h;
    h.agent_id = stmt.Text(0);
    h.info.ParseFromString(stmt.Blob(1));
    h.first_seen_ms = stmt.Int(2);
    h.last_seen_ms = stmt.Int(3);
    hosts.push_back(std::move(h));
  }
  return hosts;
}

// --- runs ---------------------------------------------------------------------------------

absl::StatusOr<int64_t> Store::InsertRunLocked(const v1::RunSpec& spec,
                                               const std::string& spec_yaml, int64_t now_ms,
                                               bool expand_on_bind) {
  TLB_ASSIGN_OR_RETURN(Statement run,
                       db_->Prepare("INSERT INTO runs(name, benchmark, spec, spec_yaml, state,"
                                    " created_ms, expand_on_bind, iterations_per_boot, boots)"
                                    " VALUES(?1, ?2, ?3, ?4, 'queued', ?5, ?6, ?7, ?8)"));
  TLB_RETURN_IF_ERROR(run.Bind(1, spec.name())
                          .Bind(2, spec.benchmark())
                          .BindBlob(3, spec.SerializeAsString())
                          .Bind(4, spec_yaml)
                          .Bind(5, now_ms)
                          .Bind(6, static_cast<int64_t>(expand_on_bind ? 1 : 0))
                          .Bind(7, static_cast<int64_t>(spec.iterations()))
                          .Bind(8, static_cast<int64_t>(std::max<uint32_t>(spec.boots(), 1)))
                          .Run());
  return db_->LastInsertId();
}

absl::StatusOr<std::string> Store::CreateRun(const v1::RunSpec& spec, const std::string& spec_yaml,
                                             const std::vector<scheduler::JobPlan>& jobs,
                                             int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  int64_t run_id = 0;
  absl::Status s = InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(run_id, InsertRunLocked(spec, spec_yaml, now_ms, false));
    return InsertJobsLocked(run_id, spec, jobs, -1);
  });
  if (!s.ok()) return s;
  return absl::StrCat(run_id);
}

absl::StatusOr<std::string> Store::CreateDeferredRun(const v1::RunSpec& spec,
                                                     const std::string& spec_yaml, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(int64_t run_id, InsertRunLocked(spec, spec_yaml, now_ms, true));
  return absl::StrCat(run_id);
}

// `slot` >= 0 overrides the plans' slot numbers (a deferred run's slot expansion).
absl::Status Store::InsertJobsLocked(int64_t run_id, const v1::RunSpec& spec,
                                     const std::vector<scheduler::JobPlan>& jobs, int64_t slot) {
  TLB_ASSIGN_OR_RETURN(
      Statement job,
      db_->Prepare("INSERT INTO jobs(run_id, slot, arm, param_name, param_value, iteration,"
                   " assignment, state, boot_index)"
                   " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, 'queued', ?8)"));
  for (const scheduler::JobPlan& plan : jobs) {
    v1::JobAssignment a;
    a.set_run_id(absl::StrCat(run_id));
    a.set_benchmark(spec.benchmark());
    a.mutable_params()->insert(plan.params.begin(), plan.params.end());
    a.set_arm(plan.arm);
    a.set_param_name(plan.param_name);
    a.set_param_value(plan.param_value);
    a.set_iteration(plan.iteration);
    a.set_boot_index(plan.boot);
    a.set_ceiling(plan.ceiling);
    a.set_timeout_seconds(plan.timeout_seconds);
    for (const std::string& monitor : plan.monitors) a.add_monitors(monitor);
    TLB_RETURN_IF_ERROR(job.Bind(1, run_id)
                            .Bind(2, slot >= 0 ? slot : static_cast<int64_t>(plan.slot))
                            .Bind(3, plan.arm)
                            .Bind(4, plan.param_name)
                            .Bind(5, plan.param_value)
                            .Bind(6, static_cast<int64_t>(plan.iteration))
                            .BindBlob(7, a.SerializeAsString())
                            .Bind(8, static_cast<int64_t>(plan.boot))
                            .Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Run> Store::LoadRunLocked(int64_t run_id) {
  TLB_ASSIGN_OR_RETURN(Statement stmt,
                       db_->Prepare("SELECT id, spec, state, error, created_ms, finished_ms,"
                                    " iterations_per_boot, boots, adaptive_rounds, stop_reason"
                                    " FROM runs WHERE id = ?1"));
  stmt.Bind(1, run_id);
  TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
  v1::Run run;
  run.set_id(absl::StrCat(stmt.Int(0)));
  run.mutable_spec()->ParseFromString(stmt.Blob(1));
  run.set_state(RunStateFromText(stmt.Text(2)));
  run.set_error(stmt.Text(3));
  run.set_created_unix(stmt.Int(4) / 1000);
  if (!stmt.IsNull(5)) run.set_finished_unix(stmt.Int(5) / 1000);
  run.set_iterations_per_boot(static_cast<uint32_t>(stmt.Int(6)));
  run.set_boots(static_cast<uint32_t>(stmt.Int(7)));
  run.set_adaptive_rounds(static_cast<uint32_t>(stmt.Int(8)));
  run.set_stop_reason(stmt.Text(9));

  TLB_ASSIGN_OR_RETURN(Statement counts,
                       db_->Prepare("SELECT state, COUNT(*) FROM jobs WHERE run_id = ?1"
                                    " GROUP BY state"));
  counts.Bind(1, run_id);
  v1::JobCounts* jc = run.mutable_jobs();
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool more, counts.Step());
    if (!more) break;
    std::string state = counts.Text(0);
    auto n = static_cast<uint32_t>(counts.Int(1));
    jc->set_total(jc->total() + n);
    if (state == "queued") jc->set_queued(n);
    if (state == "leased") jc->set_running(n);
    if (state == "succeeded") jc->set_succeeded(n);
    if (state == "failed") jc->set_failed(n);
    if (state == "cancelled") jc->set_cancelled(n);
  }
  TLB_ASSIGN_OR_RETURN(Statement samples,
                       db_->Prepare("SELECT COUNT(*) FROM samples WHERE run_id = ?1"));
  samples.Bind(1, run_id);
  TLB_ASSIGN_OR_RETURN(bool has, samples.Step());
  if (has) run.set_samples(static_cast<uint64_t>(samples.Int(0)));
  return run;
}

absl::StatusOr<v1::Run> Store::GetRun(const std::string& run_id) {
  TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run_id));
  absl::MutexLock lock(&mu_);
  return LoadRunLocked(id);
}

absl::StatusOr<std::vector<v1::Run>> Store::ListRuns(uint32_t limit) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt,
                       db_->Prepare("SELECT id FROM runs ORDER BY id DESC LIMIT ?1"));
  stmt.Bind(1, static_cast<int64_t>(limit == 0 ? 50 : limit));
  std::vector<int64_t> ids;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    ids.push_back(stmt.Int(0));
  }
  std::vector<v1::Run> runs;
  for (int64_t id : ids) {
    TLB_ASSIGN_OR_RETURN(v1::Run run, LoadRunLocked(id));
    runs.push_back(std::move(run));
  }
  return runs;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Store::CancelRun(
    const std::string& run_id, int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run_id));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(v1::Run run, LoadRunLocked(id));
  std::vector<std::pair<std::string, std::string>> running;
  if (run.state() != v1::RUN_STATE_QUEUED && run.state() != v1::RUN_STATE_RUNNING) return running;
  absl::Status s = InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(Statement leased, db_->Prepare("SELECT agent_id, lease_id FROM jobs"
                                                        " WHERE run_id = ?1 AND state = 'leased'"));
    leased.Bind(1, id);
    for (;;) {
      TLB_ASSIGN_OR_RETURN(bool row, leased.Step());
      if (!row) break;
      running.emplace_back(leased.Text(0), leased.Text(1));
    }
    TLB_ASSIGN_OR_RETURN(Statement jobs,
                         db_->Prepare("UPDATE jobs SET state = 'cancelled', finished_ms = ?2"
                                      " WHERE run_id = ?1 AND state IN ('queued', 'leased')"));
    TLB_RETURN_IF_ERROR(jobs.Bind(1, id).Bind(2, now_ms).Run());
    TLB_ASSIGN_OR_RETURN(Statement upd,
                         db_->Prepare("UPDATE runs SET state = 'cancelled', finished_ms = ?2,"
                                      " error = 'cancelled by user' WHERE id = ?1"));
    return upd.Bind(1, id).Bind(2, now_ms).Run();
  });
  if (!s.ok()) return s;
  return running;
}

absl::StatusOr<std::vector<ActiveRun>> Store::ActiveRuns() {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt,
                       db_->Prepare("SELECT id, spec FROM runs WHERE state IN ('queued','running')"
                                    " ORDER BY id"));
  std::vector<ActiveRun> runs;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    ActiveRun r;
    r.run_id = absl::StrCat(stmt.Int(0));
    r.spec.ParseFromString(stmt.Blob(1));
    runs.push_back(std::move(r));
  }
  return runs;
}

absl::Status Store::FailRunLocked(int64_t run_id, const std::string& error, int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(Statement jobs,
                       db_->Prepare("UPDATE jobs SET state = 'cancelled', finished_ms = ?2"
                                    " WHERE run_id = ?1 AND state = 'queued'"));
  TLB_RETURN_IF_ERROR(jobs.Bind(1, run_id).Bind(2, now_ms).Run());
  TLB_ASSIGN_OR_RETURN(Statement run,
                       db_->Prepare("UPDATE runs SET state = 'failed', error = ?2, finished_ms = ?3"
                                    " WHERE id = ?1 AND state IN ('queued', 'running')"));
  return run.Bind(1, run_id).Bind(2, error).Bind(3, now_ms).Run();
}

absl::Status Store::FailRun(const std::string& run_id, const std::string& error, int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run_id));
  absl::MutexLock lock(&mu_);
  return InTransaction(*db_, [&] { return FailRunLocked(id, error, now_ms); });
}

// --- dispatch -----------------------------------------------------------------------------

absl::StatusOr<std::optional<v1::JobAssignment>> Store::LeaseNextJob(
    const std::string& run_id, const std::string& agent_id, int64_t now_ms, int64_t lease_ms,
    const SlotExpander& expander, const std::string& boot_id, std::string* reboot_reason) {
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRunId(run_id));
  absl::MutexLock lock(&mu_);
  std::optional<v1::JobAssignment> leased;
  absl::Status s = InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(
        Statement run_row,
        db_->Prepare("SELECT spec, expand_on_bind, state FROM runs WHERE id = ?1"));
    run_row.Bind(1, rid);
    TLB_ASSIGN_OR_RETURN(bool run_found, run_row.Step());
    if (!run_found) return absl::OkStatus();
    int64_t only_slot = -1;  // a deferred run: lease from this slot only
    v1::RunSpec spec;
    spec.ParseFromString(run_row.Blob(0));
    if (run_row.Int(1) != 0) {
      const std::string state = run_row.Text(2);
      if (state != "queued" && state != "running") return absl::OkStatus();
      TLB_ASSIGN_OR_RETURN(Statement held, db_->Prepare("SELECT slot FROM run_slots"
                                                        " WHERE run_id = ?1 AND agent_id = ?2"));
      held.Bind(1, rid).Bind(2, agent_id);
      TLB_ASSIGN_OR_RETURN(bool holds, held.Step());
      if (!holds) {
        TLB_ASSIGN_OR_RETURN(std::optional<int64_t> slot,
                             PrepareDeferredSlotLocked(rid, spec, expander, now_ms));
        if (!slot.has_value()) return absl::OkStatus();
        only_slot = *slot;
      }
    }
    TLB_ASSIGN_OR_RETURN(
        Statement pick,
        db_->Prepare("SELECT j.id, j.slot, j.attempts, j.assignment, s.agent_id FROM jobs j"
                     " LEFT JOIN run_slots s ON s.run_id = j.run_id AND s.slot = j.slot"
                     " WHERE j.run_id = ?1 AND j.state = 'queued' AND (s.agent_id = ?2 OR"
                     " (s.agent_id IS NULL AND NOT EXISTS (SELECT 1 FROM run_slots s2"
                     "   WHERE s2.run_id = j.run_id AND s2.agent_id = ?2)))"
                     " AND (?3 < 0 OR j.slot = ?3)"
                     " ORDER BY j.id LIMIT 1"));
    pick.Bind(1, rid).Bind(2, agent_id).Bind(3, only_slot);
    TLB_ASSIGN_OR_RETURN(bool row, pick.Step());
    if (!row) return absl::OkStatus();
    int64_t job_id = pick.Int(0);
    int64_t slot = pick.Int(1);
    int64_t attempt = pick.Int(2) + 1;
    v1::JobAssignment a;
    a.ParseFromString(pick.Blob(3));
    bool slot_bound = !pick.IsNull(4);
    if (RunNeedsReboots(spec) && !boot_id.empty()) {
      // The first queued job of the slot may belong to another boot than this one.
      TLB_ASSIGN_OR_RETURN(std::optional<BootJob> on_this_boot,
                           PickJobForBootLocked(rid, slot, boot_id, reboot_reason));
      if (!on_this_boot.has_value()) return absl::OkStatus();
      job_id = on_this_boot->job_id;
      attempt = on_this_boot->attempts + 1;
      a.ParseFromString(on_this_boot->assignment);
    }
    if (!slot_bound) {
      TLB_ASSIGN_OR_RETURN(Statement bind,
                           db_->Prepare("INSERT INTO run_slots(run_id, slot, agent_id)"
                                        " VALUES(?1, ?2, ?3)"));
      TLB_RETURN_IF_ERROR(bind.Bind(1, rid).Bind(2, slot).Bind(3, agent_id).Run());
    }
    std::string lease_id = LeaseId(job_id, attempt);
    TLB_ASSIGN_OR_RETURN(Statement upd,
                         db_->Prepare("UPDATE jobs SET state = 'leased', attempts = ?2,"
                                      " lease_id = ?3, agent_id = ?4, lease_expires_ms = ?5"
                                      " WHERE id = ?1"));
    TLB_RETURN_IF_ERROR(upd.Bind(1, job_id)
                            .Bind(2, attempt)
                            .Bind(3, lease_id)
                            .Bind(4, agent_id)
                            .Bind(5, now_ms + lease_ms)
                            .Run());
    TLB_ASSIGN_OR_RETURN(Statement run, db_->Prepare("UPDATE runs SET state = 'running'"
                                                     " WHERE id = ?1 AND state = 'queued'"));
    TLB_RETURN_IF_ERROR(run.Bind(1, rid).Run());
    a.set_lease_id(lease_id);
    a.set_job_id(job_id);
    leased = std::move(a);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return leased;
}

absl::StatusOr<std::optional<Store::BootJob>> Store::PickJobForBootLocked(
    int64_t run_id, int64_t slot, const std::string& boot_id, std::string* reboot_reason) {
  auto first_queued = [&](int64_t boot_index) -> absl::StatusOr<std::optional<BootJob>> {
    TLB_ASSIGN_OR_RETURN(Statement q,
                         db_->Prepare("SELECT id, attempts, assignment FROM jobs"
                                      " WHERE run_id = ?1 AND slot = ?2 AND state = 'queued'"
                                      " AND boot_index = ?3 ORDER BY id LIMIT 1"));
    q.Bind(1, run_id).Bind(2, slot).Bind(3, boot_index);
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return std::optional<BootJob>();
    return std::optional<BootJob>(BootJob{q.Int(0), q.Int(1), q.Blob(2)});
  };
  TLB_ASSIGN_OR_RETURN(Statement lowest_q,
                       db_->Prepare("SELECT MIN(boot_index) FROM jobs WHERE run_id = ?1"
                                    " AND slot = ?2 AND state = 'queued'"));
  lowest_q.Bind(1, run_id).Bind(2, slot);
  TLB_ASSIGN_OR_RETURN(bool has_lowest, lowest_q.Step());
  if (!has_lowest || lowest_q.IsNull(0)) return std::optional<BootJob>();
  const int64_t lowest = lowest_q.Int(0);

  TLB_ASSIGN_OR_RETURN(Statement serves,
                       db_->Prepare("SELECT boot_index FROM slot_boots WHERE run_id = ?1"
                                    " AND slot = ?2 AND boot_id = ?3"));
  serves.Bind(1, run_id).Bind(2, slot).Bind(3, boot_id);
  TLB_ASSIGN_OR_RETURN(bool served, serves.Step());
  if (served) {
    // This boot already serves one boot index: it takes that index's jobs and nothing else.
    const int64_t index = serves.Int(0);
    TLB_ASSIGN_OR_RETURN(std::optional<BootJob> job, first_queued(index));
    if (!job.has_value() && reboot_reason != nullptr) {
      *reboot_reason = absl::StrCat("run ", run_id, " boot ", lowest + 1, " needs a fresh boot (",
                                    "boot ", index + 1, " ran on boot_id ", boot_id, ")");
    }
    return job;
  }
  // A fresh boot takes the lowest boot index with work left. If that index had started on
  // a boot that ended early (a crash, an unplanned reboot), it carries on here: samples
  // keep their real boot_id, which is what the statistics group by.
  TLB_ASSIGN_OR_RETURN(Statement record,
                       db_->Prepare("INSERT OR REPLACE INTO slot_boots(run_id, slot, boot_index,"
                                    " boot_id) VALUES(?1, ?2, ?3, ?4)"));
  TLB_RETURN_IF_ERROR(record.Bind(1, run_id).Bind(2, slot).Bind(3, lowest).Bind(4, boot_id).Run());
  return first_queued(lowest);
}

absl::StatusOr<std::optional<int64_t>> Store::PrepareDeferredSlotLocked(
    int64_t run_id, const v1::RunSpec& spec, const SlotExpander& expander, int64_t now_ms) {
  if (!expander) return std::optional<int64_t>();
  TLB_ASSIGN_OR_RETURN(Statement bound_q,
                       db_->Prepare("SELECT slot FROM run_slots WHERE run_id = ?1"));
  bound_q.Bind(1, run_id);
  std::set<int64_t> bound;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, bound_q.Step());
    if (!row) break;
    bound.insert(bound_q.Int(0));
  }
  // This host's expansion, computed at most once and only when a free slot needs it.
  std::optional<scheduler::SlotExpansion> mine;
  absl::Status expand_error;
  auto expand = [&]() -> bool {
    if (mine.has_value()) return true;
    absl::StatusOr<scheduler::SlotExpansion> e = expander(spec);
    if (!e.ok()) {
      expand_error = e.status();
      return false;
    }
    mine = *std::move(e);
    return true;
  };
  auto store_expansion = [&](int64_t slot, bool replace) -> absl::Status {
    if (replace) {
      TLB_ASSIGN_OR_RETURN(Statement drop,
                           db_->Prepare("DELETE FROM jobs WHERE run_id = ?1 AND slot = ?2"
                                        " AND state = 'queued'"));
      TLB_RETURN_IF_ERROR(drop.Bind(1, run_id).Bind(2, slot).Run());
    }
    TLB_RETURN_IF_ERROR(InsertJobsLocked(run_id, spec, mine->jobs, slot));
    TLB_ASSIGN_OR_RETURN(Statement basis,
                         db_->Prepare("INSERT OR REPLACE INTO slot_expansions(run_id, slot, basis)"
                                      " VALUES(?1, ?2, ?3)"));
    return basis.Bind(1, run_id).Bind(2, slot).Bind(3, mine->basis).Run();
  };
  for (int64_t slot = 0; slot < static_cast<int64_t>(spec.hosts().count()); ++slot) {
    if (bound.count(slot) > 0) continue;
    TLB_ASSIGN_OR_RETURN(
        Statement q, db_->Prepare("SELECT e.basis,"
                                  " (SELECT COUNT(*) FROM jobs j WHERE j.run_id = ?1"
                                  "  AND j.slot = ?2 AND j.state = 'queued'),"
                                  " (SELECT COUNT(*) FROM jobs j WHERE j.run_id = ?1"
                                  "  AND j.slot = ?2 AND j.state <> 'queued')"
                                  " FROM slot_expansions e WHERE e.run_id = ?1 AND e.slot = ?2"));
    q.Bind(1, run_id).Bind(2, slot);
    TLB_ASSIGN_OR_RETURN(bool expanded, q.Step());
    if (!expanded) {
      if (!expand()) break;
      TLB_RETURN_IF_ERROR(store_expansion(slot, false));
      return std::optional<int64_t>(slot);
    }
    const std::string basis = q.Text(0);
    const int64_t queued = q.Int(1);
    const int64_t started = q.Int(2);
    if (queued == 0) continue;
    if (!expand()) break;
    if (mine->basis == basis) return std::optional<int64_t>(slot);
    if (started == 0) {
      TLB_RETURN_IF_ERROR(store_expansion(slot, true));
      return std::optional<int64_t>(slot);
    }
    // Half measured for another sweep: it waits for a host whose sweep is the same.
  }
  if (!expand_error.ok()) {
    TLB_RETURN_IF_ERROR(FailRunLocked(run_id, std::string(expand_error.message()), now_ms));
  }
  return std::optional<int64_t>();
}

absl::StatusOr<bool> Store::RenewLease(const std::string& lease_id, const std::string& agent_id,
                                       int64_t now_ms, int64_t lease_ms) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt,
                       db_->Prepare("UPDATE jobs SET lease_expires_ms = ?3 WHERE lease_id = ?1"
                                    " AND agent_id = ?2 AND state = 'leased'"));
  TLB_RETURN_IF_ERROR(stmt.Bind(1, lease_id).Bind(2, agent_id).Bind(3, now_ms + lease_ms).Run());
  return db_->Changes() > 0;
}

absl::StatusOr<std::vector<ExpiredLease>> Store::ExpireLeases(int64_t now_ms, int max_attempts) {
  absl::MutexLock lock(&mu_);
  std::vector<ExpiredLease> expired;
  absl::Status s = InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(Statement find,
                         db_->Prepare("SELECT id, run_id, lease_id, agent_id, attempts FROM jobs"
                                      " WHERE state = 'leased' AND lease_expires_ms < ?1"));
    find.Bind(1, now_ms);
    std::vector<std::pair<ExpiredLease, int64_t>> found;
    for (;;) {
      TLB_ASSIGN_OR_RETURN(bool row, find.Step());
      if (!row) break;
      ExpiredLease e;
      e.job_id = find.Int(0);
      e.run_id = absl::StrCat(find.Int(1));
      e.lease_id = find.Text(2);
      e.agent_id = find.Text(3);
      found.emplace_back(std::move(e), find.Int(4));
    }
    for (auto& [e, attempts] : found) {
      int64_t run_id = 0;
      std::from_chars(e.run_id.data(), e.run_id.data() + e.run_id.size(), run_id);
      TLB_ASSIGN_OR_RETURN(Statement drop, db_->Prepare("DELETE FROM samples WHERE lease_id = ?1"));
      TLB_RETURN_IF_ERROR(drop.Bind(1, e.lease_id).Run());
      // The silent host gives up its slot so that another host can finish the run.
      TLB_ASSIGN_OR_RETURN(
          Statement unbind,
          db_->Prepare("DELETE FROM run_slots WHERE run_id = ?1 AND agent_id = ?2"));
      TLB_RETURN_IF_ERROR(unbind.Bind(1, run_id).Bind(2, e.agent_id).Run());
      e.requeued = attempts < max_attempts;
      if (e.requeued) {
        TLB_ASSIGN_OR_RETURN(
            Statement requeue,
            db_->Prepare("UPDATE jobs SET state = 'queued', lease_id = NULL,"
                         " agent_id = NULL, lease_expires_ms = NULL WHERE id = ?1"));
        TLB_RETURN_IF_ERROR(requeue.Bind(1, e.job_id).Run());
      } else {
        TLB_ASSIGN_OR_RETURN(Statement fail,
                             db_->Prepare("UPDATE jobs SET state = 'failed', finished_ms = ?2,"
                                          " error = ?3 WHERE id = ?1"));
        std::string error = absl::StrCat("job ", e.job_id, ": lease expired ", attempts,
                                         " times (agents went silent)");
        TLB_RETURN_IF_ERROR(fail.Bind(1, e.job_id).Bind(2, now_ms).Bind(3, error).Run());
        TLB_RETURN_IF_ERROR(FailRunLocked(run_id, error, now_ms));
      }
      expired.push_back(e);
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return expired;
}

absl::StatusOr<std::optional<std::string>> Store::LeaseHeldBy(const std::string& agent_id) {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement stmt, db_->Prepare("SELECT lease_id FROM jobs WHERE agent_id = ?1"
                                                    " AND state = 'leased' ORDER BY id LIMIT 1"));
  stmt.Bind(1, agent_id);
  TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(stmt.Text(0));
}

// --- results ------------------------------------------------------------------------------

absl::StatusOr<IngestResult> Store::IngestSamples(const std::string& agent_id,
                                                  const v1::SampleBatch& batch) {
  absl::MutexLock lock(&mu_);
  IngestResult result;
  absl::Status s = InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(Statement job,
                         db_->Prepare("SELECT id, run_id, arm, param_name, param_value, iteration,"
                                      " agent_id, state FROM jobs WHERE lease_id = ?1"));
    job.Bind(1, batch.lease_id());
    TLB_ASSIGN_OR_RETURN(bool found, job.Step());
    if (!found || job.Text(6) != agent_id ||
        (job.Text(7) != "leased" && job.Text(7) != "succeeded")) {
      result.rejected = true;
      result.reason = found ? absl::StrCat("lease ", batch.lease_id(), " is not held by agent ",
                                           agent_id, " (job state ", job.Text(7), ")")
                            : absl::StrCat("unknown lease ", batch.lease_id());
      return absl::OkStatus();
    }
    int64_t job_id = job.Int(0);
    int64_t run_id = job.Int(1);
    TLB_ASSIGN_OR_RETURN(
        Statement ins,
        db_->Prepare("INSERT OR IGNORE INTO samples(run_id, job_id, lease_id, seq, arm,"
                     " param_name, param_value, iteration, metric, series, value, unit, better,"
                     " agent_id, host, boot_id, kernel_release, kernel_cmdline, microarch,"
                     " ceiling_applied, ceiling) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
                     " ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)"));
    for (const v1::Sample& sm : batch.samples()) {
      ins.Bind(1, run_id)
          .Bind(2, job_id)
          .Bind(3, batch.lease_id())
          .Bind(4, static_cast<int64_t>(sm.seq()))
          .Bind(5, job.Text(2))
          .Bind(6, job.Text(3))
          .Bind(7, job.Text(4))
          .Bind(8, job.Int(5))
          .Bind(9, sm.metric())
          .Bind(10, sm.series())
          .Bind(11, sm.value())
          .Bind(12, sm.unit())
          .Bind(13, static_cast<int64_t>(sm.better()))
          .Bind(14, agent_id)
          .Bind(15, sm.host())
          .Bind(16, sm.boot_id())
          .Bind(17, sm.kernel_release())
          .Bind(18, sm.kernel_cmdline())
          .Bind(19, sm.microarch())
          .Bind(20, static_cast<int64_t>(sm.ceiling_applied()))
          .Bind(21, sm.ceiling_applied() ? std::optional<int64_t>(sm.ceiling()) : std::nullopt);
      TLB_RETURN_IF_ERROR(ins.Run());
      result.stored += static_cast<uint64_t>(db_->Changes());
      result.through_seq = std::max<uint64_t>(result.through_seq, sm.seq());
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return result;
}

absl::Status Store::FinishRunIfDoneLocked(int64_t run_id, int64_t now_ms,
                                          CompletionResult* result) {
  TLB_ASSIGN_OR_RETURN(v1::Run run, LoadRunLocked(run_id));
  const v1::JobCounts& c = run.jobs();
  if (run.state() != v1::RUN_STATE_RUNNING && run.state() != v1::RUN_STATE_QUEUED) return {};
  if (c.queued() + c.running() > 0) return absl::OkStatus();
  // A deferred run is done only once every slot has been expanded (and run).
  TLB_ASSIGN_OR_RETURN(Statement pending,
                       db_->Prepare("SELECT r.expand_on_bind, (SELECT COUNT(*) FROM slot_expansions"
                                    " e WHERE e.run_id = r.id) FROM runs r WHERE r.id = ?1"));
  pending.Bind(1, run_id);
  TLB_ASSIGN_OR_RETURN(bool has_run, pending.Step());
  if (has_run && pending.Int(0) != 0 &&
      pending.Int(1) < static_cast<int64_t>(run.spec().hosts().count())) {
    return absl::OkStatus();
  }
  const bool succeeded = c.succeeded() == c.total();
  // An adaptive run that has done its plan so far waits for the controller's decision:
  // extend it (ExtendRun) or stop it with a reason (FinishAdaptiveRun).
  if (succeeded && RunIsAdaptive(run.spec())) return absl::OkStatus();
  std::string state = succeeded ? "succeeded" : "failed";
  const std::string reason =
      succeeded ? absl::StrCat("planned: ", run.iterations_per_boot(), " iteration",
                               run.iterations_per_boot() == 1 ? "" : "s", " x ", run.boots(),
                               " boot", run.boots() == 1 ? "" : "s", " per arm, all done")
                : std::string();
  TLB_ASSIGN_OR_RETURN(Statement upd, db_->Prepare("UPDATE runs SET state = ?2, finished_ms = ?3,"
                                                   " stop_reason = ?4 WHERE id = ?1"));
  TLB_RETURN_IF_ERROR(upd.Bind(1, run_id).Bind(2, state).Bind(3, now_ms).Bind(4, reason).Run());
  result->run_finished = true;
  result->run_state = RunStateFromText(state);
  return absl::OkStatus();
}

absl::StatusOr<CompletionResult> Store::CompleteJob(const std::string& agent_id,
                                                    const v1::JobComplete& complete,
                                                    int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  CompletionResult result;
  absl::Status s = InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(Statement job,
                         db_->Prepare("SELECT id, run_id, agent_id, state, arm, param_name,"
                                      " param_value, iteration FROM jobs WHERE lease_id = ?1"));
    job.Bind(1, complete.lease_id());
    TLB_ASSIGN_OR_RETURN(bool found, job.Step());
    if (!found || job.Text(2) != agent_id) {
      result.rejected = true;
      result.reason =
          absl::StrCat("lease ", complete.lease_id(), " is not held by agent ", agent_id);
      return absl::OkStatus();
    }
    int64_t job_id = job.Int(0);
    int64_t run_id = job.Int(1);
    result.run_id = absl::StrCat(run_id);
    std::string state = job.Text(3);
    if (state != "leased") {
      // A replay of a completion we already recorded is fine; anything else is stale.
      if (state == "succeeded" || state == "failed" || state == "cancelled") return {};
      result.rejected = true;
      result.reason = absl::StrCat("lease ", complete.lease_id(), " is no longer active");
      return absl::OkStatus();
    }
    std::string where = absl::StrCat(
        "job ", job_id, " (arm ", job.Text(4), job.Text(5).empty() ? "" : ", ", job.Text(5),
        job.Text(5).empty() ? "" : "=", job.Text(6), ", iteration ", job.Int(7), ")");
    std::string new_state = "succeeded";
    std::string error;
    if (complete.status() == v1::JOB_STATUS_SUCCEEDED) {
      TLB_ASSIGN_OR_RETURN(Statement count,
                           db_->Prepare("SELECT COUNT(*) FROM samples WHERE lease_id = ?1"));
      count.Bind(1, complete.lease_id());
      TLB_ASSIGN_OR_RETURN(bool row, count.Step());
      uint64_t have = row ? static_cast<uint64_t>(count.Int(0)) : 0;
      if (have != complete.sample_count()) {
        new_state = "failed";
        error = absl::StrCat(where, ": agent reported ", complete.sample_count(),
                             " samples but the controller stored ", have);
      } else if (have == 0) {
        new_state = "failed";
        error = absl::StrCat(where, ": the workload produced no samples");
      }
    } else {
      new_state = complete.status() == v1::JOB_STATUS_CANCELLED ? "cancelled" : "failed";
      error = absl::StrCat(where, " ",
                           complete.status() == v1::JOB_STATUS_TIMED_OUT ? "timed out" : "failed",
                           ": ", complete.error());
    }
    TLB_ASSIGN_OR_RETURN(Statement upd,
                         db_->Prepare("UPDATE jobs SET state = ?2, error = ?3, finished_ms = ?4,"
                                      " lease_expires_ms = NULL WHERE id = ?1"));
    TLB_RETURN_IF_ERROR(
        upd.Bind(1, job_id).Bind(2, new_state).Bind(3, error).Bind(4, now_ms).Run());
    if (new_state == "failed") {
      TLB_RETURN_IF_ERROR(FailRunLocked(run_id, error, now_ms));
      result.run_finished = true;
      result.run_state = v1::RUN_STATE_FAILED;
      return absl::OkStatus();
    }
    return FinishRunIfDoneLocked(run_id, now_ms, &result);
  });
  if (!s.ok()) return s;
  return result;
}

absl::StatusOr<std::vector<ActiveRun>> Store::AdaptiveRunsAwaitingDecision() {
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(
      Statement q,
      db_->Prepare("SELECT r.id, r.spec, r.expand_on_bind, (SELECT COUNT(*) FROM slot_expansions"
                   "   e WHERE e.run_id = r.id)"
                   " FROM runs r WHERE r.state IN ('queued', 'running')"
                   " AND EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = r.id)"
                   " AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = r.id"
                   "   AND j.state <> 'succeeded')"
                   " ORDER BY r.id"));
  std::vector<ActiveRun> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    ActiveRun run;
    run.run_id = absl::StrCat(q.Int(0));
    run.spec.ParseFromString(q.Blob(1));
    if (!RunIsAdaptive(run.spec)) continue;
    // A deferred run still waiting for hosts to take (and expand) slots is not done yet.
    if (q.Int(2) != 0 && q.Int(3) < static_cast<int64_t>(run.spec.hosts().count())) continue;
    out.push_back(std::move(run));
  }
  return out;
}

namespace {

scheduler::JobPlan PlanFromAssignment(const v1::JobAssignment& a, uint32_t slot) {
  scheduler::JobPlan plan;
  plan.slot = slot;
  plan.arm = a.arm();
  plan.param_name = a.param_name();
  plan.param_value = a.param_value();
  plan.iteration = a.iteration();
  plan.boot = a.boot_index();
  plan.params.insert(a.params().begin(), a.params().end());
  plan.ceiling = a.ceiling();
  plan.monitors.assign(a.monitors().begin(), a.monitors().end());
  plan.timeout_seconds = a.timeout_seconds();
  return plan;
}

}  // namespace

absl::Status Store::ExtendRun(const std::string& run_id, const RunExtension& extension,
                              int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRunId(run_id));
  absl::MutexLock lock(&mu_);
  return InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(v1::Run run, LoadRunLocked(rid));
    if (run.state() != v1::RUN_STATE_QUEUED && run.state() != v1::RUN_STATE_RUNNING) {
      return absl::FailedPreconditionError(
          absl::StrCat("run ", run_id, " is ", v1::RunState_Name(run.state()),
                       "; only a queued or running run can be extended"));
    }
    const uint32_t per_boot = run.iterations_per_boot();
    const uint32_t boots = std::max<uint32_t>(run.boots(), 1);
    if (!extension.add_boot && extension.iterations_per_boot <= per_boot) {
      return absl::InvalidArgumentError(
          absl::StrCat("extension of run ", run_id, ": iterations_per_boot ",
                       extension.iterations_per_boot, " does not grow the plan (", per_boot, ")"));
    }
    // Templates: the first iteration of the first boot of every slot, in dispatch order.
    TLB_ASSIGN_OR_RETURN(Statement templates_q,
                         db_->Prepare("SELECT slot, assignment FROM jobs WHERE run_id = ?1"
                                      " AND boot_index = 0 AND iteration = 1 ORDER BY slot, id"));
    templates_q.Bind(1, rid);
    std::map<int64_t, std::vector<v1::JobAssignment>> by_slot;
    for (;;) {
      TLB_ASSIGN_OR_RETURN(bool row, templates_q.Step());
      if (!row) break;
      by_slot[templates_q.Int(0)].emplace_back().ParseFromString(templates_q.Blob(1));
    }
    std::vector<scheduler::JobPlan> jobs;
    for (const auto& [slot, templates] : by_slot) {
      // A new boot repeats the current iterations per boot; more iterations go to the latest
      // boot, which the host is still on (it reboots only for a new boot index).
      const uint32_t boot = extension.add_boot ? boots : boots - 1;
      const uint32_t first = extension.add_boot ? 1 : per_boot + 1;
      const uint32_t last = extension.add_boot ? per_boot : extension.iterations_per_boot;
      for (uint32_t iteration = first; iteration <= last; ++iteration) {
        for (const v1::JobAssignment& t : templates) {
          scheduler::JobPlan plan = PlanFromAssignment(t, static_cast<uint32_t>(slot));
          scheduler::RetargetJob(run.spec(), boot, iteration, &plan);
          jobs.push_back(std::move(plan));
        }
      }
    }
    if (jobs.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("run ", run_id, " has no jobs to repeat; it cannot be extended"));
    }
    TLB_RETURN_IF_ERROR(InsertJobsLocked(rid, run.spec(), jobs, -1));
    TLB_ASSIGN_OR_RETURN(
        Statement upd,
        db_->Prepare("UPDATE runs SET boots = ?2, iterations_per_boot = ?3,"
                     " adaptive_rounds = adaptive_rounds + 1, stop_reason = ?4 WHERE id = ?1"));
    return upd.Bind(1, rid)
        .Bind(2, static_cast<int64_t>(extension.add_boot ? boots + 1 : boots))
        .Bind(3,
              static_cast<int64_t>(extension.add_boot ? per_boot : extension.iterations_per_boot))
        .Bind(4, extension.note)
        .Run();
  });
}

absl::Status Store::FinishAdaptiveRun(const std::string& run_id, const std::string& reason,
                                      int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRunId(run_id));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement upd,
                       db_->Prepare("UPDATE runs SET state = 'succeeded', finished_ms = ?2,"
                                    " stop_reason = ?3 WHERE id = ?1"
                                    " AND state IN ('queued', 'running')"));
  return upd.Bind(1, rid).Bind(2, now_ms).Bind(3, reason).Run();
}

absl::StatusOr<std::vector<v1::Sample>> Store::GetSamples(const std::string& run_id) {
  TLB_ASSIGN_OR_RETURN(int64_t id, ParseRunId(run_id));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(v1::Run run, LoadRunLocked(id));
  TLB_ASSIGN_OR_RETURN(
      Statement stmt,
      db_->Prepare("SELECT job_id, lease_id, seq, arm, param_name, param_value, iteration,"
                   " metric, series, value, unit, better, host, agent_id, boot_id,"
                   " kernel_release, kernel_cmdline, microarch, ceiling_applied, ceiling"
                   " FROM samples WHERE run_id = ?1 ORDER BY job_id, seq"));
  stmt.Bind(1, id);
  std::vector<v1::Sample> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    v1::Sample& sm = out.emplace_back();
    sm.set_run_id(run.id());
    sm.set_job_id(stmt.Int(0));
    sm.set_lease_id(stmt.Text(1));
    sm.set_seq(static_cast<uint64_t>(stmt.Int(2)));
    sm.set_arm(stmt.Text(3));
    sm.set_param_name(stmt.Text(4));
    sm.set_param_value(stmt.Text(5));
    sm.set_iteration(static_cast<uint32_t>(stmt.Int(6)));
    sm.set_metric(stmt.Text(7));
    sm.set_series(stmt.Text(8));
    sm.set_value(stmt.Double(9));
    sm.set_unit(stmt.Text(10));
    sm.set_better(static_cast<v1::Better>(stmt.Int(11)));
    sm.set_host(stmt.Text(12));
    sm.set_agent_id(stmt.Text(13));
    sm.set_boot_id(stmt.Text(14));
    sm.set_kernel_release(stmt.Text(15));
    sm.set_kernel_cmdline(stmt.Text(16));
    sm.set_microarch(stmt.Text(17));
    sm.set_ceiling_applied(stmt.Int(18) != 0);
    if (!stmt.IsNull(19)) sm.set_ceiling(stmt.Int(19));
  }
  return out;
}

}  // namespace tlbfleet::store
