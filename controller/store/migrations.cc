#include "controller/store/migrations.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace tlbfleet::store {

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, "hosts, runs, jobs, host slots, samples", R"sql(
CREATE TABLE hosts (
  agent_id      TEXT PRIMARY KEY,
  hostname      TEXT NOT NULL,
  info          BLOB NOT NULL,            -- serialized tlbfleet.v1.HostInfo
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms  INTEGER NOT NULL
);
CREATE TABLE runs (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  name        TEXT NOT NULL,
  benchmark   TEXT NOT NULL,
  spec        BLOB NOT NULL,              -- serialized tlbfleet.v1.RunSpec
  spec_yaml   TEXT NOT NULL,
  state       TEXT NOT NULL CHECK (state IN ('queued','running','succeeded','failed','cancelled')),
  error       TEXT NOT NULL DEFAULT '',
  created_ms  INTEGER NOT NULL,
  finished_ms INTEGER
);
CREATE TABLE jobs (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- also the dispatch order within a run
  run_id           INTEGER NOT NULL REFERENCES runs(id),
  slot             INTEGER NOT NULL,
  arm              TEXT NOT NULL,
  param_name       TEXT NOT NULL,
  param_value      TEXT NOT NULL,
  iteration        INTEGER NOT NULL,
  assignment       BLOB NOT NULL,         -- tlbfleet.v1.JobAssignment without lease fields
  state            TEXT NOT NULL CHECK (state IN ('queued','leased','succeeded','failed','cancelled')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  lease_id         TEXT UNIQUE,
  agent_id         TEXT,
  lease_expires_ms INTEGER,
  error            TEXT NOT NULL DEFAULT '',
  finished_ms      INTEGER
);
CREATE INDEX jobs_by_run_state ON jobs(run_id, state);
-- Which host took which slot of a run: one host per slot, one slot per host.
CREATE TABLE run_slots (
  run_id   INTEGER NOT NULL REFERENCES runs(id),
  slot     INTEGER NOT NULL,
  agent_id TEXT NOT NULL,
  PRIMARY KEY (run_id, slot),
  UNIQUE (run_id, agent_id)
);
CREATE TABLE samples (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id          INTEGER NOT NULL REFERENCES runs(id),
  job_id          INTEGER NOT NULL REFERENCES jobs(id),
  lease_id        TEXT NOT NULL,
  seq             INTEGER NOT NULL,
  arm             TEXT NOT NULL,
  param_name      TEXT NOT NULL,
  param_value     TEXT NOT NULL,
  iteration       INTEGER NOT NULL,
  metric          TEXT NOT NULL,
  series          TEXT NOT NULL,
  value           REAL NOT NULL,
  unit            TEXT NOT NULL,
  better          INTEGER NOT NULL,
  agent_id        TEXT NOT NULL,
  host            TEXT NOT NULL,
  boot_id         TEXT NOT NULL,
  kernel_release  TEXT NOT NULL,
  kernel_cmdline  TEXT NOT NULL,
  microarch       TEXT NOT NULL,
  ceiling_applied INTEGER NOT NULL,
  ceiling         INTEGER,
  UNIQUE (lease_id, seq)                  -- replays after a reconnect are ignored
);
)sql"},
      {2, "index samples for per-run reads and comparisons", R"sql(
CREATE INDEX samples_by_run ON samples(run_id, metric, param_value, arm);
CREATE INDEX samples_by_job ON samples(job_id);
)sql"},
      {3, "runs whose sweep depends on the host: expanded slot by slot", R"sql(
ALTER TABLE runs ADD COLUMN expand_on_bind INTEGER NOT NULL DEFAULT 0;
-- The sweep each expanded slot of such a run was computed for ("threads=1,2,4,8"). A host
-- may take over a slot only if its own sweep is the same, or if nothing of the slot ran yet.
CREATE TABLE slot_expansions (
  run_id INTEGER NOT NULL REFERENCES runs(id),
  slot   INTEGER NOT NULL,
  basis  TEXT NOT NULL,
  PRIMARY KEY (run_id, slot)
);
)sql"},
      {4, "boots per arm, adaptive runs, why a run stopped", R"sql(
ALTER TABLE jobs ADD COLUMN boot_index INTEGER NOT NULL DEFAULT 0;
-- The plan so far: an adaptive run grows these as it adds iterations and boots.
ALTER TABLE runs ADD COLUMN iterations_per_boot INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN boots INTEGER NOT NULL DEFAULT 1;
ALTER TABLE runs ADD COLUMN adaptive_rounds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN stop_reason TEXT NOT NULL DEFAULT '';
-- Which boot of its host each boot index of a slot ran on: jobs of one boot index run on one
-- boot, and a boot serves one boot index only, so a host reboots between boot indexes.
CREATE TABLE slot_boots (
  run_id     INTEGER NOT NULL REFERENCES runs(id),
  slot       INTEGER NOT NULL,
  boot_index INTEGER NOT NULL,
  boot_id    TEXT NOT NULL,
  PRIMARY KEY (run_id, slot, boot_index)
);
)sql"},
  };
  return kMigrations;
}

int LatestSchemaVersion() { return Migrations().back().version; }

absl::StatusOr<int> SchemaVersion(Database& db) {
  absl::StatusOr<Statement> stmt = db.Prepare("PRAGMA user_version");
  if (!stmt.ok()) return stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  return static_cast<int>(stmt->Int(0));
}

absl::Status Migrate(Database& db, int target) {
  if (target < 0) target = LatestSchemaVersion();
  absl::StatusOr<int> current = SchemaVersion(db);
  if (!current.ok()) return current.status();
  if (*current > LatestSchemaVersion()) {
    return absl::FailedPreconditionError(
        absl::StrCat("database schema version ", *current, " is newer than this controller (",
                     LatestSchemaVersion(), "); upgrade tlbfleet-controller"));
  }
  for (const Migration& m : Migrations()) {
    if (m.version <= *current || m.version > target) continue;
    absl::Status s = InTransaction(db, [&] {
      absl::Status applied = db.Exec(m.sql);
      if (!applied.ok()) return applied;
      return db.Exec(absl::StrCat("PRAGMA user_version = ", m.version));
    });
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("migration ", m.version, " (",
                                                 std::string(m.description), "): ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace tlbfleet::store
