#include "controller/store/nightly_store.h"

#include <algorithm>
#include <charconv>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace tlbfleet::store {
namespace {

constexpr uint32_t kDefaultLimit = 100;

const char* StatusText(v1::RegressionStatus status) {
  switch (status) {
    case v1::REGRESSION_ACKNOWLEDGED:
      return "acknowledged";
    case v1::REGRESSION_FIXED:
      return "fixed";
    default:
      return "open";
  }
}

v1::RegressionStatus StatusFromText(const std::string& text) {
  if (text == "acknowledged") return v1::REGRESSION_ACKNOWLEDGED;
  if (text == "fixed") return v1::REGRESSION_FIXED;
  return v1::REGRESSION_OPEN;
}

constexpr char kScheduleColumns[] =
    "id, spec, spec_yaml, paused, created_ms, last_slot_ms, last_run_id, runs";

absl::StatusOr<v1::Schedule> ScheduleFromRow(const Statement& row) {
  v1::Schedule s;
  s.set_id(absl::StrCat(row.Int(0)));
  TLB_ASSIGN_OR_RETURN(*s.mutable_spec(),
                       ParseBlob<v1::ScheduleSpec>(row, 1, absl::StrCat("schedule ", s.id())));
  s.set_spec_yaml(row.Text(2));
  s.set_paused(row.Int(3) != 0);
  s.set_created_unix(row.Int(4) / 1000);
  s.set_last_slot_unix(row.Int(5) / 1000);
  s.set_last_run_id(row.Text(6));
  s.set_runs(static_cast<uint32_t>(row.Int(7)));
  return s;
}

absl::StatusOr<v1::Schedule> LoadSchedule(Database& db, int64_t id) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare(absl::StrCat("SELECT ", kScheduleColumns,
                                                            " FROM schedules WHERE id = ?1")));
  q.Bind(1, id);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("schedule ", id, " does not exist"));
  return ScheduleFromRow(q);
}

absl::StatusOr<std::optional<Submission>> LoadSubmission(Database& db, const std::string& where,
                                                         const std::string& value) {
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare(absl::StrCat("SELECT name, owner, spec_yaml, run_id FROM"
                                               " nightly_submissions WHERE ",
                                               where, " = ?1")));
  q.Bind(1, value);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return std::optional<Submission>();
  return std::optional<Submission>(Submission{q.Text(0), q.Text(1), q.Text(2), q.Text(3)});
}

absl::StatusOr<v1::SeriesKey> KeyOf(Database& db, int64_t series_id, v1::Better* better) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("SELECT microarch, boot_entry, benchmark, config,"
                                               " param, metric, better FROM series WHERE id = ?1"));
  q.Bind(1, series_id);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("series ", series_id, " does not exist"));
  v1::SeriesKey key;
  key.set_microarch(q.Text(0));
  key.set_boot_entry(q.Text(1));
  key.set_benchmark(q.Text(2));
  key.set_config(q.Text(3));
  key.set_param(q.Text(4));
  key.set_metric(q.Text(5));
  if (better != nullptr) *better = static_cast<v1::Better>(q.Int(6));
  return key;
}

absl::StatusOr<v1::Series> LoadSeries(Database& db, int64_t id, bool with_points) {
  v1::Series series;
  series.set_id(absl::StrCat(id));
  v1::Better better = v1::BETTER_UNSPECIFIED;
  TLB_ASSIGN_OR_RETURN(*series.mutable_key(), KeyOf(db, id, &better));
  series.set_better(better);
  if (!with_points) return series;
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("SELECT run_id, point FROM series_points WHERE"
                                               " series_id = ?1 ORDER BY finished_ms, run_id"));
  q.Bind(1, id);
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    TLB_ASSIGN_OR_RETURN(
        *series.add_points(),
        ParseBlob<v1::SeriesPoint>(q, 1, absl::StrCat("series ", id, " point of run ", q.Text(0))));
  }
  return series;
}

absl::StatusOr<v1::Regression> RegressionFromRow(const Statement& q) {
  TLB_ASSIGN_OR_RETURN(v1::Regression r,
                       ParseBlob<v1::Regression>(q, 1, absl::StrCat("regression ", q.Int(0))));
  r.set_id(absl::StrCat(q.Int(0)));
  r.set_status(StatusFromText(q.Text(2)));
  r.set_updated_unix(q.Int(3) / 1000);
  return r;
}

absl::StatusOr<v1::Regression> LoadRegression(Database& db, int64_t id) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("SELECT id, regression, status, updated_ms FROM"
                                               " regressions WHERE id = ?1"));
  q.Bind(1, id);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("regression ", id, " does not exist"));
  return RegressionFromRow(q);
}

absl::Status StoreRegression(Database& db, int64_t id, const v1::Regression& regression,
                             int64_t now_ms) {
  v1::Regression stored = regression;
  stored.clear_id();
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("UPDATE regressions SET regression = ?2,"
                                               " status = ?3, updated_ms = ?4 WHERE id = ?1"));
  TLB_RETURN_IF_ERROR(q.Bind(1, id)
                          .BindBlob(2, stored.SerializeAsString())
                          .Bind(3, StatusText(regression.status()))
                          .Bind(4, now_ms)
                          .Run());
  if (db.Changes() == 0) {
    return absl::NotFoundError(absl::StrCat("regression ", id, " does not exist"));
  }
  return absl::OkStatus();
}

absl::Status StoreBisect(Database& db, int64_t id, const v1::BisectState& state, int64_t now_ms) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("UPDATE bisects SET state = ?2, status = ?3,"
                                               " updated_ms = ?4 WHERE id = ?1"));
  TLB_RETURN_IF_ERROR(q.Bind(1, id)
                          .BindBlob(2, state.SerializeAsString())
                          .Bind(3, v1::BisectStatus_Name(state.status()))
                          .Bind(4, now_ms)
                          .Run());
  if (db.Changes() == 0) {
    return absl::NotFoundError(absl::StrCat("bisect ", state.id(), " does not exist"));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::BisectState> BisectFromRow(const Statement& q) {
  TLB_ASSIGN_OR_RETURN(v1::BisectState state,
                       ParseBlob<v1::BisectState>(q, 1, absl::StrCat("bisect ", q.Int(0))));
  state.set_id(absl::StrCat(q.Int(0)));
  return state;
}

}  // namespace

absl::StatusOr<int64_t> ParseRowId(const std::string& id, const std::string& field) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), value);
  if (id.empty() || ec != std::errc() || end != id.data() + id.size() || value <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": \"", id, "\" is not an id (a positive integer)"));
  }
  return value;
}

absl::StatusOr<std::unique_ptr<NightlyStore>> NightlyStore::Open(const std::string& path) {
  TLB_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path));
  TLB_ASSIGN_OR_RETURN(Statement probe, db->Prepare("SELECT COUNT(*) FROM schedules"));
  TLB_RETURN_IF_ERROR(probe.Run());
  return std::unique_ptr<NightlyStore>(new NightlyStore(std::move(db)));
}

// --- schedules ----------------------------------------------------------------------------

absl::StatusOr<v1::Schedule> NightlyStore::AddSchedule(const v1::ScheduleSpec& spec,
                                                       const std::string& spec_yaml,
                                                       int64_t now_ms) {
  TLB_RETURN_IF_ERROR(Fault("AddSchedule", /*write=*/true));
  absl::MutexLock lock(&mu_);
  int64_t id = 0;
  TLB_RETURN_IF_ERROR(InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(Statement exists,
                         db_->Prepare("SELECT id FROM schedules WHERE name = ?1"));
    exists.Bind(1, spec.name());
    TLB_ASSIGN_OR_RETURN(bool taken, exists.Step());
    if (taken) {
      return absl::AlreadyExistsError(absl::StrCat("name: a schedule named \"", spec.name(),
                                                   "\" exists already (id ", exists.Int(0), ")"));
    }
    TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("INSERT INTO schedules(name, spec, spec_yaml,"
                                                   " created_ms, last_slot_ms)"
                                                   " VALUES(?1, ?2, ?3, ?4, ?4)"));
    TLB_RETURN_IF_ERROR(q.Bind(1, spec.name())
                            .BindBlob(2, spec.SerializeAsString())
                            .Bind(3, spec_yaml)
                            .Bind(4, now_ms)
                            .Run());
    id = db_->LastInsertId();
    return absl::OkStatus();
  }));
  return LoadSchedule(*db_, id);
}

absl::StatusOr<std::vector<v1::Schedule>> NightlyStore::ListSchedules() {
  TLB_RETURN_IF_ERROR(Fault("ListSchedules", /*write=*/false));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare(absl::StrCat("SELECT ", kScheduleColumns,
                                                              " FROM schedules ORDER BY id")));
  std::vector<v1::Schedule> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    TLB_ASSIGN_OR_RETURN(out.emplace_back(), ScheduleFromRow(q));
  }
  return out;
}

absl::StatusOr<v1::Schedule> NightlyStore::GetSchedule(const std::string& id) {
  TLB_RETURN_IF_ERROR(Fault("GetSchedule", /*write=*/false));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(id, "id"));
  absl::MutexLock lock(&mu_);
  return LoadSchedule(*db_, rid);
}

absl::StatusOr<v1::Schedule> NightlyStore::SetPaused(const std::string& id, bool paused,
                                                     int64_t now_ms) {
  TLB_RETURN_IF_ERROR(Fault("SetPaused", /*write=*/true));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(id, "id"));
  absl::MutexLock lock(&mu_);
  TLB_RETURN_IF_ERROR(InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(v1::Schedule before, LoadSchedule(*db_, rid));
    if (before.paused() == paused) return absl::OkStatus();
    TLB_ASSIGN_OR_RETURN(
        Statement q,
        db_->Prepare(paused ? "UPDATE schedules SET paused = 1 WHERE id = ?1"
                            : "UPDATE schedules SET paused = 0, last_slot_ms = ?2 WHERE id = ?1"));
    q.Bind(1, rid);
    if (!paused) q.Bind(2, now_ms);
    return q.Run();
  }));
  return LoadSchedule(*db_, rid);
}

absl::StatusOr<v1::Schedule> NightlyStore::RemoveSchedule(const std::string& id) {
  TLB_RETURN_IF_ERROR(Fault("RemoveSchedule", /*write=*/true));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(id, "id"));
  absl::MutexLock lock(&mu_);
  v1::Schedule removed;
  TLB_RETURN_IF_ERROR(InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(removed, LoadSchedule(*db_, rid));
    TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("DELETE FROM schedules WHERE id = ?1"));
    return q.Bind(1, rid).Run();
  }));
  return removed;
}

absl::Status NightlyStore::TakeSlot(const std::string& id, int64_t slot_ms,
                                    const Submission& submission, int64_t now_ms) {
  TLB_RETURN_IF_ERROR(Fault("TakeSlot", /*write=*/true));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(id, "id"));
  absl::MutexLock lock(&mu_);
  return InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("UPDATE schedules SET last_slot_ms = ?2"
                                                   " WHERE id = ?1 AND paused = 0"
                                                   " AND last_slot_ms < ?2"));
    TLB_RETURN_IF_ERROR(q.Bind(1, rid).Bind(2, slot_ms).Run());
    if (db_->Changes() == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("schedule ", id, " was removed, paused or already handled that slot"));
    }
    TLB_ASSIGN_OR_RETURN(Statement ins,
                         db_->Prepare("INSERT INTO nightly_submissions(name, owner, spec_yaml,"
                                      " created_ms) VALUES(?1, ?2, ?3, ?4)"));
    return ins.Bind(1, submission.name)
        .Bind(2, submission.owner)
        .Bind(3, submission.spec_yaml)
        .Bind(4, now_ms)
        .Run();
  });
}

// --- submissions --------------------------------------------------------------------------

absl::Status NightlyStore::BeginSubmission(const Submission& submission, int64_t now_ms) {
  TLB_RETURN_IF_ERROR(Fault("BeginSubmission", /*write=*/true));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db_->Prepare("INSERT OR IGNORE INTO nightly_submissions(name, owner,"
                                    " spec_yaml, created_ms) VALUES(?1, ?2, ?3, ?4)"));
  return q.Bind(1, submission.name)
      .Bind(2, submission.owner)
      .Bind(3, submission.spec_yaml)
      .Bind(4, now_ms)
      .Run();
}

absl::StatusOr<std::vector<Submission>> NightlyStore::PendingSubmissions() {
  TLB_RETURN_IF_ERROR(Fault("PendingSubmissions", /*write=*/false));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("SELECT name, owner, spec_yaml, run_id FROM"
                                                 " nightly_submissions WHERE run_id = ''"
                                                 " ORDER BY created_ms, name"));
  std::vector<Submission> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    out.push_back(Submission{q.Text(0), q.Text(1), q.Text(2), q.Text(3)});
  }
  return out;
}

absl::StatusOr<std::optional<Submission>> NightlyStore::SubmissionOfRun(const std::string& run_id) {
  TLB_RETURN_IF_ERROR(Fault("SubmissionOfRun", /*write=*/false));
  absl::MutexLock lock(&mu_);
  return LoadSubmission(*db_, "run_id", run_id);
}

absl::StatusOr<std::optional<Submission>> NightlyStore::SubmissionNamed(const std::string& name) {
  TLB_RETURN_IF_ERROR(Fault("SubmissionNamed", /*write=*/false));
  absl::MutexLock lock(&mu_);
  return LoadSubmission(*db_, "name", name);
}

absl::Status NightlyStore::RecordSubmission(const std::string& name, const std::string& run_id,
                                            const v1::BisectState* bisect, int64_t now_ms) {
  TLB_RETURN_IF_ERROR(Fault("RecordSubmission", /*write=*/true));
  absl::MutexLock lock(&mu_);
  return InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(std::optional<Submission> s, LoadSubmission(*db_, "name", name));
    if (!s.has_value()) {
      return absl::NotFoundError(absl::StrCat("no submission named ", name));
    }
    TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("UPDATE nightly_submissions SET run_id = ?2"
                                                   " WHERE name = ?1"));
    TLB_RETURN_IF_ERROR(q.Bind(1, name).Bind(2, run_id).Run());
    if (absl::StartsWith(s->owner, "schedule:") && s->run_id.empty()) {
      TLB_ASSIGN_OR_RETURN(int64_t sid, ParseRowId(s->owner.substr(9), "owner"));
      // A slot recorded late (its first recording failed) is not the last run when a later
      // slot's run was recorded meanwhile.
      TLB_ASSIGN_OR_RETURN(
          Statement u,
          db_->Prepare("UPDATE schedules SET runs = runs + 1, last_run_id = CASE WHEN EXISTS"
                       " (SELECT 1 FROM nightly_submissions later WHERE later.owner = ?3 AND"
                       " later.run_id NOT IN ('', '-') AND later.created_ms >"
                       " (SELECT created_ms FROM nightly_submissions WHERE name = ?4))"
                       " THEN last_run_id ELSE ?2 END WHERE id = ?1"));
      TLB_RETURN_IF_ERROR(u.Bind(1, sid).Bind(2, run_id).Bind(3, s->owner).Bind(4, name).Run());
    }
    if (bisect != nullptr) {
      TLB_ASSIGN_OR_RETURN(int64_t bid, ParseRowId(bisect->id(), "bisect id"));
      TLB_RETURN_IF_ERROR(StoreBisect(*db_, bid, *bisect, now_ms));
    }
    return absl::OkStatus();
  });
}

// --- series -------------------------------------------------------------------------------

absl::StatusOr<bool> NightlyStore::RunSeen(const std::string& run_id) {
  TLB_RETURN_IF_ERROR(Fault("RunSeen", /*write=*/false));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("SELECT 1 FROM nightly_runs_seen"
                                                 " WHERE run_id = ?1"));
  q.Bind(1, run_id);
  return q.Step();
}

absl::StatusOr<std::vector<std::string>> NightlyStore::AppendRun(
    const std::string& run_id, const std::vector<NewPoint>& points, int64_t now_ms) {
  TLB_RETURN_IF_ERROR(Fault("AppendRun", /*write=*/true));
  absl::MutexLock lock(&mu_);
  std::vector<std::string> touched;
  TLB_RETURN_IF_ERROR(InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(Statement seen, db_->Prepare("INSERT OR IGNORE INTO nightly_runs_seen"
                                                      "(run_id, seen_ms) VALUES(?1, ?2)"));
    TLB_RETURN_IF_ERROR(seen.Bind(1, run_id).Bind(2, now_ms).Run());
    if (db_->Changes() == 0) return absl::OkStatus();  // appended before
    for (const NewPoint& p : points) {
      const v1::SeriesKey& k = p.key;
      TLB_ASSIGN_OR_RETURN(Statement ins,
                           db_->Prepare("INSERT OR IGNORE INTO series(microarch, boot_entry,"
                                        " benchmark, config, param, metric, better)"
                                        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
      TLB_RETURN_IF_ERROR(ins.Bind(1, k.microarch())
                              .Bind(2, k.boot_entry())
                              .Bind(3, k.benchmark())
                              .Bind(4, k.config())
                              .Bind(5, k.param())
                              .Bind(6, k.metric())
                              .Bind(7, static_cast<int64_t>(p.better))
                              .Run());
      TLB_ASSIGN_OR_RETURN(Statement id_q,
                           db_->Prepare("SELECT id FROM series WHERE microarch = ?1 AND"
                                        " boot_entry = ?2 AND benchmark = ?3 AND config = ?4"
                                        " AND param = ?5 AND metric = ?6"));
      id_q.Bind(1, k.microarch())
          .Bind(2, k.boot_entry())
          .Bind(3, k.benchmark())
          .Bind(4, k.config())
          .Bind(5, k.param())
          .Bind(6, k.metric());
      TLB_ASSIGN_OR_RETURN(bool found, id_q.Step());
      if (!found) return absl::InternalError("series row vanished");
      const int64_t series_id = id_q.Int(0);
      TLB_ASSIGN_OR_RETURN(Statement point,
                           db_->Prepare("INSERT OR REPLACE INTO series_points(series_id, run_id,"
                                        " finished_ms, point) VALUES(?1, ?2, ?3, ?4)"));
      TLB_RETURN_IF_ERROR(point.Bind(1, series_id)
                              .Bind(2, run_id)
                              .Bind(3, p.point.finished_unix_ms())
                              .BindBlob(4, p.point.SerializeAsString())
                              .Run());
      const std::string id = absl::StrCat(series_id);
      if (std::find(touched.begin(), touched.end(), id) == touched.end()) touched.push_back(id);
    }
    return absl::OkStatus();
  }));
  return touched;
}

absl::StatusOr<v1::Series> NightlyStore::GetSeries(const std::string& id, bool with_points) {
  TLB_RETURN_IF_ERROR(Fault("GetSeries", /*write=*/false));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(id, "series"));
  absl::MutexLock lock(&mu_);
  return LoadSeries(*db_, rid, with_points);
}

absl::StatusOr<std::vector<v1::Series>> NightlyStore::ListSeries(const std::string& benchmark,
                                                                 const std::string& metric,
                                                                 bool with_points) {
  TLB_RETURN_IF_ERROR(Fault("ListSeries", /*write=*/false));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("SELECT id FROM series WHERE (?1 = '' OR"
                                                 " benchmark = ?1) AND (?2 = '' OR metric = ?2)"
                                                 " ORDER BY id"));
  q.Bind(1, benchmark).Bind(2, metric);
  std::vector<int64_t> ids;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    ids.push_back(q.Int(0));
  }
  std::vector<v1::Series> out;
  for (int64_t id : ids) {
    TLB_ASSIGN_OR_RETURN(out.emplace_back(), LoadSeries(*db_, id, with_points));
  }
  return out;
}

absl::StatusOr<std::set<std::string>> NightlyStore::KnownFindings(const std::string& series_id) {
  TLB_RETURN_IF_ERROR(Fault("KnownFindings", /*write=*/false));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(series_id, "series"));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("SELECT first_bad_run FROM series_findings"
                                                 " WHERE series_id = ?1"));
  q.Bind(1, rid);
  std::set<std::string> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    out.insert(q.Text(0));
  }
  return out;
}

absl::Status NightlyStore::AddImprovement(const std::string& series_id,
                                          const std::string& first_run) {
  TLB_RETURN_IF_ERROR(Fault("AddImprovement", /*write=*/true));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(series_id, "series"));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("INSERT OR IGNORE INTO series_findings("
                                                 "series_id, first_bad_run, kind)"
                                                 " VALUES(?1, ?2, 'improvement')"));
  return q.Bind(1, rid).Bind(2, first_run).Run();
}

// --- regressions --------------------------------------------------------------------------

absl::StatusOr<v1::Regression> NightlyStore::AddRegression(v1::Regression regression,
                                                           int64_t now_ms) {
  TLB_RETURN_IF_ERROR(Fault("AddRegression", /*write=*/true));
  TLB_ASSIGN_OR_RETURN(int64_t series_id, ParseRowId(regression.series_id(), "series_id"));
  regression.clear_id();
  regression.set_status(v1::REGRESSION_OPEN);
  regression.set_created_unix(now_ms / 1000);
  absl::MutexLock lock(&mu_);
  int64_t id = 0;
  TLB_RETURN_IF_ERROR(InTransaction(*db_, [&]() -> absl::Status {
    // A redo after a write whose outcome was unknown: the first one counts.
    TLB_ASSIGN_OR_RETURN(Statement known,
                         db_->Prepare("SELECT kind FROM series_findings WHERE series_id = ?1"
                                      " AND first_bad_run = ?2"));
    known.Bind(1, series_id).Bind(2, regression.first_bad_run());
    TLB_ASSIGN_OR_RETURN(bool found, known.Step());
    if (found) {
      return absl::AlreadyExistsError(absl::StrCat("series ", series_id, " has a ", known.Text(0),
                                                   " at run ", regression.first_bad_run(),
                                                   " already"));
    }
    TLB_ASSIGN_OR_RETURN(Statement finding,
                         db_->Prepare("INSERT INTO series_findings(series_id, first_bad_run,"
                                      " kind) VALUES(?1, ?2, 'regression')"));
    TLB_RETURN_IF_ERROR(finding.Bind(1, series_id).Bind(2, regression.first_bad_run()).Run());
    TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("INSERT INTO regressions(series_id, status,"
                                                   " regression, created_ms, updated_ms)"
                                                   " VALUES(?1, 'open', ?2, ?3, ?3)"));
    TLB_RETURN_IF_ERROR(
        q.Bind(1, series_id).BindBlob(2, regression.SerializeAsString()).Bind(3, now_ms).Run());
    id = db_->LastInsertId();
    return absl::OkStatus();
  }));
  regression.set_id(absl::StrCat(id));
  regression.set_updated_unix(now_ms / 1000);
  return regression;
}

absl::StatusOr<v1::Regression> NightlyStore::GetRegression(const std::string& id) {
  TLB_RETURN_IF_ERROR(Fault("GetRegression", /*write=*/false));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(id, "id"));
  absl::MutexLock lock(&mu_);
  return LoadRegression(*db_, rid);
}

absl::StatusOr<std::vector<v1::Regression>> NightlyStore::ListRegressions(
    const std::vector<v1::RegressionStatus>& statuses, uint32_t limit) {
  TLB_RETURN_IF_ERROR(Fault("ListRegressions", /*write=*/false));
  std::vector<std::string> texts;
  for (v1::RegressionStatus s : statuses) texts.push_back(absl::StrCat("'", StatusText(s), "'"));
  const std::string filter =
      texts.empty() ? "" : absl::StrCat(" WHERE status IN (", absl::StrJoin(texts, ", "), ")");
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db_->Prepare(absl::StrCat("SELECT id, regression, status, updated_ms FROM"
                                                 " regressions",
                                                 filter, " ORDER BY id DESC LIMIT ?1")));
  q.Bind(1, static_cast<int64_t>(limit == 0 ? kDefaultLimit : limit));
  std::vector<v1::Regression> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    TLB_ASSIGN_OR_RETURN(out.emplace_back(), RegressionFromRow(q));
  }
  return out;
}

absl::StatusOr<v1::Regression> NightlyStore::UpdateRegression(const v1::Regression& regression,
                                                              int64_t now_ms) {
  TLB_RETURN_IF_ERROR(Fault("UpdateRegression", /*write=*/true));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(regression.id(), "id"));
  absl::MutexLock lock(&mu_);
  TLB_RETURN_IF_ERROR(StoreRegression(*db_, rid, regression, now_ms));
  v1::Regression out = regression;
  out.set_updated_unix(now_ms / 1000);
  return out;
}

absl::StatusOr<v1::Regression> NightlyStore::SetRegressionStatus(const std::string& id,
                                                                 v1::RegressionStatus status,
                                                                 int64_t now_ms) {
  TLB_RETURN_IF_ERROR(Fault("SetRegressionStatus", /*write=*/true));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(id, "id"));
  absl::MutexLock lock(&mu_);
  v1::Regression r;
  TLB_RETURN_IF_ERROR(InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(r, LoadRegression(*db_, rid));
    r.set_status(status);
    return StoreRegression(*db_, rid, r, now_ms);
  }));
  r.set_updated_unix(now_ms / 1000);
  return r;
}

absl::Status NightlyStore::SetRegressionNote(const std::string& id, const std::string& note,
                                             int64_t now_ms) {
  TLB_RETURN_IF_ERROR(Fault("SetRegressionNote", /*write=*/true));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(id, "id"));
  absl::MutexLock lock(&mu_);
  return InTransaction(*db_, [&]() -> absl::Status {
    TLB_ASSIGN_OR_RETURN(v1::Regression r, LoadRegression(*db_, rid));
    r.set_note(note);
    return StoreRegression(*db_, rid, r, now_ms);
  });
}

absl::StatusOr<uint64_t> NightlyStore::CountRegressions(v1::RegressionStatus status) {
  TLB_RETURN_IF_ERROR(Fault("CountRegressions", /*write=*/false));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("SELECT COUNT(*) FROM regressions"
                                                 " WHERE status = ?1"));
  q.Bind(1, StatusText(status));
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? static_cast<uint64_t>(q.Int(0)) : 0;
}

// --- bisects ------------------------------------------------------------------------------

absl::StatusOr<std::string> NightlyStore::CreateBisect(int64_t now_ms) {
  TLB_RETURN_IF_ERROR(Fault("CreateBisect", /*write=*/true));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("INSERT INTO bisects(status, state, created_ms,"
                                                 " updated_ms) VALUES('', x'', ?1, ?1)"));
  TLB_RETURN_IF_ERROR(q.Bind(1, now_ms).Run());
  return absl::StrCat(db_->LastInsertId());
}

absl::Status NightlyStore::SaveBisect(const v1::BisectState& state, int64_t now_ms) {
  TLB_RETURN_IF_ERROR(Fault("SaveBisect", /*write=*/true));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(state.id(), "id"));
  absl::MutexLock lock(&mu_);
  return StoreBisect(*db_, rid, state, now_ms);
}

absl::Status NightlyStore::SaveBisectAndNoteRegression(const v1::BisectState& state,
                                                       const std::string& note, int64_t now_ms) {
  TLB_RETURN_IF_ERROR(Fault("SaveBisectAndNoteRegression", /*write=*/true));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(state.id(), "id"));
  TLB_ASSIGN_OR_RETURN(int64_t regression_id,
                       ParseRowId(state.spec().regression_id(), "spec.regression_id"));
  absl::MutexLock lock(&mu_);
  return InTransaction(*db_, [&]() -> absl::Status {
    TLB_RETURN_IF_ERROR(StoreBisect(*db_, rid, state, now_ms));
    TLB_ASSIGN_OR_RETURN(v1::Regression r, LoadRegression(*db_, regression_id));
    r.set_bisect_id(state.id());
    r.set_note(note);
    return StoreRegression(*db_, regression_id, r, now_ms);
  });
}

absl::StatusOr<v1::BisectState> NightlyStore::GetBisect(const std::string& id) {
  TLB_RETURN_IF_ERROR(Fault("GetBisect", /*write=*/false));
  TLB_ASSIGN_OR_RETURN(int64_t rid, ParseRowId(id, "id"));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement q, db_->Prepare("SELECT id, state FROM bisects WHERE id = ?1"
                                                 " AND status <> ''"));
  q.Bind(1, rid);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("bisect ", id, " does not exist"));
  return BisectFromRow(q);
}

absl::StatusOr<std::vector<v1::BisectState>> NightlyStore::ListBisects(uint32_t limit,
                                                                       bool running_only) {
  TLB_RETURN_IF_ERROR(Fault("ListBisects", /*write=*/false));
  absl::MutexLock lock(&mu_);
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db_->Prepare(absl::StrCat("SELECT id, state FROM bisects WHERE status ",
                                                 running_only ? "= 'BISECT_RUNNING'" : "<> ''",
                                                 " ORDER BY id DESC LIMIT ?1")));
  q.Bind(1, static_cast<int64_t>(limit == 0 ? kDefaultLimit : limit));
  std::vector<v1::BisectState> out;
  for (;;) {
    TLB_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) break;
    TLB_ASSIGN_OR_RETURN(out.emplace_back(), BisectFromRow(q));
  }
  return out;
}

// --- for tests ----------------------------------------------------------------------------

void NightlyStore::SetFaultsForTest(FaultHookForTest hook) {
  absl::MutexLock lock(&fault_mu_);
  fault_ = std::move(hook);
}

void NightlyStore::FailWritesForTest(absl::Status status) {
  if (status.ok()) {
    SetFaultsForTest(nullptr);
    return;
  }
  SetFaultsForTest([status = std::move(status)](std::string_view, bool write) {
    return write ? status : absl::OkStatus();
  });
}

absl::Status NightlyStore::Fault(std::string_view method, bool write) {
  absl::MutexLock lock(&fault_mu_);
  return fault_ ? fault_(method, write) : absl::OkStatus();
}

}  // namespace tlbfleet::store
