#include "controller/store/slots.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "controller/store/dispatch.h"
#include "controller/store/events.h"
#include "controller/store/runs.h"

namespace tlbfleet::store::slots {
namespace {

struct SlotJob {
  int64_t id = 0;
  std::string state;
  v1::JobAssignment assignment;
};

// The jobs of `slot` (of one boot index when `boot_index` >= 0) that still count, in dispatch
// order.
absl::StatusOr<std::vector<SlotJob>> CountingJobs(Database& db, int64_t run_id, int64_t slot,
                                                  int64_t boot_index) {
  TLB_ASSIGN_OR_RETURN(
      Statement q,
      db.Prepare("SELECT id, state, assignment FROM jobs WHERE run_id = ?1 AND slot = ?2"
                 " AND (?3 < 0 OR boot_index = ?3) AND abandoned = '' ORDER BY id"));
  q.Bind(1, run_id).Bind(2, slot).Bind(3, boot_index);
  std::vector<SlotJob> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    SlotJob job;
    job.id = q.Int(0);
    job.state = q.Text(1);
    TLB_ASSIGN_OR_RETURN(job.assignment, ParseBlob<v1::JobAssignment>(
                                             q, 2, absl::StrCat("job ", job.id, " assignment")));
    out.push_back(std::move(job));
  }
  return out;
}

absl::StatusOr<uint64_t> SamplesOfJob(Database& db, int64_t job_id) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("SELECT COUNT(*) FROM sample_values WHERE"
                                               " source_id IN (SELECT id FROM sample_sources"
                                               " WHERE job_id = ?1)"));
  q.Bind(1, job_id);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? static_cast<uint64_t>(q.Int(0)) : 0;
}

struct Abandoned {
  uint32_t jobs = 0;
  uint64_t samples = 0;
};

// Marks the finished jobs among `jobs` abandoned with `reason`. With `requeue`, the queued ones
// are replaced by copies of all of them, in their order, so that the work is measured again
// from its first job; without, the queued ones are only removed (a deferred run's slot, which
// the next host expands anew).
absl::StatusOr<Abandoned> AbandonJobs(Database& db, int64_t run_id, const v1::RunSpec& spec,
                                      int64_t slot, const std::vector<SlotJob>& jobs,
                                      const std::string& reason, bool requeue) {
  Abandoned out;
  TLB_ASSIGN_OR_RETURN(Statement mark, db.Prepare("UPDATE jobs SET abandoned = ?2 WHERE id = ?1"));
  TLB_ASSIGN_OR_RETURN(Statement drop, db.Prepare("DELETE FROM jobs WHERE id = ?1"
                                                  " AND state = 'queued'"));
  std::vector<scheduler::JobPlan> copies;
  for (const SlotJob& job : jobs) {
    if (job.state == "succeeded") {
      TLB_ASSIGN_OR_RETURN(uint64_t samples, SamplesOfJob(db, job.id));
      out.samples += samples;
      ++out.jobs;
      TLB_RETURN_IF_ERROR(mark.Bind(1, job.id).Bind(2, reason).Run());
      mark.Reset();
    } else if (job.state == "queued") {
      TLB_RETURN_IF_ERROR(drop.Bind(1, job.id).Run());
      drop.Reset();
    } else {
      // Leased jobs were taken back (queued) by the caller; failed or cancelled ones belong to
      // a run that has ended, which is never restarted.
      return absl::FailedPreconditionError(absl::StrCat("job ", job.id, " of run ", run_id, " is ",
                                                        job.state, "; cannot measure it again"));
    }
    if (requeue) copies.push_back(runs::PlanFromAssignment(job.assignment, slot));
  }
  if (!copies.empty()) TLB_RETURN_IF_ERROR(runs::InsertJobs(db, run_id, spec, copies, slot));
  return out;
}

absl::Status RecordAbandoned(Database& db, int64_t run_id, int64_t slot, int64_t boot_index,
                             const Binding& who, const std::string& boot_id, const Abandoned& what,
                             const std::string& reason, int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(
      Statement q,
      db.Prepare("INSERT INTO abandoned_work(run_id, slot, boot_index, agent_id, hostname,"
                 " machine_id, boot_id, jobs, samples, reason, time_ms)"
                 " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"));
  return q.Bind(1, run_id)
      .Bind(2, slot)
      .Bind(3, boot_index)
      .Bind(4, who.agent_id)
      .Bind(5, who.hostname)
      .Bind(6, who.machine_id)
      .Bind(7, boot_id)
      .Bind(8, static_cast<int64_t>(what.jobs))
      .Bind(9, static_cast<int64_t>(what.samples))
      .Bind(10, reason)
      .Bind(11, now_ms)
      .Run();
}

absl::Status RecordSlotEvent(Database& db, EventBatch& events, int64_t run_id,
                             v1::SlotHostEvent::Kind kind, int64_t slot, int64_t boot_index,
                             const Binding& who, const std::string& message, int64_t now_ms) {
  v1::RunEvent event;
  event.set_run_id(absl::StrCat(run_id));
  event.set_time_unix_ms(now_ms);
  v1::SlotHostEvent* e = event.mutable_slot_host();
  e->set_kind(kind);
  e->set_slot(static_cast<uint32_t>(slot));
  e->set_agent_id(who.agent_id);
  e->set_hostname(who.hostname);
  e->set_machine_id(who.machine_id);
  e->set_boot_index(static_cast<int32_t>(boot_index));
  e->set_message(message);
  return events::Record(db, events, std::move(event));
}

absl::StatusOr<v1::RunSpec> SpecOf(Database& db, int64_t run_id, bool* deferred, bool* active) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("SELECT spec, expand_on_bind, state FROM runs"
                                               " WHERE id = ?1"));
  q.Bind(1, run_id);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
  *deferred = q.Int(1) != 0;
  *active = q.Text(2) == "queued" || q.Text(2) == "running";
  return ParseBlob<v1::RunSpec>(q, 0, absl::StrCat("run ", run_id, " spec"));
}

}  // namespace

absl::StatusOr<std::optional<Binding>> BindingOf(Database& db, int64_t run_id, int64_t slot) {
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare("SELECT agent_id, machine_id, hostname FROM run_slots"
                                  " WHERE run_id = ?1 AND slot = ?2"));
  q.Bind(1, run_id).Bind(2, slot);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return std::optional<Binding>();
  return std::optional<Binding>(Binding{slot, q.Text(0), q.Text(1), q.Text(2)});
}

absl::Status RepeatBoot(Database& db, EventBatch& events, int64_t run_id, const v1::RunSpec& spec,
                        int64_t slot, int64_t boot_index, const std::string& old_boot,
                        const std::string& new_boot, int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(std::vector<SlotJob> jobs, CountingJobs(db, run_id, slot, boot_index));
  size_t finished = 0;
  for (const SlotJob& job : jobs) finished += job.state == "succeeded" ? 1 : 0;
  if (finished == 0) return absl::OkStatus();  // nothing of it was measured on the old boot
  TLB_ASSIGN_OR_RETURN(std::optional<Binding> who, BindingOf(db, run_id, slot));
  const Binding host = who.value_or(Binding{slot, "", "", ""});
  const std::string name = host.hostname.empty() ? host.agent_id : host.hostname;
  const std::string reason =
      absl::StrCat("boot ", boot_index + 1, " of slot ", slot, " (", name, ") ended after ",
                   finished, " of ", jobs.size(), " jobs (boot_id ", old_boot,
                   ": an unplanned reboot or reset); measured again on boot_id ", new_boot);
  TLB_ASSIGN_OR_RETURN(Abandoned what,
                       AbandonJobs(db, run_id, spec, slot, jobs, reason, /*requeue=*/true));
  TLB_RETURN_IF_ERROR(
      RecordAbandoned(db, run_id, slot, boot_index, host, old_boot, what, reason, now_ms));
  return RecordSlotEvent(db, events, run_id, v1::SlotHostEvent::KIND_BOOT_REPEATED, slot,
                         boot_index, host, reason, now_ms);
}

absl::StatusOr<SlotRestart> Restart(Database& db, EventBatch& events, int64_t run_id, int64_t slot,
                                    const std::string& agent_id, const std::string& reason,
                                    int64_t now_ms) {
  SlotRestart out;
  bool deferred = false, active = false;
  TLB_ASSIGN_OR_RETURN(v1::RunSpec spec, SpecOf(db, run_id, &deferred, &active));
  TLB_ASSIGN_OR_RETURN(std::optional<Binding> who, BindingOf(db, run_id, slot));
  // Already restarted (a second decision on a stale view), or the run ended meanwhile.
  if (!active || !who.has_value() || who->agent_id != agent_id) return out;
  // The lost host's lease (if it still has one) goes back first: its partial samples are
  // discarded like any expired attempt's, and the job is measured again with the rest.
  TLB_ASSIGN_OR_RETURN(std::vector<dispatch::HeldJob> held, dispatch::HeldJobs(db, agent_id));
  for (const dispatch::HeldJob& job : held) {
    if (job.run_id != run_id) continue;
    dispatch::Requeue how;
    how.why = absl::StrCat("slot ", slot, " restarted");
    how.count_attempt = false;
    TLB_RETURN_IF_ERROR(dispatch::TakeBack(db, events, job, how, now_ms, 1).status());
  }
  TLB_ASSIGN_OR_RETURN(std::vector<SlotJob> jobs, CountingJobs(db, run_id, slot, -1));
  TLB_ASSIGN_OR_RETURN(Abandoned what,
                       AbandonJobs(db, run_id, spec, slot, jobs, reason, /*requeue=*/!deferred));
  // The slot is free again: the next eligible host takes it from its first job, on a fresh
  // boot plan; a deferred run's slot is expanded anew for that host.
  for (const char* sql : {"DELETE FROM run_slots WHERE run_id = ?1 AND slot = ?2",
                          "DELETE FROM slot_boots WHERE run_id = ?1 AND slot = ?2",
                          "DELETE FROM slot_boot_requests WHERE run_id = ?1 AND slot = ?2"}) {
    TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare(sql));
    TLB_RETURN_IF_ERROR(q.Bind(1, run_id).Bind(2, slot).Run());
  }
  if (deferred) {
    TLB_ASSIGN_OR_RETURN(Statement q,
                         db.Prepare("DELETE FROM slot_expansions WHERE run_id = ?1 AND slot = ?2"));
    TLB_RETURN_IF_ERROR(q.Bind(1, run_id).Bind(2, slot).Run());
  }
  TLB_RETURN_IF_ERROR(RecordAbandoned(db, run_id, slot, -1, *who, "", what, reason, now_ms));
  TLB_RETURN_IF_ERROR(RecordSlotEvent(db, events, run_id, v1::SlotHostEvent::KIND_RESTARTED, slot,
                                      -1, *who, reason, now_ms));
  out.restarted = true;
  out.jobs = what.jobs;
  out.samples = what.samples;
  return out;
}

absl::StatusOr<SlotProgress> Progress(Database& db, int64_t run_id, int64_t slot) {
  TLB_ASSIGN_OR_RETURN(
      Statement q, db.Prepare("SELECT COUNT(*), SUM(state = 'succeeded'),"
                              " COUNT(DISTINCT CASE WHEN state = 'succeeded' THEN boot_index END)"
                              " FROM jobs WHERE run_id = ?1 AND slot = ?2 AND abandoned = ''"));
  q.Bind(1, run_id).Bind(2, slot);
  SlotProgress out;
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return out;
  out.jobs_total = static_cast<uint32_t>(q.Int(0));
  out.jobs_done = q.IsNull(1) ? 0 : static_cast<uint32_t>(q.Int(1));
  out.boots_touched = static_cast<uint32_t>(q.Int(2));
  TLB_ASSIGN_OR_RETURN(
      Statement s,
      db.Prepare("SELECT COUNT(*) FROM sample_values WHERE source_id IN (SELECT src.id FROM"
                 " sample_sources src JOIN jobs j ON j.id = src.job_id WHERE src.run_id = ?1"
                 " AND j.slot = ?2 AND j.abandoned = '')"));
  s.Bind(1, run_id).Bind(2, slot);
  TLB_ASSIGN_OR_RETURN(bool counted, s.Step());
  if (counted) out.samples = static_cast<uint64_t>(s.Int(0));
  return out;
}

absl::Status LoadAbandoned(Database& db, int64_t run_id, v1::Run* run) {
  TLB_ASSIGN_OR_RETURN(
      Statement q,
      db.Prepare("SELECT slot, boot_index, agent_id, hostname, machine_id, boot_id, jobs,"
                 " samples, reason, time_ms FROM abandoned_work WHERE run_id = ?1 ORDER BY id"));
  q.Bind(1, run_id);
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    v1::AbandonedWork* w = run->add_abandoned();
    w->set_slot(static_cast<uint32_t>(q.Int(0)));
    w->set_boot_index(static_cast<int32_t>(q.Int(1)));
    w->set_agent_id(q.Text(2));
    w->set_hostname(q.Text(3));
    w->set_machine_id(q.Text(4));
    w->set_boot_id(q.Text(5));
    w->set_jobs(static_cast<uint32_t>(q.Int(6)));
    w->set_samples(static_cast<uint64_t>(q.Int(7)));
    w->set_reason(q.Text(8));
    w->set_time_unix_ms(q.Int(9));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> DesignNote(Database& db, int64_t run_id) {
  v1::Run run;
  TLB_RETURN_IF_ERROR(LoadAbandoned(db, run_id, &run));
  if (run.abandoned().empty()) return std::string();
  std::vector<std::string> parts;
  for (const v1::AbandonedWork& w : run.abandoned()) {
    const std::string host = absl::StrCat(w.hostname().empty() ? w.agent_id() : w.hostname(),
                                          " (agent ", w.agent_id(), ")");
    if (w.boot_index() < 0) {
      parts.push_back(absl::StrCat("slot ", w.slot(), " measured again from its first job after ",
                                   host, " was lost (", w.jobs(), " jobs, ", w.samples(),
                                   " samples kept, left out)"));
    } else {
      parts.push_back(absl::StrCat("boot ", w.boot_index() + 1, " of slot ", w.slot(), " on ", host,
                                   " measured again after an unplanned reboot (", w.jobs(),
                                   " jobs, ", w.samples(), " samples kept, left out)"));
    }
  }
  return absl::StrCat("; not as planned: ", absl::StrJoin(parts, "; "));
}

}  // namespace tlbfleet::store::slots
