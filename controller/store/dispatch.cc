#include "controller/store/dispatch.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "controller/scheduler/boot_plan.h"
#include "controller/scheduler/run_spec.h"
#include "controller/store/boot_requests.h"
#include "controller/store/builds.h"
#include "controller/store/events.h"
#include "controller/store/runs.h"
#include "controller/store/slots.h"

namespace tlbfleet::store::dispatch {

namespace {

struct QueuedJob {
  int64_t job_id = 0;
  int64_t attempts = 0;
  v1::JobAssignment assignment;
};

absl::StatusOr<QueuedJob> QueuedJobFromRow(const Statement& row, int id_col, int attempts_col,
                                           int assignment_col) {
  QueuedJob job;
  job.job_id = row.Int(id_col);
  job.attempts = row.Int(attempts_col);
  TLB_ASSIGN_OR_RETURN(job.assignment,
                       ParseBlob<v1::JobAssignment>(
                           row, assignment_col, absl::StrCat("job ", job.job_id, " assignment")));
  return job;
}

// Whether a boot into `entry` can be asked for: always, unless the entry is a kernel arm's whose
// build has not succeeded yet (the slot waits: nothing to boot). For a built kernel, `kernel`
// is what the reboot request carries.
absl::StatusOr<bool> KernelReady(Database& db, const std::string& entry, v1::KernelToBoot* kernel) {
  if (!scheduler::IsKernelEntry(entry)) return true;
  TLB_ASSIGN_OR_RETURN(std::optional<v1::KernelBuild> build, builds::ForEntry(db, entry));
  if (!build.has_value() || build->state() != "succeeded") return false;
  *kernel = builds::KernelToBootOf(*build);
  return true;
}

// The next queued job of `slot` that boot `boot_id` may run, recording which boot index a
// fresh boot serves. Jobs of one boot index run on one boot, and a boot serves one index;
// when the slot has work only for another index, `reboot_reason` says which. For a run whose
// arms name boot entries (`entry_run`), a fresh boot serves only the index it was asked for
// (boot_requests.h); `reboot_entry` is the entry the next boot must be.
absl::StatusOr<std::optional<QueuedJob>> PickJobForBoot(
    Database& db, EventBatch& events, int64_t run_id, const v1::RunSpec& spec, int64_t slot,
    const LeaseRequest& request, std::string* reboot_reason, std::string* reboot_entry,
    v1::KernelToBoot* reboot_kernel, LeaseResult* boot_request) {
  const std::string& boot_id = request.boot_id;
  const bool entry_run = scheduler::RunUsesBootEntries(spec);
  if (entry_run) {
    // A run with kernels built from source starts once every build has succeeded: a build
    // that fails fails the run, and measuring the other arms first would waste the host.
    TLB_ASSIGN_OR_RETURN(bool waiting, builds::Unfinished(db, run_id));
    if (waiting) return std::optional<QueuedJob>();
  }
  auto first_queued = [&](int64_t boot_index) -> absl::StatusOr<std::optional<QueuedJob>> {
    TLB_ASSIGN_OR_RETURN(Statement q,
                         db.Prepare("SELECT id, attempts, assignment FROM jobs"
                                    " WHERE run_id = ?1 AND slot = ?2 AND state = 'queued'"
                                    " AND boot_index = ?3 ORDER BY id LIMIT 1"));
    q.Bind(1, run_id).Bind(2, slot).Bind(3, boot_index);
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return std::optional<QueuedJob>();
    TLB_ASSIGN_OR_RETURN(QueuedJob job, QueuedJobFromRow(q, 0, 1, 2));
    return std::optional<QueuedJob>(std::move(job));
  };
  TLB_ASSIGN_OR_RETURN(Statement lowest_q,
                       db.Prepare("SELECT MIN(boot_index) FROM jobs WHERE run_id = ?1"
                                  " AND slot = ?2 AND state = 'queued'"));
  lowest_q.Bind(1, run_id).Bind(2, slot);
  TLB_ASSIGN_OR_RETURN(bool has_lowest, lowest_q.Step());
  if (!has_lowest || lowest_q.IsNull(0)) return std::optional<QueuedJob>();
  const int64_t lowest = lowest_q.Int(0);

  TLB_ASSIGN_OR_RETURN(Statement serves,
                       db.Prepare("SELECT boot_index FROM slot_boots WHERE run_id = ?1"
                                  " AND slot = ?2 AND boot_id = ?3"));
  serves.Bind(1, run_id).Bind(2, slot).Bind(3, boot_id);
  TLB_ASSIGN_OR_RETURN(bool served, serves.Step());
  if (served) {
    // This boot already serves one boot index: it takes that index's jobs and nothing else.
    const int64_t index = serves.Int(0);
    TLB_ASSIGN_OR_RETURN(std::optional<QueuedJob> job, first_queued(index));
    if (!job.has_value()) {
      *reboot_reason = absl::StrCat("run ", run_id, " boot ", lowest + 1, " needs a fresh boot (",
                                    "boot ", index + 1, " ran on boot_id ", boot_id, ")");
      if (entry_run) {
        TLB_ASSIGN_OR_RETURN(*reboot_entry, boot_requests::EntryOf(db, run_id, slot, lowest));
        TLB_ASSIGN_OR_RETURN(bool ready, KernelReady(db, *reboot_entry, reboot_kernel));
        if (!ready) {
          reboot_reason->clear();
          reboot_entry->clear();
          return job;
        }
        boot_request->boot_request =
            LeaseResult::BootRequest{run_id, slot, lowest, *reboot_entry, boot_id};
        absl::StrAppend(reboot_reason, " into boot entry ", *reboot_entry);
      }
    }
    return job;
  }
  if (entry_run) {
    TLB_ASSIGN_OR_RETURN(bool claimed,
                         boot_requests::Claim(db, run_id, slot, lowest, boot_id, request.boot_entry,
                                              request.boot_entry_failed));
    if (!claimed) {
      TLB_ASSIGN_OR_RETURN(int64_t misses, boot_requests::Misses(db, run_id, slot));
      if (misses >= boot_requests::kMaxEntryMisses) {
        // It rebooted as asked and came back on another boot each time: it cannot boot the
        // entry (an install that does not take, a bootloader ignoring the request).
        TLB_ASSIGN_OR_RETURN(std::string entry, boot_requests::EntryOf(db, run_id, slot, lowest));
        TLB_RETURN_IF_ERROR(runs::Fail(
            db, events, run_id,
            absl::StrCat("slot ", slot, ": host ", request.hostname, " was asked ", misses,
                         " times to boot entry ", entry, " and came back each time on another (",
                         request.boot_entry.empty() ? std::string("no entry")
                                                    : absl::StrCat("entry ", request.boot_entry),
                         ")"),
            request.now_ms));
        return std::optional<QueuedJob>();
      }
      TLB_ASSIGN_OR_RETURN(*reboot_entry, boot_requests::EntryOf(db, run_id, slot, lowest));
      TLB_ASSIGN_OR_RETURN(bool ready, KernelReady(db, *reboot_entry, reboot_kernel));
      if (!ready) {
        reboot_entry->clear();
        return std::optional<QueuedJob>();
      }
      boot_request->boot_request =
          LeaseResult::BootRequest{run_id, slot, lowest, *reboot_entry, boot_id};
      *reboot_reason = absl::StrCat("run ", run_id, " boot ", lowest + 1,
                                    " needs a fresh boot into boot entry ", *reboot_entry);
      return std::optional<QueuedJob>();
    }
  }
  // A fresh boot takes the lowest boot index with work left. If that index had started on
  // a boot that ended early (a crash, a watchdog, an operator's reboot), that boot did not
  // complete it: what it measured is abandoned and the whole index is measured again here, so
  // that every boot index of a slot comes from one boot.
  TLB_ASSIGN_OR_RETURN(Statement began,
                       db.Prepare("SELECT boot_id FROM slot_boots WHERE run_id = ?1"
                                  " AND slot = ?2 AND boot_index = ?3"));
  began.Bind(1, run_id).Bind(2, slot).Bind(3, lowest);
  TLB_ASSIGN_OR_RETURN(bool begun, began.Step());
  if (begun && began.Text(0) != boot_id) {
    TLB_RETURN_IF_ERROR(slots::RepeatBoot(db, events, run_id, spec, slot, lowest, began.Text(0),
                                          boot_id, request.now_ms));
  }
  TLB_ASSIGN_OR_RETURN(Statement record,
                       db.Prepare("INSERT OR REPLACE INTO slot_boots(run_id, slot, boot_index,"
                                  " boot_id) VALUES(?1, ?2, ?3, ?4)"));
  TLB_RETURN_IF_ERROR(record.Bind(1, run_id).Bind(2, slot).Bind(3, lowest).Bind(4, boot_id).Run());
  return first_queued(lowest);
}

// The slot of deferred run `run_id` this agent may take (expanding it if needed), or
// nullopt; see LeaseRequest::expander.
absl::StatusOr<std::optional<int64_t>> PrepareDeferredSlot(Database& db, EventBatch& events,
                                                           int64_t run_id, const v1::RunSpec& spec,
                                                           const SlotExpander& expander,
                                                           int64_t now_ms) {
  if (!expander) return std::optional<int64_t>();
  TLB_ASSIGN_OR_RETURN(Statement bound_q,
                       db.Prepare("SELECT slot FROM run_slots WHERE run_id = ?1"));
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
                           db.Prepare("DELETE FROM jobs WHERE run_id = ?1 AND slot = ?2"
                                      " AND state = 'queued'"));
      TLB_RETURN_IF_ERROR(drop.Bind(1, run_id).Bind(2, slot).Run());
    }
    TLB_RETURN_IF_ERROR(runs::InsertJobs(db, run_id, spec, mine->jobs, slot));
    TLB_ASSIGN_OR_RETURN(Statement basis,
                         db.Prepare("INSERT OR REPLACE INTO slot_expansions(run_id, slot, basis)"
                                    " VALUES(?1, ?2, ?3)"));
    return basis.Bind(1, run_id).Bind(2, slot).Bind(3, mine->basis).Run();
  };
  for (int64_t slot = 0; slot < static_cast<int64_t>(spec.hosts().count()); ++slot) {
    if (bound.count(slot) > 0) continue;
    TLB_ASSIGN_OR_RETURN(Statement q,
                         db.Prepare("SELECT e.basis,"
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
    TLB_RETURN_IF_ERROR(
        runs::Fail(db, events, run_id, std::string(expand_error.message()), now_ms));
  }
  return std::optional<int64_t>();
}

// The first queued job of `slot`. Its id comes from the index jobs_queued_by_slot alone (the
// slot's own queued entries, never the run's whole queue, and no row read), then one row by
// its key: selecting the row's columns with ORDER BY id read every queued row of the slot,
// assignment blobs and all, to sort them.
absl::StatusOr<std::optional<QueuedJob>> FirstQueuedOfSlot(Database& db, int64_t run_id,
                                                           int64_t slot) {
  TLB_ASSIGN_OR_RETURN(Statement first, db.Prepare("SELECT MIN(id) FROM jobs"
                                                   " WHERE run_id = ?1 AND slot = ?2"
                                                   " AND state = 'queued'"));
  first.Bind(1, run_id).Bind(2, slot);
  TLB_ASSIGN_OR_RETURN(bool found, first.Step());
  if (!found || first.IsNull(0)) return std::optional<QueuedJob>();
  const int64_t id = first.Int(0);
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare("SELECT id, attempts, assignment FROM jobs WHERE id = ?1"));
  q.Bind(1, id);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return absl::DataLossError(absl::StrCat("job ", id, " vanished while leasing"));
  TLB_ASSIGN_OR_RETURN(QueuedJob job, QueuedJobFromRow(q, 0, 1, 2));
  return std::optional<QueuedJob>(std::move(job));
}

struct SlotPick {
  int64_t slot = 0;
  bool bound = false;  // the agent already holds the slot
  QueuedJob job;
};

// The job an agent may take of run `run_id`: the first queued one of the slot it holds, or,
// holding none, of the lowest slot no host holds that has queued work (`only_slot`, when not
// negative: that slot only). Jobs are numbered slot by slot, so that is the run's lowest
// queued job a free slot offers. The cost is one lookup per slot at most, whatever the
// length of the queue: with 1,000 slots of 100 queued jobs, a join that walked the queue in
// job order until it met the agent's slot read up to 100,000 rows per lease.
absl::StatusOr<std::optional<SlotPick>> PickSlotJob(Database& db, int64_t run_id,
                                                    const LeaseRequest& request,
                                                    int64_t only_slot) {
  const std::string& agent_id = request.agent_id;
  TLB_ASSIGN_OR_RETURN(Statement held, db.Prepare("SELECT slot, machine_id FROM run_slots"
                                                  " WHERE run_id = ?1 AND agent_id = ?2"));
  held.Bind(1, run_id).Bind(2, agent_id);
  TLB_ASSIGN_OR_RETURN(bool holds, held.Step());
  if (holds) {
    const int64_t slot = held.Int(0);
    if (only_slot >= 0 && only_slot != slot) return std::optional<SlotPick>();
    // The same agent id on another machine (a copied state directory, a reinstalled host) is
    // not the machine this slot measured: it waits for that machine (on_host_lost decides).
    const std::string bound_machine = held.Text(1);
    if (!bound_machine.empty() && !request.machine_id.empty() &&
        bound_machine != request.machine_id) {
      return std::optional<SlotPick>();
    }
    TLB_ASSIGN_OR_RETURN(std::optional<QueuedJob> job, FirstQueuedOfSlot(db, run_id, slot));
    if (!job.has_value()) return std::optional<SlotPick>();
    return std::optional<SlotPick>(SlotPick{slot, true, *std::move(job)});
  }
  TLB_ASSIGN_OR_RETURN(Statement bound_q,
                       db.Prepare("SELECT slot FROM run_slots WHERE run_id = ?1"));
  bound_q.Bind(1, run_id);
  std::set<int64_t> bound;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, bound_q.Step());
    if (!row) break;
    bound.insert(bound_q.Int(0));
  }
  int64_t first = only_slot, last = only_slot;
  if (only_slot < 0) {
    // Two statements: SQLite answers a lone MIN or MAX with one seek into the index, both
    // together with a scan.
    for (const bool lowest : {true, false}) {
      TLB_ASSIGN_OR_RETURN(Statement end,
                           db.Prepare(lowest ? "SELECT MIN(slot) FROM jobs"
                                               " WHERE run_id = ?1 AND state = 'queued'"
                                             : "SELECT MAX(slot) FROM jobs"
                                               " WHERE run_id = ?1 AND state = 'queued'"));
      end.Bind(1, run_id);
      TLB_ASSIGN_OR_RETURN(bool row, end.Step());
      if (!row || end.IsNull(0)) return std::optional<SlotPick>();
      (lowest ? first : last) = end.Int(0);
    }
  }
  for (int64_t slot = first; slot <= last; ++slot) {
    if (bound.count(slot) > 0) continue;
    TLB_ASSIGN_OR_RETURN(std::optional<QueuedJob> job, FirstQueuedOfSlot(db, run_id, slot));
    if (job.has_value()) return std::optional<SlotPick>(SlotPick{slot, false, *std::move(job)});
  }
  return std::optional<SlotPick>();
}

// Store::Lease for one run.
absl::StatusOr<LeaseResult> LeaseFromRun(Database& db, EventBatch& events,
                                         const std::string& run_id, const LeaseRequest& request) {
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRunId(run_id));
  const std::string& agent_id = request.agent_id;
  LeaseResult result;
  TLB_ASSIGN_OR_RETURN(Statement run_row,
                       db.Prepare("SELECT spec, expand_on_bind, state FROM runs WHERE id = ?1"));
  run_row.Bind(1, rid);
  TLB_ASSIGN_OR_RETURN(bool run_found, run_row.Step());
  if (!run_found) return result;
  const std::string state = run_row.Text(2);
  if (state != "queued" && state != "running") return result;
  TLB_ASSIGN_OR_RETURN(v1::RunSpec spec,
                       ParseBlob<v1::RunSpec>(run_row, 0, absl::StrCat("run ", rid, " spec")));
  int64_t only_slot = -1;  // a deferred run: lease from this slot only
  if (run_row.Int(1) != 0) {
    TLB_ASSIGN_OR_RETURN(Statement held, db.Prepare("SELECT slot FROM run_slots"
                                                    " WHERE run_id = ?1 AND agent_id = ?2"));
    held.Bind(1, rid).Bind(2, agent_id);
    TLB_ASSIGN_OR_RETURN(bool holds, held.Step());
    if (!holds) {
      SlotExpander expander = request.expander_for ? request.expander_for(run_id) : nullptr;
      TLB_ASSIGN_OR_RETURN(std::optional<int64_t> slot,
                           PrepareDeferredSlot(db, events, rid, spec, expander, request.now_ms));
      if (!slot.has_value()) return result;
      only_slot = *slot;
    }
  }
  TLB_ASSIGN_OR_RETURN(std::optional<SlotPick> picked, PickSlotJob(db, rid, request, only_slot));
  if (!picked.has_value()) return result;
  const int64_t slot = picked->slot;
  const bool slot_bound = picked->bound;
  QueuedJob job = std::move(picked->job);
  if (!request.boot_id.empty()) {
    // The first queued job of the slot may belong to another boot than this one; and a boot
    // of the slot cut short by an unplanned reboot is measured again on this one.
    std::string why;
    std::string entry;
    v1::KernelToBoot kernel;
    TLB_ASSIGN_OR_RETURN(
        std::optional<QueuedJob> on_this_boot,
        PickJobForBoot(db, events, rid, spec, slot, request, &why, &entry, &kernel, &result));
    if (!on_this_boot.has_value()) {
      if (why.empty()) {
        result.boot_request.reset();
      } else {
        result.kind = LeaseResult::Kind::kNeedsReboot;
        result.run_id = run_id;
        result.reboot_reason = std::move(why);
        result.reboot_entry = std::move(entry);
        result.reboot_kernel = std::move(kernel);
      }
      return result;
    }
    job = *std::move(on_this_boot);
  }
  if (!slot_bound) {
    TLB_ASSIGN_OR_RETURN(Statement bind,
                         db.Prepare("INSERT INTO run_slots(run_id, slot, agent_id, machine_id,"
                                    " hostname, bound_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6)"));
    TLB_RETURN_IF_ERROR(bind.Bind(1, rid)
                            .Bind(2, slot)
                            .Bind(3, agent_id)
                            .Bind(4, request.machine_id)
                            .Bind(5, request.hostname)
                            .Bind(6, request.now_ms)
                            .Run());
  }
  const int64_t attempt = job.attempts + 1;
  const std::string lease_id = internal::LeaseId(job.job_id, attempt);
  result.assignment = std::move(job.assignment);
  result.assignment.set_lease_id(lease_id);
  result.assignment.set_job_id(job.job_id);
  if (request.peer_for) result.peer_agent_id = request.peer_for(result.assignment);
  TLB_ASSIGN_OR_RETURN(Statement upd, db.Prepare("UPDATE jobs SET state = 'leased', attempts = ?2,"
                                                 " lease_id = ?3, agent_id = ?4,"
                                                 " lease_expires_ms = ?5, peer_agent_id = ?6"
                                                 " WHERE id = ?1"));
  upd.Bind(1, job.job_id)
      .Bind(2, attempt)
      .Bind(3, lease_id)
      .Bind(4, agent_id)
      .Bind(5, request.now_ms + request.lease_ms);
  if (result.peer_agent_id.empty()) {
    upd.BindNull(6);
  } else {
    upd.Bind(6, result.peer_agent_id);
  }
  TLB_RETURN_IF_ERROR(upd.Run());
  TLB_RETURN_IF_ERROR(runs::MarkRunning(db, events, rid, request.now_ms));
  TLB_ASSIGN_OR_RETURN(v1::RunEvent started,
                       events::ForJob(db, job.job_id, v1::JOB_STATE_RUNNING, request.now_ms));
  TLB_RETURN_IF_ERROR(events::Record(db, events, std::move(started)));
  result.kind = LeaseResult::Kind::kLeased;
  result.run_id = run_id;
  return result;
}

}  // namespace

absl::StatusOr<LeaseResult> Lease(Database& db, EventBatch& events, const LeaseRequest& request) {
  LeaseResult first_reboot;
  for (const std::string& run_id : request.run_ids) {
    TLB_ASSIGN_OR_RETURN(LeaseResult result, LeaseFromRun(db, events, run_id, request));
    if (result.kind == LeaseResult::Kind::kLeased) return result;
    if (result.kind == LeaseResult::Kind::kNeedsReboot &&
        first_reboot.kind == LeaseResult::Kind::kNothing) {
      first_reboot = std::move(result);
    }
  }
  if (first_reboot.boot_request.has_value()) {
    const LeaseResult::BootRequest& r = *first_reboot.boot_request;
    TLB_RETURN_IF_ERROR(
        boot_requests::Record(db, r.run_id, r.slot, r.boot_index, r.entry, r.from_boot_id));
  }
  return first_reboot;
}

absl::StatusOr<bool> Renew(Database& db, const std::string& lease_id, const std::string& agent_id,
                           int64_t now_ms, int64_t lease_ms) {
  TLB_ASSIGN_OR_RETURN(Statement stmt,
                       db.Prepare("UPDATE jobs SET lease_expires_ms = MAX(lease_expires_ms, ?3)"
                                  " WHERE lease_id = ?1 AND agent_id = ?2 AND state = 'leased'"));
  TLB_RETURN_IF_ERROR(stmt.Bind(1, lease_id).Bind(2, agent_id).Bind(3, now_ms + lease_ms).Run());
  return db.Changes() > 0;
}

absl::StatusOr<int64_t> ExtendAll(Database& db, int64_t until_ms) {
  TLB_ASSIGN_OR_RETURN(Statement stmt,
                       db.Prepare("UPDATE jobs SET lease_expires_ms = ?1"
                                  " WHERE state = 'leased' AND lease_expires_ms < ?1"));
  TLB_RETURN_IF_ERROR(stmt.Bind(1, until_ms).Run());
  return db.Changes();
}

absl::StatusOr<ExpiredLease> TakeBack(Database& db, EventBatch& events, const HeldJob& job,
                                      const Requeue& how, int64_t now_ms, int max_attempts) {
  ExpiredLease e;
  e.run_id = absl::StrCat(job.run_id);
  e.job_id = job.job_id;
  e.lease_id = job.lease_id;
  e.agent_id = job.agent_id;
  // The lease's samples go, values first (they refer to their source).
  TLB_ASSIGN_OR_RETURN(
      Statement drop,
      db.Prepare("DELETE FROM sample_values WHERE source_id IN (SELECT id FROM sample_sources"
                 " WHERE job_id = ?1 AND lease_id = ?2)"));
  TLB_RETURN_IF_ERROR(drop.Bind(1, job.job_id).Bind(2, job.lease_id).Run());
  const int64_t dropped = db.Changes();
  TLB_ASSIGN_OR_RETURN(
      Statement drop_sources,
      db.Prepare("DELETE FROM sample_sources WHERE job_id = ?1 AND lease_id = ?2"));
  TLB_RETURN_IF_ERROR(drop_sources.Bind(1, job.job_id).Bind(2, job.lease_id).Run());
  if (dropped > 0) {
    TLB_ASSIGN_OR_RETURN(Statement uncount,
                         db.Prepare("UPDATE runs SET samples = samples - ?2 WHERE id = ?1"));
    TLB_RETURN_IF_ERROR(uncount.Bind(1, job.run_id).Bind(2, dropped).Run());
  }
  e.requeued = !how.count_attempt || job.attempts < max_attempts;
  // Described while the row still names the lease and the agent.
  TLB_ASSIGN_OR_RETURN(
      v1::RunEvent event,
      events::ForJob(db, job.job_id, e.requeued ? v1::JOB_STATE_QUEUED : v1::JOB_STATE_FAILED,
                     now_ms));
  std::string error;
  if (e.requeued) {
    TLB_ASSIGN_OR_RETURN(Statement requeue,
                         db.Prepare("UPDATE jobs SET state = 'queued', lease_id = NULL,"
                                    " agent_id = NULL, lease_expires_ms = NULL,"
                                    " peer_agent_id = NULL, attempts = attempts - ?2"
                                    " WHERE id = ?1"));
    TLB_RETURN_IF_ERROR(
        requeue.Bind(1, job.job_id).Bind(2, static_cast<int64_t>(how.count_attempt ? 0 : 1)).Run());
    event.mutable_job()->set_reason(how.count_attempt
                                        ? absl::StrCat(how.why, " (attempt ", job.attempts, " of ",
                                                       max_attempts, "); re-queued")
                                        : absl::StrCat(how.why, "; re-queued"));
  } else {
    TLB_ASSIGN_OR_RETURN(Statement fail,
                         db.Prepare("UPDATE jobs SET state = 'failed', finished_ms = ?2,"
                                    " error = ?3, peer_agent_id = NULL WHERE id = ?1"));
    error = absl::StrCat("job ", job.job_id, ": ", how.why, " ", job.attempts,
                         " times (agents went silent or lost it)");
    TLB_RETURN_IF_ERROR(fail.Bind(1, job.job_id).Bind(2, now_ms).Bind(3, error).Run());
    event.mutable_job()->set_reason(error);
  }
  TLB_RETURN_IF_ERROR(events::Record(db, events, std::move(event)));
  if (!e.requeued) TLB_RETURN_IF_ERROR(runs::Fail(db, events, job.run_id, error, now_ms));
  return e;
}

absl::StatusOr<std::vector<ExpiredLease>> Expire(Database& db, EventBatch& events, int64_t now_ms,
                                                 int max_attempts) {
  // Uses the partial index jobs_leased_by_expiry (store_test checks the plan).
  TLB_ASSIGN_OR_RETURN(Statement find,
                       db.Prepare("SELECT id, run_id, lease_id, agent_id, attempts FROM jobs"
                                  " WHERE state = 'leased' AND lease_expires_ms < ?1"));
  find.Bind(1, now_ms);
  std::vector<HeldJob> found;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, find.Step());
    if (!row) break;
    found.push_back({find.Int(0), find.Int(1), find.Text(2), find.Text(3), find.Int(4)});
  }
  std::vector<ExpiredLease> expired;
  for (const HeldJob& job : found) {
    Requeue how;
    how.why = "lease expired";
    TLB_ASSIGN_OR_RETURN(ExpiredLease e, TakeBack(db, events, job, how, now_ms, max_attempts));
    expired.push_back(std::move(e));
  }
  return expired;
}

absl::StatusOr<std::vector<HeldJob>> HeldJobs(Database& db, const std::string& agent_id) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("SELECT id, run_id, lease_id, agent_id, attempts"
                                               " FROM jobs WHERE agent_id = ?1"
                                               " AND state = 'leased' ORDER BY id"));
  q.Bind(1, agent_id);
  std::vector<HeldJob> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    out.push_back({q.Int(0), q.Int(1), q.Text(2), q.Text(3), q.Int(4)});
  }
  return out;
}

absl::StatusOr<std::optional<HeldJob>> Held(Database& db, const std::string& lease_id,
                                            const std::string& agent_id) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("SELECT id, run_id, lease_id, agent_id, attempts"
                                               " FROM jobs WHERE lease_id = ?1 AND agent_id = ?2"
                                               " AND state = 'leased'"));
  q.Bind(1, lease_id).Bind(2, agent_id);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return std::optional<HeldJob>();
  return std::optional<HeldJob>(HeldJob{q.Int(0), q.Int(1), q.Text(2), q.Text(3), q.Int(4)});
}

absl::StatusOr<std::optional<std::string>> HeldBy(Database& db, const std::string& agent_id) {
  TLB_ASSIGN_OR_RETURN(Statement stmt, db.Prepare("SELECT lease_id FROM jobs WHERE agent_id = ?1"
                                                  " AND state = 'leased' ORDER BY id LIMIT 1"));
  stmt.Bind(1, agent_id);
  TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(stmt.Text(0));
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> PeerReservations(Database& db) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("SELECT lease_id, peer_agent_id FROM jobs"
                                               " WHERE state = 'leased'"
                                               " AND peer_agent_id IS NOT NULL"));
  std::vector<std::pair<std::string, std::string>> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    out.emplace_back(q.Text(0), q.Text(1));
  }
  return out;
}

}  // namespace tlbfleet::store::dispatch
