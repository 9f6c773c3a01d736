#include "controller/store/results.h"

#include <algorithm>
#include <array>
#include <optional>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "controller/scheduler/ceiling_check.h"
#include "controller/store/dispatch.h"
#include "controller/store/events.h"
#include "controller/store/runs.h"

namespace tlbfleet::store::results {
namespace {

// Why the stored samples of `lease_id` do not show the ceiling the job's arm asked for, or ""
// (scheduler/ceiling_check.h). `job` is the row Complete() read; column 10 its assignment.
absl::StatusOr<std::string> CeilingMismatch(Database& db, const std::string& lease_id,
                                            const Statement& job) {
  TLB_ASSIGN_OR_RETURN(
      v1::JobAssignment assignment,
      ParseBlob<v1::JobAssignment>(job, 10, absl::StrCat("job ", job.Int(0), " assignment")));
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare("SELECT seq, ceiling_applied, ceiling FROM samples"
                                  " WHERE job_id = ?2 AND lease_id = ?1 ORDER BY seq"));
  q.Bind(1, lease_id).Bind(2, job.Int(0));
  std::vector<scheduler::SampleCeiling> samples;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    samples.push_back(
        {static_cast<uint64_t>(q.Int(0)), q.Int(1) != 0, !q.IsNull(2), q.IsNull(2) ? 0 : q.Int(2)});
  }
  absl::Status s = scheduler::CheckJobCeilings(assignment.arm(), assignment.ceiling(), samples);
  return s.ok() ? std::string() : std::string(s.message());
}

// What every sample of one lease shares, from the job row Ingest() read (columns 2-5: arm,
// parameter name and value, iteration).
struct LeaseOfSamples {
  int64_t job_id;
  int64_t run_id;
  const std::string* lease_id;
  const std::string* agent_id;
  const Statement* job;
};

// A sample's provenance: its own fields, or where one is empty the batch's shared origin
// (SampleBatch.shared_origin, agent.proto).
struct Origin {
  Origin(const v1::Sample& s, const v1::SampleOrigin& shared)
      : host(Pick(s.host(), shared.host())),
        boot_id(Pick(s.boot_id(), shared.boot_id())),
        kernel_release(Pick(s.kernel_release(), shared.kernel_release())),
        kernel_cmdline(Pick(s.kernel_cmdline(), shared.kernel_cmdline())),
        microarch(Pick(s.microarch(), shared.microarch())),
        peer_host(Pick(s.peer_host(), shared.peer_host())),
        boot_entry(Pick(s.boot_entry(), shared.boot_entry())) {}
  // Binds the seven fields, in the order above, to `stmt`'s parameters from `first` on. Not
  // copied: they point into the batch, which outlives the statement's run.
  void BindTo(Statement& stmt, int first) const {
    for (const std::string* field :
         {host, boot_id, kernel_release, kernel_cmdline, microarch, peer_host, boot_entry}) {
      stmt.BindUncopied(first++, *field);
    }
  }
  static const std::string* Pick(const std::string& own, const std::string& shared) {
    return own.empty() ? &shared : &own;
  }
  bool operator==(const Origin& o) const {
    return *host == *o.host && *boot_id == *o.boot_id && *kernel_release == *o.kernel_release &&
           *kernel_cmdline == *o.kernel_cmdline && *microarch == *o.microarch &&
           *peer_host == *o.peer_host && *boot_entry == *o.boot_entry;
  }

  const std::string* host;
  const std::string* boot_id;
  const std::string* kernel_release;
  const std::string* kernel_cmdline;
  const std::string* microarch;
  const std::string* peer_host;
  const std::string* boot_entry;
};

// The sample_sources row of `lease`'s samples taken at `origin` (migration 14), created on
// its first sample.
absl::StatusOr<int64_t> SourceId(Database& db, const LeaseOfSamples& lease, const Origin& origin) {
  TLB_ASSIGN_OR_RETURN(
      Statement find, db.Prepare("SELECT id FROM sample_sources WHERE job_id = ?1 AND lease_id = ?2"
                                 " AND host = ?3 AND boot_id = ?4 AND kernel_release = ?5"
                                 " AND kernel_cmdline = ?6 AND microarch = ?7 AND peer_host = ?8"
                                 " AND boot_entry = ?9"));
  find.Bind(1, lease.job_id).BindUncopied(2, *lease.lease_id);
  origin.BindTo(find, 3);
  TLB_ASSIGN_OR_RETURN(bool found, find.Step());
  if (found) return find.Int(0);
  TLB_ASSIGN_OR_RETURN(
      Statement add,
      db.Prepare("INSERT INTO sample_sources(run_id, job_id, lease_id, arm, param_name,"
                 " param_value, iteration, agent_id, host, boot_id, kernel_release,"
                 " kernel_cmdline, microarch, peer_host, boot_entry) VALUES(?1, ?2, ?3, ?4, ?5,"
                 " ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"));
  const Statement& job = *lease.job;
  add.Bind(1, lease.run_id)
      .Bind(2, lease.job_id)
      .Bind(3, *lease.lease_id)
      .Bind(4, job.Text(2))
      .Bind(5, job.Text(3))
      .Bind(6, job.Text(4))
      .Bind(7, job.Int(5))
      .Bind(8, *lease.agent_id);
  origin.BindTo(add, 9);
  TLB_RETURN_IF_ERROR(add.Run());
  return db.LastInsertId();
}

}  // namespace

absl::StatusOr<IngestResult> Ingest(Database& db, const std::string& agent_id,
                                    const v1::SampleBatch& batch, int64_t renew_until_ms) {
  IngestResult result;
  TLB_ASSIGN_OR_RETURN(Statement job,
                       db.Prepare("SELECT id, run_id, arm, param_name, param_value, iteration,"
                                  " agent_id, state FROM jobs WHERE lease_id = ?1"));
  job.Bind(1, batch.lease_id());
  TLB_ASSIGN_OR_RETURN(bool found, job.Step());
  if (!found || job.Text(6) != agent_id ||
      (job.Text(7) != "leased" && job.Text(7) != "succeeded")) {
    result.rejected = true;
    result.reason = found ? absl::StrCat("lease ", batch.lease_id(), " is not held by agent ",
                                         agent_id, " (job state ", job.Text(7), ")")
                          : absl::StrCat("unknown lease ", batch.lease_id());
    return result;
  }
  const int64_t job_id = job.Int(0);
  const int64_t run_id = job.Int(1);
  TLB_ASSIGN_OR_RETURN(
      Statement ins,
      db.Prepare("INSERT OR IGNORE INTO sample_values(source_id, seq, metric, series, value,"
                 " unit, better, ceiling_applied, ceiling, ceiling_observed)"
                 " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
  const LeaseOfSamples lease{job_id, run_id, &batch.lease_id(), &agent_id, &job};
  // A lease's samples normally share one source; it is looked up again only when the
  // provenance changes from one sample to the next.
  std::optional<Origin> source_origin;
  int64_t source_id = 0;
  for (const v1::Sample& sm : batch.samples()) {
    const Origin origin(sm, batch.shared_origin());
    if (!source_origin.has_value() || !(origin == *source_origin)) {
      TLB_ASSIGN_OR_RETURN(source_id, SourceId(db, lease, origin));
      source_origin = origin;
    }
    // Text is bound uncopied: `batch` outlives every insert.
    ins.Bind(1, source_id)
        .Bind(2, static_cast<int64_t>(sm.seq()))
        .BindUncopied(3, sm.metric())
        .BindUncopied(4, sm.series())
        .Bind(5, sm.value())
        .BindUncopied(6, sm.unit())
        .Bind(7, static_cast<int64_t>(sm.better()))
        .Bind(8, static_cast<int64_t>(sm.ceiling_applied()))
        .Bind(9, sm.ceiling_applied() || sm.ceiling_observed()
                     ? std::optional<int64_t>(sm.ceiling())
                     : std::nullopt)
        .Bind(10, static_cast<int64_t>(sm.ceiling_observed()));
    TLB_RETURN_IF_ERROR(ins.Run());
    result.stored += static_cast<uint64_t>(db.Changes());
    result.through_seq = std::max<uint64_t>(result.through_seq, sm.seq());
  }
  if (result.stored > 0) {
    TLB_ASSIGN_OR_RETURN(Statement count,
                         db.Prepare("UPDATE runs SET samples = samples + ?2 WHERE id = ?1"));
    TLB_RETURN_IF_ERROR(count.Bind(1, run_id).Bind(2, static_cast<int64_t>(result.stored)).Run());
  }
  if (renew_until_ms > 0 && job.Text(7) == "leased") {
    // Samples arriving are as good as a heartbeat.
    TLB_ASSIGN_OR_RETURN(Statement renew,
                         db.Prepare("UPDATE jobs SET lease_expires_ms = MAX(lease_expires_ms, ?2)"
                                    " WHERE id = ?1"));
    TLB_RETURN_IF_ERROR(renew.Bind(1, job_id).Bind(2, renew_until_ms).Run());
  }
  return result;
}

absl::StatusOr<CompletionResult> Complete(Database& db, EventBatch& events,
                                          const std::string& agent_id,
                                          const v1::JobComplete& complete, int64_t now_ms,
                                          int max_attempts) {
  CompletionResult result;
  TLB_ASSIGN_OR_RETURN(
      Statement job,
      db.Prepare("SELECT j.id, j.run_id, j.agent_id, j.state, j.arm, j.param_name, j.param_value,"
                 " j.iteration, r.benchmark, j.attempts, j.assignment FROM jobs j"
                 " JOIN runs r ON r.id = j.run_id WHERE j.lease_id = ?1"));
  job.Bind(1, complete.lease_id());
  TLB_ASSIGN_OR_RETURN(bool found, job.Step());
  if (!found || job.Text(2) != agent_id) {
    result.rejected = true;
    result.reason = absl::StrCat("lease ", complete.lease_id(), " is not held by agent ", agent_id);
    return result;
  }
  const int64_t job_id = job.Int(0);
  const int64_t run_id = job.Int(1);
  result.run_id = absl::StrCat(run_id);
  result.benchmark = job.Text(8);
  const std::string state = job.Text(3);
  if (state != "leased") {
    // A replay of a completion we already recorded is fine; anything else is stale.
    if (state == "succeeded" || state == "failed" || state == "cancelled") {
      result.replay = true;
      result.job_state = internal::JobStateFromText(state);
      return result;
    }
    result.rejected = true;
    result.reason = absl::StrCat("lease ", complete.lease_id(), " is no longer active");
    return result;
  }
  if (complete.status() == v1::JOB_STATUS_REFUSED) {
    // The agent did not start it (busy, rebooting, stopping): not the job's fault.
    dispatch::Requeue how;
    how.why = absl::StrCat("agent ", agent_id, " refused lease ", complete.lease_id(), ": ",
                           complete.error());
    TLB_ASSIGN_OR_RETURN(
        ExpiredLease taken,
        dispatch::TakeBack(db, events, {job_id, run_id, complete.lease_id(), agent_id, job.Int(9)},
                           how, now_ms, max_attempts));
    result.requeued = true;
    result.job_state = taken.requeued ? v1::JOB_STATE_QUEUED : v1::JOB_STATE_FAILED;
    if (!taken.requeued) {
      result.run_finished = true;
      result.run_state = v1::RUN_STATE_FAILED;
    }
    return result;
  }
  const std::string where = absl::StrCat(
      "job ", job_id, " (arm ", job.Text(4), job.Text(5).empty() ? "" : ", ", job.Text(5),
      job.Text(5).empty() ? "" : "=", job.Text(6), ", iteration ", job.Int(7), ")");
  TLB_ASSIGN_OR_RETURN(
      Statement count,
      db.Prepare("SELECT COUNT(*) FROM samples WHERE job_id = ?2 AND lease_id = ?1"));
  count.Bind(1, complete.lease_id()).Bind(2, job_id);
  TLB_ASSIGN_OR_RETURN(bool counted, count.Step());
  const uint64_t have = counted ? static_cast<uint64_t>(count.Int(0)) : 0;
  std::string new_state = "succeeded";
  std::string error;
  if (complete.status() == v1::JOB_STATUS_SUCCEEDED) {
    if (have != complete.sample_count()) {
      new_state = "failed";
      error = absl::StrCat(where, ": agent reported ", complete.sample_count(),
                           " samples but the controller stored ", have);
    } else if (have == 0) {
      new_state = "failed";
      error = absl::StrCat(where, ": the workload produced no samples");
    } else {
      TLB_ASSIGN_OR_RETURN(std::string why, CeilingMismatch(db, complete.lease_id(), job));
      if (!why.empty()) {
        new_state = "failed";
        error = absl::StrCat(where, ": ", why);
      }
    }
  } else {
    new_state = complete.status() == v1::JOB_STATUS_CANCELLED ? "cancelled" : "failed";
    error = absl::StrCat(where, " ",
                         complete.status() == v1::JOB_STATUS_TIMED_OUT ? "timed out" : "failed",
                         ": ", complete.error());
  }
  TLB_ASSIGN_OR_RETURN(Statement upd,
                       db.Prepare("UPDATE jobs SET state = ?2, error = ?3, finished_ms = ?4,"
                                  " lease_expires_ms = NULL WHERE id = ?1"));
  TLB_RETURN_IF_ERROR(upd.Bind(1, job_id).Bind(2, new_state).Bind(3, error).Bind(4, now_ms).Run());
  result.job_state = internal::JobStateFromText(new_state);
  TLB_ASSIGN_OR_RETURN(v1::RunEvent ended, events::ForJob(db, job_id, result.job_state, now_ms));
  ended.mutable_job()->set_samples(have);
  ended.mutable_job()->set_elapsed_seconds(complete.elapsed_seconds());
  ended.mutable_job()->set_reason(error);
  TLB_RETURN_IF_ERROR(events::Record(db, events, std::move(ended)));
  if (new_state == "failed") {
    TLB_RETURN_IF_ERROR(runs::Fail(db, events, run_id, error, now_ms));
    result.run_finished = true;
    result.run_state = v1::RUN_STATE_FAILED;
    return result;
  }
  TLB_RETURN_IF_ERROR(runs::FinishIfDone(db, events, run_id, now_ms, &result));
  return result;
}

absl::StatusOr<std::vector<v1::Sample>> Samples(Database& db, int64_t run_id) {
  TLB_ASSIGN_OR_RETURN(v1::Run run, runs::Load(db, run_id));
  TLB_ASSIGN_OR_RETURN(
      Statement stmt,
      db.Prepare("SELECT job_id, lease_id, seq, arm, param_name, param_value, iteration,"
                 " metric, series, value, unit, better, host, agent_id, boot_id,"
                 " kernel_release, kernel_cmdline, microarch, ceiling_applied, ceiling,"
                 " ceiling_observed, peer_host, boot_entry, source_id"
                 " FROM samples WHERE run_id = ?1 ORDER BY job_id, seq"));
  stmt.Bind(1, run_id);
  // Each job's slot and whether it still counts, and each agent's machine, read once per run
  // (a run has far fewer jobs and agents than samples).
  struct JobFacts {
    uint32_t slot = 0;
    std::string excluded;
  };
  std::unordered_map<int64_t, JobFacts> jobs;
  TLB_ASSIGN_OR_RETURN(Statement jobs_q,
                       db.Prepare("SELECT id, slot, abandoned FROM jobs WHERE run_id = ?1"));
  jobs_q.Bind(1, run_id);
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, jobs_q.Step());
    if (!row) break;
    jobs[jobs_q.Int(0)] = {static_cast<uint32_t>(jobs_q.Int(1)), jobs_q.Text(2)};
  }
  std::unordered_map<std::string, std::string> machine_of;
  TLB_ASSIGN_OR_RETURN(
      Statement hosts_q,
      db.Prepare("SELECT agent_id, info FROM hosts WHERE agent_id IN"
                 " (SELECT DISTINCT agent_id FROM sample_sources WHERE run_id = ?1)"));
  hosts_q.Bind(1, run_id);
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, hosts_q.Step());
    if (!row) break;
    v1::HostInfo info;
    // A host row that does not parse only loses the machine id of its samples.
    if (info.ParseFromString(hosts_q.Blob(1))) machine_of[hosts_q.Text(0)] = info.machine_id();
  }
  // The builds of the run's kernel arms, by boot entry: a sample on such an entry ran on that
  // build (the agent reports the entry only when the running kernel is the build), so its
  // commit and build id are the build's, whatever the sample itself says.
  std::unordered_map<std::string, std::pair<std::string, std::string>> build_of_entry;
  TLB_ASSIGN_OR_RETURN(Statement builds_q,
                       db.Prepare("SELECT boot_entry, commit_hash, build_id FROM builds"
                                  " WHERE run_id = ?1"));
  builds_q.Bind(1, run_id);
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, builds_q.Step());
    if (!row) break;
    build_of_entry[builds_q.Text(0)] = {builds_q.Text(1), builds_q.Text(2)};
  }
  // An imported run's machine and build, as its files named them (imports.h): it has no host
  // row nor builds to take them from.
  std::unordered_map<int64_t, std::array<std::string, 3>> imported_of_source;
  TLB_ASSIGN_OR_RETURN(
      Statement imported_q,
      db.Prepare("SELECT i.source_id, i.machine_id, i.commit_hash, i.build_id"
                 " FROM imported_sources i JOIN sample_sources src ON src.id = i.source_id"
                 " WHERE src.run_id = ?1"));
  imported_q.Bind(1, run_id);
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, imported_q.Step());
    if (!row) break;
    imported_of_source[imported_q.Int(0)] = {imported_q.Text(1), imported_q.Text(2),
                                             imported_q.Text(3)};
  }
  std::vector<v1::Sample> out;
  out.reserve(run.samples());
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
    sm.set_ceiling_observed(stmt.Int(20) != 0);
    sm.set_peer_host(stmt.Text(21));
    sm.set_boot_entry(stmt.Text(22));
    if (auto job = jobs.find(sm.job_id()); job != jobs.end()) {
      sm.set_slot(job->second.slot);
      sm.set_excluded(job->second.excluded);
    }
    if (auto m = machine_of.find(sm.agent_id()); m != machine_of.end()) {
      sm.set_machine_id(m->second);
    }
    if (!build_of_entry.empty()) {
      if (auto b = build_of_entry.find(sm.boot_entry()); b != build_of_entry.end()) {
        sm.set_commit(b->second.first);
        sm.set_build_id(b->second.second);
      }
    }
    if (!imported_of_source.empty()) {
      if (auto i = imported_of_source.find(stmt.Int(23)); i != imported_of_source.end()) {
        sm.set_machine_id(i->second[0]);
        sm.set_commit(i->second[1]);
        sm.set_build_id(i->second[2]);
      }
    }
  }
  return out;
}

}  // namespace tlbfleet::store::results
