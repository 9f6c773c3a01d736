#include "controller/store/builds.h"

#include <algorithm>
#include <deque>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "controller/store/events.h"
#include "controller/store/runs.h"

namespace tlbfleet::store::builds {

namespace {

constexpr char kBuildColumns[] =
    "id, run_id, arm, boot_entry, source, rev, config, state, builder, commit_hash, subject,"
    " author, artifact_id, build_id, kernel_release, reason, reused, log_lines, started_ms,"
    " finished_ms, agent_id, attempts, revert";

struct Row {
  v1::KernelBuild build;
  int64_t run_id = 0;
  std::string agent_id;
  int64_t attempts = 0;
};

Row BuildFromRow(const Statement& q) {
  Row row;
  v1::KernelBuild& b = row.build;
  b.set_task_id(q.Int(0));
  row.run_id = q.Int(1);
  b.set_arm(q.Text(2));
  b.set_boot_entry(q.Text(3));
  b.mutable_kernel()->set_source(q.Text(4));
  b.mutable_kernel()->set_rev(q.Text(5));
  b.mutable_kernel()->set_config(q.Text(6));
  b.set_state(q.Text(7));
  b.set_builder(q.Text(8));
  b.set_commit(q.Text(9));
  b.set_subject(q.Text(10));
  b.set_author(q.Text(11));
  b.set_artifact_id(q.Text(12));
  b.set_build_id(q.Text(13));
  b.set_kernel_release(q.Text(14));
  b.set_reason(q.Text(15));
  b.set_reused(q.Int(16) != 0);
  b.set_log_lines(static_cast<uint64_t>(q.Int(17)));
  b.set_started_unix_ms(q.Int(18));
  b.set_finished_unix_ms(q.Int(19));
  row.agent_id = q.Text(20);
  row.attempts = q.Int(21);
  b.mutable_kernel()->set_revert(q.Text(22));
  return row;
}

absl::StatusOr<std::optional<Row>> LoadRow(Database& db, int64_t task_id) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare(absl::StrCat("SELECT ", kBuildColumns,
                                                            " FROM builds WHERE id = ?1")));
  q.Bind(1, task_id);
  TLB_ASSIGN_OR_RETURN(bool found, q.Step());
  if (!found) return std::optional<Row>();
  return std::optional<Row>(BuildFromRow(q));
}

absl::Status Record(Database& db, EventBatch& events, int64_t run_id, const v1::KernelBuild& b,
                    std::vector<std::string> lines, int64_t now_ms) {
  v1::RunEvent event;
  event.set_run_id(absl::StrCat(run_id));
  event.set_time_unix_ms(now_ms);
  v1::BuildEvent* e = event.mutable_build();
  e->set_task_id(b.task_id());
  e->set_arm(b.arm());
  e->set_state(b.state());
  e->set_commit(b.commit());
  e->set_reason(b.reason());
  for (std::string& line : lines) e->add_log_lines(std::move(line));
  return events::Record(db, events, std::move(event));
}

std::string Describe(const v1::KernelBuild& b) {
  return absl::StrCat("arm ", b.arm(), ": kernel ", b.kernel().source(), " ", b.kernel().rev(),
                      b.kernel().revert().empty()
                          ? ""
                          : absl::StrCat(" with ", b.kernel().revert().substr(0, 12), " reverted"),
                      b.commit().empty() ? "" : absl::StrCat(" (", b.commit().substr(0, 12), ")"),
                      " with config ", b.kernel().config());
}

// Sets state and reason of a build, records the event and reloads it.
absl::StatusOr<v1::KernelBuild> SetState(Database& db, EventBatch& events, int64_t task_id,
                                         const std::string& state, const std::string& reason,
                                         int64_t now_ms) {
  const bool terminal = state != "queued" && state != "building";
  TLB_ASSIGN_OR_RETURN(Statement u,
                       db.Prepare("UPDATE builds SET state = ?2, reason = ?3,"
                                  " finished_ms = CASE WHEN ?4 THEN ?5 ELSE finished_ms END,"
                                  " agent_id = CASE WHEN ?2 = 'queued' THEN '' ELSE agent_id END"
                                  " WHERE id = ?1"));
  TLB_RETURN_IF_ERROR(u.Bind(1, task_id)
                          .Bind(2, state)
                          .Bind(3, reason)
                          .Bind(4, static_cast<int64_t>(terminal))
                          .Bind(5, now_ms)
                          .Run());
  TLB_ASSIGN_OR_RETURN(std::optional<Row> row, LoadRow(db, task_id));
  if (!row.has_value()) return absl::NotFoundError(absl::StrCat("no build ", task_id));
  TLB_RETURN_IF_ERROR(Record(db, events, row->run_id, row->build, {}, now_ms));
  return row->build;
}

absl::Status AppendLog(Database& db, int64_t task_id, const v1::BuildProgress& progress) {
  if (progress.log_lines().empty()) return absl::OkStatus();
  TLB_ASSIGN_OR_RETURN(Statement count, db.Prepare("SELECT log_lines FROM builds WHERE id = ?1"));
  count.Bind(1, task_id);
  TLB_ASSIGN_OR_RETURN(bool found, count.Step());
  if (!found) return absl::OkStatus();
  int64_t seq = count.Int(0);
  TLB_ASSIGN_OR_RETURN(Statement insert,
                       db.Prepare("INSERT OR REPLACE INTO build_log(build, seq, line)"
                                  " VALUES(?1, ?2, ?3)"));
  for (const std::string& line : progress.log_lines()) {
    if (seq < kMaxLogLines) {
      insert.Reset();
      TLB_RETURN_IF_ERROR(insert.Bind(1, task_id).Bind(2, seq).Bind(3, line).Run());
    }
    ++seq;
  }
  TLB_ASSIGN_OR_RETURN(Statement u, db.Prepare("UPDATE builds SET log_lines = ?2 WHERE id = ?1"));
  return u.Bind(1, task_id).Bind(2, seq).Run();
}

absl::Status LoadTail(Database& db, v1::KernelBuild* build) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("SELECT line FROM build_log WHERE build = ?1"
                                               " ORDER BY seq DESC LIMIT ?2"));
  q.Bind(1, build->task_id()).Bind(2, static_cast<int64_t>(kLogTailLines));
  std::deque<std::string> tail;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    tail.push_front(q.Text(0));
  }
  for (std::string& line : tail) build->add_log_tail(std::move(line));
  return absl::OkStatus();
}

// A build the run cannot do without failed: the run fails, naming it.
absl::Status FailRunFor(Database& db, EventBatch& events, int64_t run_id, const v1::KernelBuild& b,
                        CompleteResult& result, int64_t now_ms) {
  result.run_failed = true;
  result.run_error = absl::StrCat(Describe(b), ": ", b.reason());
  // runs::Fail cancels the run's other builds; the hub tells their builders.
  return runs::Fail(db, events, run_id, result.run_error, now_ms);
}

}  // namespace

absl::Status InsertForRun(Database& db, int64_t run_id, const v1::RunSpec& spec) {
  TLB_ASSIGN_OR_RETURN(Statement insert,
                       db.Prepare("INSERT INTO builds(run_id, arm, boot_entry, source, rev, config,"
                                  " revert) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
  for (const v1::ArmSpec& arm : spec.arms()) {
    if (!arm.has_kernel()) continue;
    if (arm.boot_entry().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("arm ", arm.name(), ": a kernel arm needs its boot entry named"));
    }
    insert.Reset();
    TLB_RETURN_IF_ERROR(insert.Bind(1, run_id)
                            .Bind(2, arm.name())
                            .Bind(3, arm.boot_entry())
                            .Bind(4, arm.kernel().source())
                            .Bind(5, arm.kernel().rev())
                            .Bind(6, arm.kernel().config())
                            .Bind(7, arm.kernel().revert())
                            .Run());
  }
  return absl::OkStatus();
}

absl::Status LoadForRun(Database& db, int64_t run_id, v1::Run* run) {
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare(absl::StrCat("SELECT ", kBuildColumns,
                                               " FROM builds WHERE run_id = ?1 ORDER BY id")));
  q.Bind(1, run_id);
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    *run->add_builds() = BuildFromRow(q).build;
  }
  for (v1::KernelBuild& b : *run->mutable_builds()) TLB_RETURN_IF_ERROR(LoadTail(db, &b));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<v1::KernelBuild>> Load(Database& db, int64_t task_id) {
  TLB_ASSIGN_OR_RETURN(std::optional<Row> row, LoadRow(db, task_id));
  if (!row.has_value()) return std::optional<v1::KernelBuild>();
  TLB_RETURN_IF_ERROR(LoadTail(db, &row->build));
  return std::optional<v1::KernelBuild>(std::move(row->build));
}

absl::StatusOr<int64_t> RunOf(Database& db, int64_t task_id) {
  TLB_ASSIGN_OR_RETURN(std::optional<Row> row, LoadRow(db, task_id));
  return row.has_value() ? row->run_id : 0;
}

absl::StatusOr<std::optional<v1::KernelBuild>> Take(Database& db, EventBatch& events,
                                                    const std::string& agent_id,
                                                    const v1::HostInfo& host, int64_t now_ms) {
  if (host.kernel_sources().empty()) return std::optional<v1::KernelBuild>();
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare("SELECT b.id, b.source, b.config FROM builds b"
                                  " JOIN runs r ON r.id = b.run_id"
                                  " WHERE b.state = 'queued' AND r.state IN ('queued', 'running')"
                                  " ORDER BY b.id"));
  int64_t chosen = 0;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    const std::string source = q.Text(1);
    const std::string config = q.Text(2);
    const bool can =
        std::any_of(host.kernel_sources().begin(), host.kernel_sources().end(),
                    [&](const v1::KernelSourceInfo& s) {
                      return s.name() == source && std::find(s.configs().begin(), s.configs().end(),
                                                             config) != s.configs().end();
                    });
    if (can) {
      chosen = q.Int(0);
      break;
    }
  }
  if (chosen == 0) return std::optional<v1::KernelBuild>();
  TLB_ASSIGN_OR_RETURN(Statement u,
                       db.Prepare("UPDATE builds SET state = 'building', agent_id = ?2,"
                                  " builder = ?3, attempts = attempts + 1, started_ms = ?4,"
                                  " reason = '' WHERE id = ?1"));
  TLB_RETURN_IF_ERROR(
      u.Bind(1, chosen).Bind(2, agent_id).Bind(3, host.hostname()).Bind(4, now_ms).Run());
  TLB_ASSIGN_OR_RETURN(std::optional<Row> loaded, LoadRow(db, chosen));
  // The row was chosen and updated in this transaction: it cannot be gone.
  if (!loaded.has_value()) return absl::InternalError(absl::StrCat("build ", chosen, " vanished"));
  Row row = *std::move(loaded);
  TLB_RETURN_IF_ERROR(Record(db, events, row.run_id, row.build, {}, now_ms));
  return std::optional<v1::KernelBuild>(std::move(row.build));
}

absl::StatusOr<ProgressResult> Progress(Database& db, EventBatch& events,
                                        const std::string& agent_id,
                                        const v1::BuildProgress& progress, int64_t now_ms) {
  ProgressResult result;
  TLB_ASSIGN_OR_RETURN(std::optional<Row> row, LoadRow(db, progress.task_id()));
  if (!row.has_value() || row->build.state() != "building" || row->agent_id != agent_id) {
    return result;
  }
  result.accepted = true;
  result.run_id = row->run_id;
  const bool resolved_now = !progress.commit().empty() && row->build.commit().empty();
  if (!progress.commit().empty()) {
    TLB_ASSIGN_OR_RETURN(Statement u,
                         db.Prepare("UPDATE builds SET commit_hash = ?2, subject = ?3, author = ?4"
                                    " WHERE id = ?1"));
    TLB_RETURN_IF_ERROR(u.Bind(1, progress.task_id())
                            .Bind(2, progress.commit())
                            .Bind(3, progress.subject())
                            .Bind(4, progress.author())
                            .Run());
    row->build.set_commit(progress.commit());
  }
  TLB_RETURN_IF_ERROR(AppendLog(db, progress.task_id(), progress));
  if (resolved_now || !progress.log_lines().empty()) {
    TLB_RETURN_IF_ERROR(Record(db, events, row->run_id, row->build,
                               {progress.log_lines().begin(), progress.log_lines().end()}, now_ms));
  }
  if (resolved_now) {
    TLB_ASSIGN_OR_RETURN(
        Statement q,
        db.Prepare(absl::StrCat("SELECT ", kBuildColumns,
                                " FROM builds WHERE source = ?1 AND config = ?2 AND"
                                " commit_hash = ?3 AND revert = ?5 AND state = 'succeeded'"
                                " AND artifact_id <> '' AND id <> ?4 ORDER BY id DESC LIMIT 1")));
    q.Bind(1, row->build.kernel().source())
        .Bind(2, row->build.kernel().config())
        .Bind(3, progress.commit())
        .Bind(4, progress.task_id())
        .Bind(5, row->build.kernel().revert());
    TLB_ASSIGN_OR_RETURN(bool found, q.Step());
    if (found) result.reusable = BuildFromRow(q).build;
  }
  return result;
}

absl::StatusOr<CompleteResult> Complete(Database& db, EventBatch& events,
                                        const std::string& agent_id,
                                        const v1::BuildComplete& complete, int64_t now_ms) {
  CompleteResult result;
  TLB_ASSIGN_OR_RETURN(std::optional<Row> row, LoadRow(db, complete.task_id()));
  if (!row.has_value() || row->build.state() != "building" || row->agent_id != agent_id) {
    return result;
  }
  result.accepted = true;
  const int64_t task = complete.task_id();
  TLB_ASSIGN_OR_RETURN(
      Statement u,
      db.Prepare("UPDATE builds SET commit_hash = CASE WHEN ?2 = '' THEN commit_hash ELSE ?2 END,"
                 " subject = CASE WHEN ?3 = '' THEN subject ELSE ?3 END,"
                 " author = CASE WHEN ?4 = '' THEN author ELSE ?4 END,"
                 " artifact_id = ?5, build_id = ?6, kernel_release = ?7 WHERE id = ?1"));
  TLB_RETURN_IF_ERROR(u.Bind(1, task)
                          .Bind(2, complete.commit())
                          .Bind(3, complete.subject())
                          .Bind(4, complete.author())
                          .Bind(5, complete.artifact_id())
                          .Bind(6, complete.build_id())
                          .Bind(7, complete.kernel_release())
                          .Run());
  std::string reason = complete.reason();
  switch (complete.status()) {
    case v1::BUILD_STATUS_SUCCEEDED: {
      if (complete.artifact_id().empty() || complete.build_id().empty() ||
          complete.kernel_release().empty()) {
        // A builder that says it succeeded without an artifact cannot be booted from.
        TLB_ASSIGN_OR_RETURN(result.build,
                             SetState(db, events, task, "failed",
                                      "the builder reported success without an artifact, build"
                                      " id and kernel release",
                                      now_ms));
        TLB_RETURN_IF_ERROR(FailRunFor(db, events, row->run_id, result.build, result, now_ms));
        return result;
      }
      TLB_ASSIGN_OR_RETURN(result.build, SetState(db, events, task, "succeeded", "", now_ms));
      return result;
    }
    case v1::BUILD_STATUS_FAILED:
    case v1::BUILD_STATUS_BAD_REVISION: {
      if (reason.empty()) reason = "the build failed (no reason given)";
      TLB_ASSIGN_OR_RETURN(result.build, SetState(db, events, task, "failed", reason, now_ms));
      TLB_RETURN_IF_ERROR(FailRunFor(db, events, row->run_id, result.build, result, now_ms));
      return result;
    }
    default: {
      // The builder could not build it (disk full, busy, cancelled under it): another try,
      // perhaps on another builder, unless it has had its tries.
      if (reason.empty()) reason = "the builder could not build it";
      const std::string why = absl::StrCat("on ", row->build.builder(), ": ", reason);
      if (row->attempts >= kMaxBuildAttempts) {
        TLB_ASSIGN_OR_RETURN(
            result.build, SetState(db, events, task, "failed",
                                   absl::StrCat(why, " (", row->attempts, " attempts)"), now_ms));
        TLB_RETURN_IF_ERROR(FailRunFor(db, events, row->run_id, result.build, result, now_ms));
        return result;
      }
      result.requeued = true;
      TLB_ASSIGN_OR_RETURN(result.build, SetState(db, events, task, "queued", why, now_ms));
      return result;
    }
  }
}

absl::StatusOr<CompleteResult> Reuse(Database& db, EventBatch& events, int64_t task_id,
                                     const v1::KernelBuild& from, int64_t now_ms) {
  CompleteResult result;
  result.accepted = true;
  TLB_ASSIGN_OR_RETURN(Statement u,
                       db.Prepare("UPDATE builds SET artifact_id = ?2, build_id = ?3,"
                                  " kernel_release = ?4, reused = 1, agent_id = '' WHERE id = ?1"
                                  " AND state IN ('queued', 'building')"));
  TLB_RETURN_IF_ERROR(u.Bind(1, task_id)
                          .Bind(2, from.artifact_id())
                          .Bind(3, from.build_id())
                          .Bind(4, from.kernel_release())
                          .Run());
  if (db.Changes() == 0) {
    result.accepted = false;
    return result;
  }
  TLB_ASSIGN_OR_RETURN(result.build,
                       SetState(db, events, task_id, "succeeded",
                                absl::StrCat("built already by build ", from.task_id()), now_ms));
  return result;
}

absl::StatusOr<std::vector<int64_t>> Release(Database& db, EventBatch& events,
                                             const std::string& agent_id, const std::string& reason,
                                             int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare("SELECT id, agent_id FROM builds WHERE state = 'building'"
                                  " AND (?1 = '' OR agent_id = ?1) ORDER BY id"));
  q.Bind(1, agent_id);
  std::vector<std::pair<int64_t, std::string>> building;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    building.emplace_back(q.Int(0), q.Text(1));
  }
  std::vector<int64_t> released;
  for (const auto& [task, holder] : building) {
    v1::BuildComplete lost;
    lost.set_task_id(task);
    lost.set_status(v1::BUILD_STATUS_HOST_FAILED);
    lost.set_reason(reason);
    TLB_ASSIGN_OR_RETURN(CompleteResult r, Complete(db, events, holder, lost, now_ms));
    if (r.accepted) released.push_back(task);
  }
  return released;
}

absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> CancelOfRun(
    Database& db, EventBatch& events, int64_t run_id, const std::string& reason, int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare("SELECT id, state, agent_id FROM builds WHERE run_id = ?1"
                                  " AND state IN ('queued', 'building') ORDER BY id"));
  q.Bind(1, run_id);
  std::vector<std::pair<int64_t, std::pair<std::string, std::string>>> open;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    open.push_back({q.Int(0), {q.Text(1), q.Text(2)}});
  }
  std::vector<std::pair<std::string, int64_t>> building;
  for (const auto& [task, state_agent] : open) {
    if (state_agent.first == "building") building.emplace_back(state_agent.second, task);
    TLB_ASSIGN_OR_RETURN(v1::KernelBuild b,
                         SetState(db, events, task, "cancelled", reason, now_ms));
    (void)b;
  }
  return building;
}

absl::StatusOr<bool> Unfinished(Database& db, int64_t run_id) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("SELECT 1 FROM builds WHERE run_id = ?1"
                                               " AND state <> 'succeeded' LIMIT 1"));
  q.Bind(1, run_id);
  return q.Step();
}

absl::StatusOr<std::optional<v1::KernelBuild>> ForEntry(Database& db, const std::string& entry) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare(absl::StrCat("SELECT ", kBuildColumns,
                                                            " FROM builds WHERE boot_entry = ?1")));
  q.Bind(1, entry);
  TLB_ASSIGN_OR_RETURN(bool found, q.Step());
  if (!found) return std::optional<v1::KernelBuild>();
  return std::optional<v1::KernelBuild>(BuildFromRow(q).build);
}

absl::StatusOr<std::vector<std::string>> LogLines(Database& db, int64_t task_id) {
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare("SELECT line FROM build_log WHERE build = ?1 ORDER BY seq"));
  q.Bind(1, task_id);
  std::vector<std::string> lines;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    lines.push_back(q.Text(0));
  }
  return lines;
}

v1::KernelToBoot KernelToBootOf(const v1::KernelBuild& build) {
  v1::KernelToBoot k;
  k.set_artifact_id(build.artifact_id());
  k.set_build_id(build.build_id());
  k.set_kernel_release(build.kernel_release());
  k.set_commit(build.commit());
  k.set_source(build.kernel().source());
  k.set_config(build.kernel().config());
  return k;
}

}  // namespace tlbfleet::store::builds
