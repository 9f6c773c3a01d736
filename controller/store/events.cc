#include "controller/store/events.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tlbfleet::store::events {

absl::Status Record(Database& db, EventBatch& batch, v1::RunEvent event) {
  int64_t run_id = 0;
  if (!absl::SimpleAtoi(event.run_id(), &run_id)) {
    return absl::InternalError(absl::StrCat("run event for run \"", event.run_id(), "\""));
  }
  TLB_ASSIGN_OR_RETURN(Statement counts,
                       db.Prepare("SELECT jobs_total, jobs_queued, jobs_leased, jobs_succeeded,"
                                  " jobs_failed, jobs_cancelled, samples FROM runs WHERE id = ?1"));
  counts.Bind(1, run_id);
  TLB_ASSIGN_OR_RETURN(bool found, counts.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
  v1::JobCounts* jobs = event.mutable_jobs();
  jobs->set_total(static_cast<uint32_t>(counts.Int(0)));
  jobs->set_queued(static_cast<uint32_t>(counts.Int(1)));
  jobs->set_running(static_cast<uint32_t>(counts.Int(2)));
  jobs->set_succeeded(static_cast<uint32_t>(counts.Int(3)));
  jobs->set_failed(static_cast<uint32_t>(counts.Int(4)));
  jobs->set_cancelled(static_cast<uint32_t>(counts.Int(5)));
  event.set_samples(static_cast<uint64_t>(counts.Int(6)));
  event.clear_id();
  TLB_ASSIGN_OR_RETURN(
      Statement insert,
      db.Prepare("INSERT INTO run_events(run_id, time_ms, event) VALUES(?1, ?2, ?3)"));
  TLB_RETURN_IF_ERROR(insert.Bind(1, run_id)
                          .Bind(2, event.time_unix_ms())
                          .BindBlob(3, event.SerializeAsString())
                          .Run());
  event.set_id(static_cast<uint64_t>(db.LastInsertId()));
  batch.push_back(std::move(event));
  return absl::OkStatus();
}

v1::RunEvent StateChange(int64_t run_id, v1::RunState state, std::string reason, int64_t now_ms) {
  v1::RunEvent event;
  event.set_run_id(absl::StrCat(run_id));
  event.set_time_unix_ms(now_ms);
  event.mutable_state()->set_state(state);
  event.mutable_state()->set_reason(std::move(reason));
  return event;
}

absl::StatusOr<v1::RunEvent> ForJob(Database& db, int64_t job_id, v1::JobState state,
                                    int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(
      Statement q,
      db.Prepare("SELECT j.run_id, j.arm, j.param_name, j.param_value, j.iteration, j.boot_index,"
                 " j.lease_id, j.agent_id, h.hostname FROM jobs j"
                 " LEFT JOIN hosts h ON h.agent_id = j.agent_id WHERE j.id = ?1"));
  q.Bind(1, job_id);
  TLB_ASSIGN_OR_RETURN(bool found, q.Step());
  if (!found) return absl::NotFoundError(absl::StrCat("job ", job_id, " not found"));
  v1::RunEvent event;
  event.set_run_id(absl::StrCat(q.Int(0)));
  event.set_time_unix_ms(now_ms);
  v1::JobEvent* job = event.mutable_job();
  job->set_job_id(job_id);
  job->set_state(state);
  job->set_arm(q.Text(1));
  job->set_param_name(q.Text(2));
  job->set_param_value(q.Text(3));
  job->set_iteration(static_cast<uint32_t>(q.Int(4)));
  job->set_boot_index(static_cast<uint32_t>(q.Int(5)));
  job->set_lease_id(q.Text(6));
  job->set_agent_id(q.Text(7));
  job->set_hostname(q.Text(8));
  return event;
}

absl::StatusOr<std::vector<v1::RunEvent>> Since(Database& db, int64_t run_id, uint64_t after_id,
                                                uint32_t limit) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("SELECT id, event FROM run_events WHERE run_id = ?1"
                                               " AND id > ?2 ORDER BY id LIMIT ?3"));
  q.Bind(1, run_id).Bind(2, static_cast<int64_t>(after_id)).Bind(3, static_cast<int64_t>(limit));
  std::vector<v1::RunEvent> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    TLB_ASSIGN_OR_RETURN(v1::RunEvent event,
                         ParseBlob<v1::RunEvent>(q, 1, absl::StrCat("run event ", q.Int(0))));
    event.set_id(static_cast<uint64_t>(q.Int(0)));
    out.push_back(std::move(event));
  }
  return out;
}

}  // namespace tlbfleet::store::events
