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
      {5,
       "job and sample counts on the run row, indexes for dispatch, run events, agent principals",
       R"sql(
-- Counts kept on the run row, so that reading, listing and finishing a run never recounts its
-- jobs and samples. Job counts follow every change of jobs.state through the triggers below;
-- the sample count is kept by the store where samples are stored and discarded.
ALTER TABLE runs ADD COLUMN jobs_total INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN jobs_queued INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN jobs_leased INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN jobs_succeeded INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN jobs_failed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN jobs_cancelled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN samples INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET
  jobs_total = (SELECT COUNT(*) FROM jobs j WHERE j.run_id = runs.id),
  jobs_queued = (SELECT COUNT(*) FROM jobs j WHERE j.run_id = runs.id AND j.state = 'queued'),
  jobs_leased = (SELECT COUNT(*) FROM jobs j WHERE j.run_id = runs.id AND j.state = 'leased'),
  jobs_succeeded =
    (SELECT COUNT(*) FROM jobs j WHERE j.run_id = runs.id AND j.state = 'succeeded'),
  jobs_failed = (SELECT COUNT(*) FROM jobs j WHERE j.run_id = runs.id AND j.state = 'failed'),
  jobs_cancelled =
    (SELECT COUNT(*) FROM jobs j WHERE j.run_id = runs.id AND j.state = 'cancelled'),
  samples = (SELECT COUNT(*) FROM samples s WHERE s.run_id = runs.id);
CREATE TRIGGER jobs_counted_on_insert AFTER INSERT ON jobs BEGIN
  UPDATE runs SET jobs_total = jobs_total + 1,
    jobs_queued = jobs_queued + (NEW.state = 'queued'),
    jobs_leased = jobs_leased + (NEW.state = 'leased'),
    jobs_succeeded = jobs_succeeded + (NEW.state = 'succeeded'),
    jobs_failed = jobs_failed + (NEW.state = 'failed'),
    jobs_cancelled = jobs_cancelled + (NEW.state = 'cancelled')
  WHERE id = NEW.run_id;
END;
CREATE TRIGGER jobs_counted_on_update AFTER UPDATE OF state ON jobs
WHEN OLD.state <> NEW.state BEGIN
  UPDATE runs SET
    jobs_queued = jobs_queued + (NEW.state = 'queued') - (OLD.state = 'queued'),
    jobs_leased = jobs_leased + (NEW.state = 'leased') - (OLD.state = 'leased'),
    jobs_succeeded = jobs_succeeded + (NEW.state = 'succeeded') - (OLD.state = 'succeeded'),
    jobs_failed = jobs_failed + (NEW.state = 'failed') - (OLD.state = 'failed'),
    jobs_cancelled = jobs_cancelled + (NEW.state = 'cancelled') - (OLD.state = 'cancelled')
  WHERE id = NEW.run_id;
END;
CREATE TRIGGER jobs_counted_on_delete AFTER DELETE ON jobs BEGIN
  UPDATE runs SET jobs_total = jobs_total - 1,
    jobs_queued = jobs_queued - (OLD.state = 'queued'),
    jobs_leased = jobs_leased - (OLD.state = 'leased'),
    jobs_succeeded = jobs_succeeded - (OLD.state = 'succeeded'),
    jobs_failed = jobs_failed - (OLD.state = 'failed'),
    jobs_cancelled = jobs_cancelled - (OLD.state = 'cancelled')
  WHERE id = OLD.run_id;
END;
-- Lease expiry and "which lease does this agent hold" look only at leased jobs.
CREATE INDEX jobs_leased_by_expiry ON jobs(lease_expires_ms) WHERE state = 'leased';
CREATE INDEX jobs_leased_by_agent ON jobs(agent_id) WHERE state = 'leased';
-- Dispatch reads the active runs; old finished runs pile up.
CREATE INDEX runs_by_state ON runs(state);
-- What happened to each run (tlbfleet.v1.RunEvent), for live progress and its replay. The id
-- increases across the controller and is never reused (AUTOINCREMENT).
CREATE TABLE run_events (
  id      INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id  INTEGER NOT NULL REFERENCES runs(id),
  time_ms INTEGER NOT NULL,
  event   BLOB NOT NULL                   -- serialized tlbfleet.v1.RunEvent, without its id
);
CREATE INDEX run_events_by_run ON run_events(run_id, id);
-- The authenticated principal that first registered the agent id ('' = not bound yet).
ALTER TABLE hosts ADD COLUMN principal TEXT NOT NULL DEFAULT '';
)sql"},
      {6, "samples: the ceiling observed throughout the workload, the netperf peer", R"sql(
-- ceiling now holds the value the agent read before, during and after the workload whenever
-- it could (ceiling_observed = 1), also when the arm set none (ceiling_applied = 0).
ALTER TABLE samples ADD COLUMN ceiling_observed INTEGER NOT NULL DEFAULT 0;
-- The hostname of a `server: peer` netperf job's peer.
ALTER TABLE samples ADD COLUMN peer_host TEXT NOT NULL DEFAULT '';
)sql"},
      {7, "reboot requests and peer reservations survive a restart; dispatch index", R"sql(
-- The agent whose netserver serves this lease's job (a parameter resolved to a peer), while
-- the job is leased: the reservation is rebuilt from here after a controller restart.
ALTER TABLE jobs ADD COLUMN peer_agent_id TEXT;
-- Hosts the controller asked for a fresh boot and has not seen back on another boot yet
-- (controller/core/reboots.h).
CREATE TABLE reboot_requests (
  agent_id     TEXT PRIMARY KEY,
  run_id       INTEGER NOT NULL,
  boot_id      TEXT NOT NULL,           -- the boot the host was asked to leave
  times        INTEGER NOT NULL,        -- requests that found it still on that boot
  pending      INTEGER NOT NULL,
  requested_ms INTEGER NOT NULL,
  deadline_ms  INTEGER NOT NULL,        -- still up on boot_id after this: the reboot failed
  return_by_ms INTEGER NOT NULL         -- not back on another boot by this: the host is lost
);
-- Dispatch looks for the first queued job of a run, of one of its slots, of one boot index,
-- and for the slots that still have queued jobs: only queued jobs, in dispatch order.
CREATE INDEX jobs_queued_by_slot ON jobs(run_id, slot, boot_index, id) WHERE state = 'queued';
)sql"},
      {8, "API tokens, browser sessions, the audit log (controller/store/auth_store.h)", R"sql(
-- A token is "tlbf_<id>_<secret>"; only a salted SHA-256 of the secret is stored.
CREATE TABLE api_tokens (
  id           TEXT PRIMARY KEY,
  name         TEXT NOT NULL UNIQUE,
  role         TEXT NOT NULL CHECK (role IN ('viewer','operator','admin','agent')),
  salt         BLOB NOT NULL,
  hash         BLOB NOT NULL,
  created_ms   INTEGER NOT NULL,
  expires_ms   INTEGER,
  revoked_ms   INTEGER,
  last_used_ms INTEGER
);
-- Browser sessions: keyed by a SHA-256 of the cookie's value, never the value itself.
CREATE TABLE sessions (
  id_hash    BLOB PRIMARY KEY,
  token_id   TEXT NOT NULL REFERENCES api_tokens(id),
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  source     TEXT NOT NULL
);
CREATE INDEX sessions_by_expiry ON sessions(expires_ms);
CREATE INDEX sessions_by_token ON sessions(token_id);
-- Every mutating request: who, what, when, from where, and how it ended.
CREATE TABLE audit (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  time_ms   INTEGER NOT NULL,
  principal TEXT NOT NULL,
  role      TEXT NOT NULL,
  action    TEXT NOT NULL,
  target    TEXT NOT NULL,
  source    TEXT NOT NULL,
  outcome   TEXT NOT NULL,
  detail    TEXT NOT NULL
);
)sql"},
      {9, "indexes for the filtered run list (controller/store/run_query.h)", R"sql(
CREATE INDEX runs_by_benchmark ON runs(benchmark, id);
-- Keyset paging within a state (migration 5's runs_by_state has no id).
CREATE INDEX runs_by_state_and_id ON runs(state, id);
CREATE INDEX runs_by_created ON runs(created_ms);
CREATE INDEX jobs_by_agent ON jobs(agent_id, run_id);
)sql"},
      {10, "boot entries: the entry of each sample's boot, reboots asked for into an entry",
       R"sql(
ALTER TABLE samples ADD COLUMN boot_entry TEXT NOT NULL DEFAULT '';
-- A run whose arms name boot entries runs each boot index on a boot the controller asked for,
-- into that index's entry: the request, until a new boot of the slot's host claims it.
CREATE TABLE slot_boot_requests (
  run_id       INTEGER NOT NULL REFERENCES runs(id),
  slot         INTEGER NOT NULL,
  boot_index   INTEGER NOT NULL,
  boot_entry   TEXT NOT NULL,
  from_boot_id TEXT NOT NULL,             -- the boot the host was asked to leave
  PRIMARY KEY (run_id, slot)
);
)sql"},
      {11, "nightly: schedules, the runs they and bisections start, series, regressions, bisects",
       R"sql(
CREATE TABLE schedules (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  name         TEXT NOT NULL UNIQUE,
  spec         BLOB NOT NULL,             -- serialized tlbfleet.v1.ScheduleSpec
  spec_yaml    TEXT NOT NULL,
  paused       INTEGER NOT NULL DEFAULT 0,
  created_ms   INTEGER NOT NULL,
  -- The latest slot handled: set in the transaction that records the submission of its run,
  -- so a crash can neither lose a night nor run it twice.
  last_slot_ms INTEGER NOT NULL,
  last_run_id  TEXT NOT NULL DEFAULT '',
  runs         INTEGER NOT NULL DEFAULT 0
);
-- Runs the controller starts on its own (a schedule's slot, a bisection's round). The row is
-- written before the run is submitted, under the run's unique name, and gets the run id after:
-- after a crash in between, the run is found by its name or submitted then, never twice.
CREATE TABLE nightly_submissions (
  name       TEXT PRIMARY KEY,
  owner      TEXT NOT NULL,               -- 'schedule:<id>' | 'bisect:<id>'
  spec_yaml  TEXT NOT NULL,
  run_id     TEXT NOT NULL DEFAULT '',
  created_ms INTEGER NOT NULL
);
CREATE INDEX nightly_submissions_by_run ON nightly_submissions(run_id);
CREATE TABLE series (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  microarch  TEXT NOT NULL,
  boot_entry TEXT NOT NULL,
  benchmark  TEXT NOT NULL,
  config     TEXT NOT NULL,
  param      TEXT NOT NULL,
  metric     TEXT NOT NULL,
  better     INTEGER NOT NULL,
  UNIQUE (microarch, boot_entry, benchmark, config, param, metric)
);
CREATE TABLE series_points (
  series_id   INTEGER NOT NULL REFERENCES series(id),
  run_id      TEXT NOT NULL,
  finished_ms INTEGER NOT NULL,
  point       BLOB NOT NULL,              -- serialized tlbfleet.v1.SeriesPoint
  PRIMARY KEY (series_id, run_id)
);
-- Finished runs whose points were appended (or that had none to give), so that a restart
-- appends the runs that finished while it was down, and no run twice.
CREATE TABLE nightly_runs_seen (
  run_id  TEXT PRIMARY KEY,
  seen_ms INTEGER NOT NULL
);
-- Change points already judged final: regressions (with their row) and improvements.
CREATE TABLE series_findings (
  series_id     INTEGER NOT NULL REFERENCES series(id),
  first_bad_run TEXT NOT NULL,
  kind          TEXT NOT NULL CHECK (kind IN ('regression', 'improvement')),
  PRIMARY KEY (series_id, first_bad_run)
);
CREATE TABLE regressions (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  series_id   INTEGER NOT NULL REFERENCES series(id),
  status      TEXT NOT NULL CHECK (status IN ('open', 'acknowledged', 'fixed')),
  regression  BLOB NOT NULL,              -- serialized tlbfleet.v1.Regression (without id)
  created_ms  INTEGER NOT NULL,
  updated_ms  INTEGER NOT NULL
);
CREATE INDEX regressions_by_status ON regressions(status);
CREATE TABLE bisects (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  status     TEXT NOT NULL,
  state      BLOB NOT NULL,               -- serialized tlbfleet.v1.BisectState
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE INDEX bisects_by_status ON bisects(status);
)sql"},
      {12, "dispatch: the first queued job of a slot in one seek", R"sql(
-- Leasing takes the lowest queued id of the agent's slot (controller/store/dispatch.cc,
-- FirstQueuedOfSlot). jobs_queued_by_slot orders by boot index first, so that took a scan
-- of every queued job of the slot, rows and all.
CREATE INDEX jobs_queued_by_slot_id ON jobs(run_id, slot, id) WHERE state = 'queued';
)sql"},
      {13, "samples: deduplicated per job, without a random-order index or AUTOINCREMENT",
       R"sql(
-- Ingest inserts every sample into the table and each of its indexes: UNIQUE (lease_id, seq),
-- samples_by_job and samples_by_run, and AUTOINCREMENT updated sqlite_sequence per row.
-- One index on (job_id, lease_id, seq) does the work of the first two: it still refuses a
-- replayed sample (a lease belongs to one job), and it serves the foreign key from jobs.
-- Nothing refers to a sample's id, so AUTOINCREMENT's promise never to reuse one bought
-- nothing. The copy takes a while on a large database, once.
CREATE TABLE samples_v13 (
  id               INTEGER PRIMARY KEY,
  run_id           INTEGER NOT NULL REFERENCES runs(id),
  job_id           INTEGER NOT NULL REFERENCES jobs(id),
  lease_id         TEXT NOT NULL,
  seq              INTEGER NOT NULL,
  arm              TEXT NOT NULL,
  param_name       TEXT NOT NULL,
  param_value      TEXT NOT NULL,
  iteration        INTEGER NOT NULL,
  metric           TEXT NOT NULL,
  series           TEXT NOT NULL,
  value            REAL NOT NULL,
  unit             TEXT NOT NULL,
  better           INTEGER NOT NULL,
  agent_id         TEXT NOT NULL,
  host             TEXT NOT NULL,
  boot_id          TEXT NOT NULL,
  kernel_release   TEXT NOT NULL,
  kernel_cmdline   TEXT NOT NULL,
  microarch        TEXT NOT NULL,
  ceiling_applied  INTEGER NOT NULL,
  ceiling          INTEGER,
  ceiling_observed INTEGER NOT NULL DEFAULT 0,
  peer_host        TEXT NOT NULL DEFAULT '',
  boot_entry       TEXT NOT NULL DEFAULT ''
);
INSERT INTO samples_v13(id, run_id, job_id, lease_id, seq, arm, param_name, param_value,
    iteration, metric, series, value, unit, better, agent_id, host, boot_id, kernel_release,
    kernel_cmdline, microarch, ceiling_applied, ceiling, ceiling_observed, peer_host,
    boot_entry)
  SELECT id, run_id, job_id, lease_id, seq, arm, param_name, param_value, iteration, metric,
    series, value, unit, better, agent_id, host, boot_id, kernel_release, kernel_cmdline,
    microarch, ceiling_applied, ceiling, ceiling_observed, peer_host, boot_entry
  FROM samples ORDER BY id;
DROP TABLE samples;
ALTER TABLE samples_v13 RENAME TO samples;
CREATE UNIQUE INDEX samples_by_job_lease ON samples(job_id, lease_id, seq);
CREATE INDEX samples_by_run ON samples(run_id, metric, param_value, arm);
)sql"},
      {14, "samples: what a lease's samples share stored once, the values in one B-tree",
       R"sql(
-- Every sample row repeated what all samples of a lease share: the job's arm, parameter and
-- iteration, the lease and agent ids, and where it ran (host, boot id, kernel release and
-- command line, microarchitecture, peer, boot entry): about 300 bytes of a real agent's
-- sample, written to the table, the WAL and two indexes. sample_sources holds that once per
-- lease (once per distinct provenance, should a lease's samples differ); sample_values holds
-- the rest, keyed by (source, seq) in a table that is its own index: one B-tree insert per
-- sample. The key still refuses a replayed sample (a source belongs to one lease). The view
-- `samples` shows the old columns (all but the row id) for reading.
CREATE TABLE sample_sources (
  id             INTEGER PRIMARY KEY,
  run_id         INTEGER NOT NULL REFERENCES runs(id),
  job_id         INTEGER NOT NULL REFERENCES jobs(id),
  lease_id       TEXT NOT NULL,
  arm            TEXT NOT NULL,
  param_name     TEXT NOT NULL,
  param_value    TEXT NOT NULL,
  iteration      INTEGER NOT NULL,
  agent_id       TEXT NOT NULL,
  host           TEXT NOT NULL,
  boot_id        TEXT NOT NULL,
  kernel_release TEXT NOT NULL,
  kernel_cmdline TEXT NOT NULL,
  microarch      TEXT NOT NULL,
  peer_host      TEXT NOT NULL,
  boot_entry     TEXT NOT NULL
);
CREATE UNIQUE INDEX sample_sources_by_lease ON sample_sources(job_id, lease_id, host, boot_id,
  kernel_release, kernel_cmdline, microarch, peer_host, boot_entry);
CREATE INDEX sample_sources_by_run ON sample_sources(run_id);
CREATE TABLE sample_values (
  source_id        INTEGER NOT NULL REFERENCES sample_sources(id),
  seq              INTEGER NOT NULL,
  metric           TEXT NOT NULL,
  series           TEXT NOT NULL,
  value            REAL NOT NULL,
  unit             TEXT NOT NULL,
  better           INTEGER NOT NULL,
  ceiling_applied  INTEGER NOT NULL,
  ceiling          INTEGER,
  ceiling_observed INTEGER NOT NULL,
  PRIMARY KEY (source_id, seq)
) WITHOUT ROWID;
-- Columns a job or lease fixes (run, arm, parameter, iteration, agent) are taken from any of
-- the group's rows: they are the same in all.
INSERT INTO sample_sources(run_id, job_id, lease_id, arm, param_name, param_value, iteration,
    agent_id, host, boot_id, kernel_release, kernel_cmdline, microarch, peer_host, boot_entry)
  SELECT run_id, job_id, lease_id, arm, param_name, param_value, iteration, agent_id, host,
    boot_id, kernel_release, kernel_cmdline, microarch, peer_host, boot_entry
  FROM samples
  GROUP BY job_id, lease_id, host, boot_id, kernel_release, kernel_cmdline, microarch,
    peer_host, boot_entry
  ORDER BY MIN(id);
-- A plain INSERT: a key collision fails the migration (and rolls it back) rather than drop a
-- sample; samples_by_job_lease made one impossible.
INSERT INTO sample_values(source_id, seq, metric, series, value, unit, better, ceiling_applied,
    ceiling, ceiling_observed)
  SELECT src.id, s.seq, s.metric, s.series, s.value, s.unit, s.better, s.ceiling_applied,
    s.ceiling, s.ceiling_observed
  FROM samples s JOIN sample_sources src ON src.job_id = s.job_id AND src.lease_id = s.lease_id
    AND src.host = s.host AND src.boot_id = s.boot_id AND src.kernel_release = s.kernel_release
    AND src.kernel_cmdline = s.kernel_cmdline AND src.microarch = s.microarch
    AND src.peer_host = s.peer_host AND src.boot_entry = s.boot_entry
  ORDER BY s.id;
DROP TABLE samples;
CREATE VIEW samples AS
  SELECT src.run_id, src.job_id, src.lease_id, v.seq, src.arm, src.param_name, src.param_value,
    src.iteration, v.metric, v.series, v.value, v.unit, v.better, src.agent_id, src.host,
    src.boot_id, src.kernel_release, src.kernel_cmdline, src.microarch, v.ceiling_applied,
    v.ceiling, v.ceiling_observed, src.peer_host, src.boot_entry, v.source_id
  FROM sample_values v JOIN sample_sources src ON src.id = v.source_id;
)sql"},
      {15, "a slot is one machine: its binding names the machine, abandoned work is kept apart",
       R"sql(
-- A slot is bound to one agent for the whole run, and to the machine that agent reported when
-- it took the slot; a lost host's slot is never handed to another agent (issue 26). Slots
-- bound before this migration have no machine id: the agent id alone decides.
ALTER TABLE run_slots ADD COLUMN machine_id TEXT NOT NULL DEFAULT '';
ALTER TABLE run_slots ADD COLUMN hostname TEXT NOT NULL DEFAULT '';
ALTER TABLE run_slots ADD COLUMN bound_ms INTEGER NOT NULL DEFAULT 0;
-- Why a finished job (and its samples) no longer counts: its slot was restarted after its host
-- was lost, or its boot ended before the boot's jobs were done. '' = it counts. Such a job
-- stays 'succeeded' (the run's job counts include it); a queued copy measures it again.
ALTER TABLE jobs ADD COLUMN abandoned TEXT NOT NULL DEFAULT '';
-- One row per piece of work measured again: a whole slot (boot_index -1) or one boot of it.
CREATE TABLE abandoned_work (
  id         INTEGER PRIMARY KEY,
  run_id     INTEGER NOT NULL REFERENCES runs(id),
  slot       INTEGER NOT NULL,
  boot_index INTEGER NOT NULL,
  agent_id   TEXT NOT NULL,
  hostname   TEXT NOT NULL,
  machine_id TEXT NOT NULL,
  boot_id    TEXT NOT NULL,
  jobs       INTEGER NOT NULL,
  samples    INTEGER NOT NULL,
  reason     TEXT NOT NULL,
  time_ms    INTEGER NOT NULL
);
CREATE INDEX abandoned_work_by_run ON abandoned_work(run_id, id);
)sql"},
      {16, "kernels built from source: a run's builds and their logs", R"sql(
-- One build per arm of a run that names `kernel:` (docs/kernels.md). boot_entry is the arm's
-- boot entry, named by the controller ("kernel-<id>"); a sample's boot entry names its build.
CREATE TABLE builds (
  id             INTEGER PRIMARY KEY,
  run_id         INTEGER NOT NULL REFERENCES runs(id),
  arm            TEXT NOT NULL,
  boot_entry     TEXT NOT NULL UNIQUE,
  source         TEXT NOT NULL,
  rev            TEXT NOT NULL,
  config         TEXT NOT NULL,
  revert         TEXT NOT NULL DEFAULT '',
  state          TEXT NOT NULL DEFAULT 'queued',
  agent_id       TEXT NOT NULL DEFAULT '',
  builder        TEXT NOT NULL DEFAULT '',
  attempts       INTEGER NOT NULL DEFAULT 0,
  commit_hash    TEXT NOT NULL DEFAULT '',
  subject        TEXT NOT NULL DEFAULT '',
  author         TEXT NOT NULL DEFAULT '',
  artifact_id    TEXT NOT NULL DEFAULT '',
  build_id       TEXT NOT NULL DEFAULT '',
  kernel_release TEXT NOT NULL DEFAULT '',
  reason         TEXT NOT NULL DEFAULT '',
  reused         INTEGER NOT NULL DEFAULT 0,
  log_lines      INTEGER NOT NULL DEFAULT 0,
  started_ms     INTEGER NOT NULL DEFAULT 0,
  finished_ms    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX builds_by_run ON builds(run_id, id);
CREATE INDEX builds_by_state ON builds(state, id);
CREATE INDEX builds_by_commit ON builds(source, config, commit_hash, revert);
-- How often the slot's host came back from a reboot into boot_entry on a boot that is not
-- that entry (nor one whose check failed): a host that cannot boot it fails the run instead of
-- rebooting for ever.
ALTER TABLE slot_boot_requests ADD COLUMN misses INTEGER NOT NULL DEFAULT 0;
CREATE TABLE build_log (
  build INTEGER NOT NULL REFERENCES builds(id),
  seq   INTEGER NOT NULL,
  line  TEXT NOT NULL,
  PRIMARY KEY (build, seq)
) WITHOUT ROWID;
)sql"},
      {17, "runs imported from mmtests and LKP result directories (controller/store/imports.h)",
       R"sql(
-- One row per imported run: the digest of the files it was made of, so that importing the same
-- directory again finds the run instead of storing it twice.
CREATE TABLE imported_runs (
  run_id      INTEGER PRIMARY KEY REFERENCES runs(id),
  digest      TEXT NOT NULL UNIQUE,
  format      TEXT NOT NULL,
  source      TEXT NOT NULL,
  imported_ms INTEGER NOT NULL
);
-- What an imported sample's files said of the machine and the kernel build, which a measured
-- sample takes from its agent's host row and the run's builds instead.
CREATE TABLE imported_sources (
  source_id  INTEGER PRIMARY KEY REFERENCES sample_sources(id),
  machine_id TEXT NOT NULL,
  commit_hash TEXT NOT NULL,
  build_id   TEXT NOT NULL
);
)sql"},
      {18, "adaptive runs that stop on verdicts: each row's state, kept across restarts", R"sql(
-- The rows of a stop: verdict run after its latest look (docs/statistics.md#rows-that-stop-on-
-- their-own): a serialized tlbfleet.v1.Run holding only adaptive_rows, so the blob parses
-- straight into a Run. NULL before the first look and for every other run.
ALTER TABLE runs ADD COLUMN adaptive_rows BLOB;
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
