#include "controller/store/agents.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "controller/store/dispatch.h"

namespace tlbfleet::store::agents {

absl::Status Register(Database& db, const std::string& agent_id, const v1::HostInfo& info,
                      const std::string& principal, int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(Statement bound,
                       db.Prepare("SELECT principal FROM hosts WHERE agent_id = ?1"));
  bound.Bind(1, agent_id);
  TLB_ASSIGN_OR_RETURN(bool known, bound.Step());
  const std::string owner = known ? bound.Text(0) : "";
  if (!principal.empty() && !owner.empty() && owner != principal) {
    return absl::PermissionDeniedError(absl::StrCat("agent id ", agent_id,
                                                    " belongs to principal \"", owner, "\"; \"",
                                                    principal, "\" may not register it"));
  }
  TLB_ASSIGN_OR_RETURN(
      Statement upsert,
      db.Prepare("INSERT INTO hosts(agent_id, hostname, info, first_seen_ms, last_seen_ms,"
                 " principal) VALUES(?1, ?2, ?3, ?4, ?4, ?5)"
                 " ON CONFLICT(agent_id) DO UPDATE SET hostname = ?2, info = ?3,"
                 " last_seen_ms = ?4, principal = CASE WHEN principal = '' THEN ?5"
                 " ELSE principal END"));
  return upsert.Bind(1, agent_id)
      .Bind(2, info.hostname())
      .BindBlob(3, info.SerializeAsString())
      .Bind(4, now_ms)
      .Bind(5, principal)
      .Run();
}

absl::StatusOr<Reconciled> Reconcile(Database& db, EventBatch& events, const std::string& agent_id,
                                     const AgentReport& report, int64_t now_ms, int64_t lease_ms,
                                     int max_attempts) {
  Reconciled out;
  TLB_ASSIGN_OR_RETURN(std::vector<dispatch::HeldJob> held, dispatch::HeldJobs(db, agent_id));
  for (const dispatch::HeldJob& job : held) {
    const bool running = !report.running_lease.empty() && job.lease_id == report.running_lease;
    const bool spooled = std::find(report.spooled.begin(), report.spooled.end(), job.lease_id) !=
                         report.spooled.end();
    if (running || spooled) {
      // Still the agent's: kept alive until its heartbeats (or its replayed result) take over.
      TLB_ASSIGN_OR_RETURN(bool renewed,
                           dispatch::Renew(db, job.lease_id, agent_id, now_ms, lease_ms));
      if (!renewed) continue;
      if (running) {
        out.running_lease = job.lease_id;
      } else {
        out.renewed.push_back(job.lease_id);
      }
      continue;
    }
    // Neither running nor finished on the agent: it restarted mid-job (or never got the
    // assignment). Its slot stays its own: it is back.
    dispatch::Requeue how;
    how.why = absl::StrCat("agent ", agent_id, " came back without lease ", job.lease_id,
                           " (restarted mid-job?)");
    TLB_ASSIGN_OR_RETURN(ExpiredLease e,
                         dispatch::TakeBack(db, events, job, how, now_ms, max_attempts));
    out.released.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<std::vector<StoredHost>> List(Database& db) {
  // With the job each host holds a lease for (one at most; the lowest id should a fault ever
  // leave two), through the partial index jobs_leased_by_agent.
  TLB_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("SELECT h.agent_id, h.info, h.first_seen_ms, h.last_seen_ms, h.principal,"
                 " j.lease_id, j.run_id, j.id, r.benchmark, j.arm, j.iteration"
                 " FROM hosts h"
                 " LEFT JOIN jobs j ON j.id = (SELECT id FROM jobs WHERE agent_id = h.agent_id"
                 "   AND state = 'leased' ORDER BY id LIMIT 1)"
                 " LEFT JOIN runs r ON r.id = j.run_id"
                 " ORDER BY h.hostname, h.agent_id"));
  std::vector<StoredHost> hosts;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    StoredHost h;
    h.agent_id = stmt.Text(0);
    TLB_ASSIGN_OR_RETURN(h.info,
                         ParseBlob<v1::HostInfo>(stmt, 1, absl::StrCat("host ", h.agent_id)));
    h.first_seen_ms = stmt.Int(2);
    h.last_seen_ms = stmt.Int(3);
    h.principal = stmt.Text(4);
    if (!stmt.IsNull(5)) {
      h.lease_id = stmt.Text(5);
      h.lease_run_id = absl::StrCat(stmt.Int(6));
      h.lease_job_id = absl::StrCat(stmt.Int(7));
      h.lease_benchmark = stmt.Text(8);
      h.lease_arm = stmt.Text(9);
      h.lease_iteration = stmt.Int(10);
    }
    hosts.push_back(std::move(h));
  }
  return hosts;
}

absl::Status SaveReboot(Database& db, const RebootRecord& r) {
  TLB_ASSIGN_OR_RETURN(int64_t run_id, ParseRunId(r.run_id));
  TLB_ASSIGN_OR_RETURN(
      Statement q,
      db.Prepare("INSERT OR REPLACE INTO reboot_requests(agent_id, run_id, boot_id, times,"
                 " pending, requested_ms, deadline_ms, return_by_ms)"
                 " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
  return q.Bind(1, r.agent_id)
      .Bind(2, run_id)
      .Bind(3, r.boot_id)
      .Bind(4, static_cast<int64_t>(r.times))
      .Bind(5, static_cast<int64_t>(r.pending ? 1 : 0))
      .Bind(6, r.requested_ms)
      .Bind(7, r.deadline_ms)
      .Bind(8, r.return_by_ms)
      .Run();
}

absl::Status DeleteReboot(Database& db, const std::string& agent_id) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("DELETE FROM reboot_requests WHERE agent_id = ?1"));
  return q.Bind(1, agent_id).Run();
}

absl::StatusOr<std::vector<RebootRecord>> Reboots(Database& db) {
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare("SELECT agent_id, run_id, boot_id, times, pending, requested_ms,"
                                  " deadline_ms, return_by_ms FROM reboot_requests"
                                  " ORDER BY agent_id"));
  std::vector<RebootRecord> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    RebootRecord r;
    r.agent_id = q.Text(0);
    r.run_id = absl::StrCat(q.Int(1));
    r.boot_id = q.Text(2);
    r.times = static_cast<int>(q.Int(3));
    r.pending = q.Int(4) != 0;
    r.requested_ms = q.Int(5);
    r.deadline_ms = q.Int(6);
    r.return_by_ms = q.Int(7);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace tlbfleet::store::agents
