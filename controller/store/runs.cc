#include "controller/store/runs.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "controller/scheduler/run_spec.h"
#include "controller/store/builds.h"
#include "controller/store/events.h"
#include "controller/store/slots.h"

namespace tlbfleet::store::runs {

namespace {

constexpr char kRunColumns[] =
    "id, spec, state, error, created_ms, finished_ms, iterations_per_boot, boots,"
    " adaptive_rounds, stop_reason, jobs_total, jobs_queued, jobs_leased, jobs_succeeded,"
    " jobs_failed, jobs_cancelled, samples, adaptive_rows";

// A v1::Run from a row of kRunColumns.
absl::StatusOr<v1::Run> RunFromRow(const Statement& row) {
  v1::Run run;
  run.set_id(absl::StrCat(row.Int(0)));
  TLB_ASSIGN_OR_RETURN(*run.mutable_spec(),
                       ParseBlob<v1::RunSpec>(row, 1, absl::StrCat("run ", row.Int(0), " spec")));
  run.set_state(internal::RunStateFromText(row.Text(2)));
  run.set_error(row.Text(3));
  run.set_created_unix(row.Int(4) / 1000);
  if (!row.IsNull(5)) run.set_finished_unix(row.Int(5) / 1000);
  run.set_iterations_per_boot(static_cast<uint32_t>(row.Int(6)));
  run.set_boots(static_cast<uint32_t>(row.Int(7)));
  run.set_adaptive_rounds(static_cast<uint32_t>(row.Int(8)));
  run.set_stop_reason(row.Text(9));
  v1::JobCounts* jobs = run.mutable_jobs();
  jobs->set_total(static_cast<uint32_t>(row.Int(10)));
  jobs->set_queued(static_cast<uint32_t>(row.Int(11)));
  jobs->set_running(static_cast<uint32_t>(row.Int(12)));
  jobs->set_succeeded(static_cast<uint32_t>(row.Int(13)));
  jobs->set_failed(static_cast<uint32_t>(row.Int(14)));
  jobs->set_cancelled(static_cast<uint32_t>(row.Int(15)));
  run.set_samples(static_cast<uint64_t>(row.Int(16)));
  if (!row.IsNull(17)) {
    TLB_ASSIGN_OR_RETURN(
        v1::Run rows,
        ParseBlob<v1::Run>(row, 17, absl::StrCat("run ", row.Int(0), " adaptive_rows")));
    run.mutable_adaptive_rows()->Swap(rows.mutable_adaptive_rows());
    // A run that ended (stopped, failed, cancelled) measures nothing more, whatever its last
    // look said.
    if (run.state() != v1::RUN_STATE_QUEUED && run.state() != v1::RUN_STATE_RUNNING) {
      for (v1::AdaptiveRow& r : *run.mutable_adaptive_rows()) r.set_measuring(false);
    }
  }
  return run;
}

// runs.adaptive_rows: a Run holding only the rows (migration 18), or NULL for none.
void BindRows(Statement& q, int index, const std::vector<v1::AdaptiveRow>& rows) {
  if (rows.empty()) {
    q.BindNull(index);
    return;
  }
  v1::Run holder;
  for (const v1::AdaptiveRow& row : rows) *holder.add_adaptive_rows() = row;
  q.BindBlob(index, holder.SerializeAsString());
}

bool Active(v1::RunState state) {
  return state == v1::RUN_STATE_QUEUED || state == v1::RUN_STATE_RUNNING;
}

// Whether a run whose sweep depends on the host still has slots no host has expanded.
absl::StatusOr<bool> SlotsLeftToExpand(Database& db, int64_t run_id, const v1::RunSpec& spec) {
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare("SELECT r.expand_on_bind, (SELECT COUNT(*) FROM slot_expansions"
                                  " e WHERE e.run_id = r.id) FROM runs r WHERE r.id = ?1"));
  q.Bind(1, run_id);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  return row && q.Int(0) != 0 && q.Int(1) < static_cast<int64_t>(spec.hosts().count());
}

}  // namespace

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
  plan.boot_entry = a.boot_entry();
  plan.monitors.assign(a.monitors().begin(), a.monitors().end());
  plan.timeout_seconds = a.timeout_seconds();
  return plan;
}

absl::StatusOr<int64_t> Insert(Database& db, const v1::RunSpec& spec, const std::string& spec_yaml,
                               int64_t now_ms, bool expand_on_bind) {
  TLB_ASSIGN_OR_RETURN(Statement run,
                       db.Prepare("INSERT INTO runs(name, benchmark, spec, spec_yaml, state,"
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
  return db.LastInsertId();
}

absl::Status Submitted(Database& db, EventBatch& events, int64_t run_id, int64_t now_ms) {
  return events::Record(db, events,
                        events::StateChange(run_id, v1::RUN_STATE_QUEUED, "submitted", now_ms));
}

absl::Status InsertJobs(Database& db, int64_t run_id, const v1::RunSpec& spec,
                        const std::vector<scheduler::JobPlan>& jobs, int64_t slot) {
  TLB_ASSIGN_OR_RETURN(
      Statement job,
      db.Prepare("INSERT INTO jobs(run_id, slot, arm, param_name, param_value, iteration,"
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
    a.set_boot_entry(plan.boot_entry);
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

absl::StatusOr<v1::Run> Load(Database& db, int64_t run_id) {
  TLB_ASSIGN_OR_RETURN(
      Statement q, db.Prepare(absl::StrCat("SELECT ", kRunColumns, " FROM runs WHERE id = ?1")));
  q.Bind(1, run_id);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
  return RunFromRow(q);
}

absl::StatusOr<std::vector<v1::Run>> List(Database& db, uint32_t limit) {
  TLB_ASSIGN_OR_RETURN(
      Statement q,
      db.Prepare(absl::StrCat("SELECT ", kRunColumns, " FROM runs ORDER BY id DESC LIMIT ?1")));
  q.Bind(1, static_cast<int64_t>(limit == 0 ? 50 : limit));
  std::vector<v1::Run> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    TLB_ASSIGN_OR_RETURN(v1::Run run, RunFromRow(q));
    out.push_back(std::move(run));
  }
  return out;
}

namespace {

constexpr char kSlotsWithWork[] =
    "WITH RECURSIVE s(slot) AS (SELECT MIN(slot) FROM jobs WHERE run_id = ?1"
    " AND state = 'queued' UNION ALL SELECT (SELECT MIN(slot) FROM jobs WHERE run_id = ?1"
    " AND state = 'queued' AND slot > s.slot) FROM s WHERE s.slot IS NOT NULL)"
    " SELECT slot FROM s WHERE slot IS NOT NULL";

// The dispatch view of the run in `q`'s current row (id, spec, expand_on_bind, slot
// expansions): its bound slots (run_slots' key) and its slots with queued jobs (the partial
// indexes on queued jobs by slot); store_events_test checks both plans.
absl::StatusOr<ActiveRun> LoadActive(Database& db, const Statement& q) {
  TLB_ASSIGN_OR_RETURN(Statement slots_q,
                       db.Prepare("SELECT slot, agent_id, machine_id, hostname FROM run_slots"
                                  " WHERE run_id = ?1"));
  // The slots with queued jobs, one index seek per slot (a skip-scan): DISTINCT walked every
  // queued job of the run, ~10 ms for 100,000, and a busy run is read again many times a second.
  TLB_ASSIGN_OR_RETURN(Statement work_q, db.Prepare(kSlotsWithWork));
  ActiveRun r;
  const int64_t id = q.Int(0);
  r.run_id = absl::StrCat(id);
  TLB_ASSIGN_OR_RETURN(r.spec,
                       ParseBlob<v1::RunSpec>(q, 1, absl::StrCat("run ", r.run_id, " spec")));
  if (q.Int(2) != 0) {
    r.slots_to_expand = std::max<int64_t>(0, r.spec.hosts().count() - q.Int(3));
  }
  slots_q.Bind(1, id);
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool slot_row, slots_q.Step());
    if (!slot_row) break;
    r.slot_of[slots_q.Text(1)] = slots_q.Int(0);
    r.bound_slots.insert(slots_q.Int(0));
    r.holders[slots_q.Int(0)] = {slots_q.Text(1), slots_q.Text(2), slots_q.Text(3)};
  }
  work_q.Bind(1, id);
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool work_row, work_q.Step());
    if (!work_row) break;
    r.slots_with_work.insert(work_q.Int(0));
  }
  return r;
}

constexpr char kActiveColumns[] =
    "SELECT id, spec, expand_on_bind, (SELECT COUNT(*) FROM slot_expansions e"
    " WHERE e.run_id = runs.id) FROM runs";

}  // namespace

absl::StatusOr<std::vector<ActiveRun>> Active(Database& db) {
  TLB_ASSIGN_OR_RETURN(
      Statement q,
      db.Prepare(absl::StrCat(kActiveColumns, " WHERE state IN ('queued','running') ORDER BY id")));
  std::vector<ActiveRun> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    TLB_ASSIGN_OR_RETURN(ActiveRun r, LoadActive(db, q));
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<std::vector<ActiveRun>> ActiveAmong(Database& db,
                                                   const std::vector<int64_t>& run_ids) {
  TLB_ASSIGN_OR_RETURN(
      Statement q,
      db.Prepare(absl::StrCat(kActiveColumns, " WHERE id = ?1 AND state IN ('queued','running')")));
  std::vector<int64_t> ids = run_ids;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<ActiveRun> out;
  for (int64_t id : ids) {
    q.Bind(1, id);
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (row) {
      TLB_ASSIGN_OR_RETURN(ActiveRun r, LoadActive(db, q));
      out.push_back(std::move(r));
    }
    q.Reset();
  }
  return out;
}

absl::Status MarkRunning(Database& db, EventBatch& events, int64_t run_id, int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("UPDATE runs SET state = 'running'"
                                               " WHERE id = ?1 AND state = 'queued'"));
  TLB_RETURN_IF_ERROR(q.Bind(1, run_id).Run());
  if (db.Changes() == 0) return absl::OkStatus();
  return events::Record(db, events, events::StateChange(run_id, v1::RUN_STATE_RUNNING, "", now_ms));
}

absl::Status Fail(Database& db, EventBatch& events, int64_t run_id, const std::string& error,
                  int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(Statement run,
                       db.Prepare("UPDATE runs SET state = 'failed', error = ?2, finished_ms = ?3"
                                  " WHERE id = ?1 AND state IN ('queued', 'running')"));
  TLB_RETURN_IF_ERROR(run.Bind(1, run_id).Bind(2, error).Bind(3, now_ms).Run());
  if (db.Changes() == 0) return absl::OkStatus();
  TLB_ASSIGN_OR_RETURN(Statement jobs,
                       db.Prepare("UPDATE jobs SET state = 'cancelled', finished_ms = ?2"
                                  " WHERE run_id = ?1 AND state = 'queued'"));
  TLB_RETURN_IF_ERROR(jobs.Bind(1, run_id).Bind(2, now_ms).Run());
  TLB_RETURN_IF_ERROR(builds::CancelOfRun(db, events, run_id, "the run failed", now_ms).status());
  return events::Record(db, events,
                        events::StateChange(run_id, v1::RUN_STATE_FAILED, error, now_ms));
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> Cancel(Database& db,
                                                                        EventBatch& events,
                                                                        int64_t run_id,
                                                                        int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(v1::Run run, Load(db, run_id));
  std::vector<std::pair<std::string, std::string>> running;
  if (!Active(run.state())) return running;
  TLB_ASSIGN_OR_RETURN(Statement leased, db.Prepare("SELECT agent_id, lease_id FROM jobs"
                                                    " WHERE run_id = ?1 AND state = 'leased'"));
  leased.Bind(1, run_id);
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, leased.Step());
    if (!row) break;
    running.emplace_back(leased.Text(0), leased.Text(1));
  }
  TLB_ASSIGN_OR_RETURN(Statement jobs,
                       db.Prepare("UPDATE jobs SET state = 'cancelled', finished_ms = ?2"
                                  " WHERE run_id = ?1 AND state IN ('queued', 'leased')"));
  TLB_RETURN_IF_ERROR(jobs.Bind(1, run_id).Bind(2, now_ms).Run());
  TLB_ASSIGN_OR_RETURN(Statement upd,
                       db.Prepare("UPDATE runs SET state = 'cancelled', finished_ms = ?2,"
                                  " error = 'cancelled by user' WHERE id = ?1"));
  TLB_RETURN_IF_ERROR(upd.Bind(1, run_id).Bind(2, now_ms).Run());
  // Builders of the run's builds are told by the hub, which sees their runs end.
  TLB_RETURN_IF_ERROR(
      builds::CancelOfRun(db, events, run_id, "the run was cancelled", now_ms).status());
  TLB_RETURN_IF_ERROR(events::Record(
      db, events,
      events::StateChange(run_id, v1::RUN_STATE_CANCELLED, "cancelled by user", now_ms)));
  return running;
}

absl::Status FinishIfDone(Database& db, EventBatch& events, int64_t run_id, int64_t now_ms,
                          CompletionResult* result) {
  TLB_ASSIGN_OR_RETURN(v1::Run run, Load(db, run_id));
  const v1::JobCounts& c = run.jobs();
  if (!Active(run.state()) || c.queued() + c.running() > 0) return absl::OkStatus();
  // A deferred run is done only once every slot has been expanded (and run).
  TLB_ASSIGN_OR_RETURN(bool slots_left, SlotsLeftToExpand(db, run_id, run.spec()));
  if (slots_left) return absl::OkStatus();
  const bool succeeded = c.succeeded() == c.total();
  // An adaptive run that has done its plan so far waits for the controller's decision:
  // extend it (ExtendRun) or stop it with a reason (FinishAdaptiveRun).
  if (succeeded && scheduler::RunIsAdaptive(run.spec())) {
    result->awaiting_decision = true;
    return absl::OkStatus();
  }
  const std::string state = succeeded ? "succeeded" : "failed";
  std::string reason;
  if (succeeded) {
    TLB_ASSIGN_OR_RETURN(std::string not_as_planned, slots::DesignNote(db, run_id));
    reason = absl::StrCat("planned: ", run.iterations_per_boot(), " iteration",
                          run.iterations_per_boot() == 1 ? "" : "s", " x ", run.boots(), " boot",
                          run.boots() == 1 ? "" : "s", " per arm, all done", not_as_planned);
  }
  TLB_ASSIGN_OR_RETURN(Statement upd, db.Prepare("UPDATE runs SET state = ?2, finished_ms = ?3,"
                                                 " stop_reason = ?4 WHERE id = ?1"));
  TLB_RETURN_IF_ERROR(upd.Bind(1, run_id).Bind(2, state).Bind(3, now_ms).Bind(4, reason).Run());
  result->run_finished = true;
  result->run_state = internal::RunStateFromText(state);
  return events::Record(
      db, events,
      events::StateChange(run_id, result->run_state, succeeded ? reason : run.error(), now_ms));
}

absl::StatusOr<std::vector<ActiveRun>> AwaitingDecision(Database& db) {
  // The counters say which runs have done all their jobs; only those are read in full.
  TLB_ASSIGN_OR_RETURN(
      Statement q,
      db.Prepare("SELECT r.id, r.spec, r.expand_on_bind, (SELECT COUNT(*) FROM slot_expansions"
                 "   e WHERE e.run_id = r.id)"
                 " FROM runs r WHERE r.state IN ('queued', 'running') AND r.jobs_total > 0"
                 " AND r.jobs_succeeded = r.jobs_total ORDER BY r.id"));
  std::vector<ActiveRun> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    ActiveRun run;
    run.run_id = absl::StrCat(q.Int(0));
    TLB_ASSIGN_OR_RETURN(run.spec,
                         ParseBlob<v1::RunSpec>(q, 1, absl::StrCat("run ", run.run_id, " spec")));
    if (!scheduler::RunIsAdaptive(run.spec)) continue;
    // A deferred run still waiting for hosts to take (and expand) slots is not done yet.
    if (q.Int(2) != 0 && q.Int(3) < static_cast<int64_t>(run.spec.hosts().count())) continue;
    out.push_back(std::move(run));
  }
  return out;
}

absl::Status Extend(Database& db, EventBatch& events, int64_t run_id, const RunExtension& extension,
                    int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(v1::Run run, Load(db, run_id));
  if (!Active(run.state())) {
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
                       db.Prepare("SELECT slot, assignment, id FROM jobs WHERE run_id = ?1"
                                  " AND boot_index = 0 AND iteration = 1 AND abandoned = ''"
                                  " ORDER BY slot, id"));
  templates_q.Bind(1, run_id);
  std::map<int64_t, std::vector<v1::JobAssignment>> by_slot;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, templates_q.Step());
    if (!row) break;
    TLB_ASSIGN_OR_RETURN(
        v1::JobAssignment a,
        ParseBlob<v1::JobAssignment>(templates_q, 1,
                                     absl::StrCat("job ", templates_q.Int(2), " assignment")));
    // A (sweep value, arm) left out gets no more jobs; in a slot where none is left, the
    // host has nothing more of this run to do.
    if (extension.measured &&
        extension.measured->count({a.param_name(), a.param_value(), a.arm()}) == 0) {
      continue;
    }
    by_slot[templates_q.Int(0)].push_back(std::move(a));
  }
  std::vector<scheduler::JobPlan> jobs;
  // A new boot gets the iterations the extension asks for (0: the current count); more
  // iterations go to the latest boot, which the host is still on (it reboots only for a new
  // boot index).
  const uint32_t new_per_boot = extension.add_boot && extension.iterations_per_boot == 0
                                    ? per_boot
                                    : extension.iterations_per_boot;
  const uint32_t boot = extension.add_boot ? boots : boots - 1;
  const uint32_t first = extension.add_boot ? 1 : per_boot + 1;
  const uint32_t last = new_per_boot;
  for (const auto& [slot, templates] : by_slot) {
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
        absl::StrCat("run ", run_id, " has no jobs to repeat",
                     extension.measured ? absl::StrCat(" of the ", extension.measured->size(),
                                                       " (sweep value, arm) still measured")
                                        : "",
                     "; it cannot be extended"));
  }
  TLB_RETURN_IF_ERROR(InsertJobs(db, run_id, run.spec(), jobs, -1));
  const uint32_t new_boots = extension.add_boot ? boots + 1 : boots;
  TLB_ASSIGN_OR_RETURN(Statement upd,
                       db.Prepare("UPDATE runs SET boots = ?2, iterations_per_boot = ?3,"
                                  " adaptive_rounds = adaptive_rounds + 1, stop_reason = ?4,"
                                  " adaptive_rows = COALESCE(?5, adaptive_rows) WHERE id = ?1"));
  upd.Bind(1, run_id)
      .Bind(2, static_cast<int64_t>(new_boots))
      .Bind(3, static_cast<int64_t>(new_per_boot))
      .Bind(4, extension.note);
  BindRows(upd, 5, extension.rows);
  TLB_RETURN_IF_ERROR(upd.Run());
  v1::RunEvent event;
  event.set_run_id(absl::StrCat(run_id));
  event.set_time_unix_ms(now_ms);
  v1::AdaptiveRoundEvent* round = event.mutable_adaptive();
  round->set_round(run.adaptive_rounds() + 1);
  round->set_decision(extension.note);
  round->set_iterations_per_boot(new_per_boot);
  round->set_boots(new_boots);
  return events::Record(db, events, std::move(event));
}

absl::Status FinishAdaptive(Database& db, EventBatch& events, int64_t run_id,
                            const std::string& decision, int64_t now_ms,
                            const std::vector<v1::AdaptiveRow>& rows) {
  TLB_ASSIGN_OR_RETURN(std::string not_as_planned, slots::DesignNote(db, run_id));
  const std::string reason = absl::StrCat(decision, not_as_planned);
  TLB_ASSIGN_OR_RETURN(Statement upd,
                       db.Prepare("UPDATE runs SET state = 'succeeded', finished_ms = ?2,"
                                  " stop_reason = ?3, adaptive_rows = COALESCE(?4, adaptive_rows)"
                                  " WHERE id = ?1 AND state IN ('queued', 'running')"));
  upd.Bind(1, run_id).Bind(2, now_ms).Bind(3, reason);
  BindRows(upd, 4, rows);
  TLB_RETURN_IF_ERROR(upd.Run());
  if (db.Changes() == 0) return absl::OkStatus();
  return events::Record(db, events,
                        events::StateChange(run_id, v1::RUN_STATE_SUCCEEDED, reason, now_ms));
}

absl::StatusOr<StoreCounts> Counts(Database& db) {
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare("SELECT state, COUNT(*), SUM(jobs_queued), SUM(jobs_leased),"
                                  " SUM(jobs_succeeded), SUM(jobs_failed), SUM(jobs_cancelled)"
                                  " FROM runs GROUP BY state"));
  StoreCounts counts;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    const v1::RunState state = internal::RunStateFromText(q.Text(0));
    counts.runs[state] += static_cast<uint64_t>(q.Int(1));
    counts.jobs[v1::JOB_STATE_QUEUED] += static_cast<uint64_t>(q.Int(2));
    counts.jobs[v1::JOB_STATE_RUNNING] += static_cast<uint64_t>(q.Int(3));
    counts.jobs[v1::JOB_STATE_SUCCEEDED] += static_cast<uint64_t>(q.Int(4));
    counts.jobs[v1::JOB_STATE_FAILED] += static_cast<uint64_t>(q.Int(5));
    counts.jobs[v1::JOB_STATE_CANCELLED] += static_cast<uint64_t>(q.Int(6));
    if (Active(state)) counts.queued_jobs_of_active_runs += static_cast<uint64_t>(q.Int(2));
  }
  return counts;
}

}  // namespace tlbfleet::store::runs
