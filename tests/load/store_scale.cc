// The store at scale: listing runs and comparing one run with 10,000 runs and 10 million
// samples in the database (issue 14: both under 100 ms), against the same reads on a small
// database (100 runs) measured in the same process as the reference.
//
//   store_scale --dir DIR [--runs 10000] [--samples-per-run 1000] [--reference-runs 100]
//               [benchmark flags, e.g. --benchmark_repetitions=5]
//   store_scale --seed FILE --run ITERATIONSxSAMPLES_PER_JOB [--run ...]
//
// Seeds DIR/store-<runs>x<samples>.db once (kept for later runs: seeding 10 M samples takes a
// few minutes) through the store's own migrations, then bulk rows written directly with SQL in
// the layout the controller writes: per run two arms x five `threads` values x ten iterations
// (100 jobs), each job two aggregate metrics and eight per-thread samples. 1 % of the runs
// failed, runs are spread over three benchmarks and ten hosts. The reads measured are the
// controller's own: Store::QueryRuns (GET /api/v1/runs, `tlbfleet list`) and GetRun +
// GetSamples + report::CompareRunSamples (Controller::Compare, `tlbfleet compare`).
//
// --seed writes a new database FILE (refused if it exists) holding one finished ebizzy run per
// --run, ids 1, 2, ... in order, in the same layout with the iterations and samples per job
// given (two aggregate metrics, the rest per-thread series): 2 x 5 x ITERATIONS x
// SAMPLES_PER_JOB samples. It measures nothing; a controller can serve FILE as it is
// (tests/perf/dashboard_run_page.mjs: the dashboard's run page with 10,000 samples).

#include <benchmark/benchmark.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "controller/report/compare.h"
#include "controller/scheduler/run_spec.h"
#include "controller/store/migrations.h"
#include "controller/store/store.h"

namespace {

namespace fs = std::filesystem;
using tlbfleet::store::Store;
namespace v1 = tlbfleet::v1;

// The workloads that sweep `threads`.
constexpr const char* kBenchmarks[] = {"ebizzy", "tlbflush", "pft"};
constexpr int kHosts = 10;
constexpr int kThreads[] = {1, 2, 4, 8, 16};
constexpr int kIterations = 10;
constexpr int kSeriesPerJob = 8;

// A read that failed: the process exits 1 (Google Benchmark alone would exit 0).
bool g_failed = false;

void Fail(benchmark::State& state, const std::string& why) {
  g_failed = true;
  state.SkipWithError(why.c_str());
}

void Check(int rc, sqlite3* db, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    std::fprintf(stderr, "store_scale: %s: %s\n", what, sqlite3_errmsg(db));
    std::exit(1);
  }
}

sqlite3_stmt* Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  Check(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), db, sql);
  return stmt;
}

void Exec(sqlite3* db, const char* sql) {
  Check(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), db, sql);
}

void Text(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

void Step(sqlite3* db, sqlite3_stmt* s, const char* what) {
  Check(sqlite3_step(s), db, what);
  sqlite3_reset(s);
}

std::string SpecYaml(const std::string& benchmark, int run, int iterations) {
  return absl::StrCat("name: ", benchmark, "-nightly-", run, "\nbenchmark: ", benchmark,
                      "\nsweep: {threads: [1, 2, 4, 8, 16]}\niterations: ", iterations,
                      "\narms: [{name: base}, {name: test}]\n");
}

// One run to seed: two arms x the five `threads` values x `iterations` jobs, each with
// `samples_per_job` samples.
struct SeedRun {
  std::string benchmark;
  int iterations = kIterations;
  int samples_per_job = 10;
  bool failed = false;
};

// Writes `runs` (ids 1, 2, ... in order) into a new database at `partial`, its schema made by
// the store's own migrations, then renames it to `path`. Exits 1 on any error.
void SeedRuns(const std::string& partial, const std::string& path,
              const std::vector<SeedRun>& runs) {
  fs::remove(partial);
  fs::remove(partial + "-wal");
  fs::remove(partial + "-shm");
  {
    auto store = Store::Open(partial);  // the schema, by the store's own migrations
    if (!store.ok()) {
      std::fprintf(stderr, "store_scale: %s\n", store.status().ToString().c_str());
      std::exit(1);
    }
  }
  const auto start = std::chrono::steady_clock::now();
  sqlite3* db = nullptr;
  Check(sqlite3_open(partial.c_str(), &db), db, "open");
  Exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA cache_size=-262144;");
  sqlite3_stmt* host = Prepare(db,
                               "INSERT INTO hosts(agent_id, hostname, info, first_seen_ms,"
                               " last_seen_ms) VALUES(?1, ?2, ?3, 0, 0)");
  // No job counts: the store's triggers count each job row as it is inserted (jobs_total and
  // the per-state counts), as they do for the controller's own inserts.
  sqlite3_stmt* run_stmt =
      Prepare(db,
              "INSERT INTO runs(id, name, benchmark, spec, spec_yaml, state, error, created_ms,"
              " finished_ms, iterations_per_boot, boots, samples)"
              " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 1, ?11)");
  sqlite3_stmt* job_stmt = Prepare(
      db,
      "INSERT INTO jobs(id, run_id, slot, arm, param_name, param_value, iteration, assignment,"
      " state, attempts, lease_id, agent_id, finished_ms)"
      " VALUES(?1, ?2, 0, ?3, 'threads', ?4, ?5, ?6, 'succeeded', 1, ?7, ?8, ?9)");
  sqlite3_stmt* source_stmt = Prepare(
      db,
      "INSERT INTO sample_sources(id, run_id, job_id, lease_id, arm, param_name, param_value,"
      " iteration, agent_id, host, boot_id, kernel_release, kernel_cmdline, microarch,"
      " peer_host, boot_entry) VALUES(?1, ?2, ?1, ?3, ?4, 'threads', ?5, ?6, ?7, ?8, ?9,"
      " '6.1.0-57-amd64', 'BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet', 'IvyBridge', '', '')");
  sqlite3_stmt* sample_stmt = Prepare(
      db,
      "INSERT INTO sample_values(source_id, seq, metric, series, value, unit, better,"
      " ceiling_applied, ceiling, ceiling_observed) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, 33, 0)");
  Exec(db, "BEGIN");
  for (int h = 0; h < kHosts; ++h) {
    v1::HostInfo info;
    info.set_hostname(absl::StrCat("host-", h));
    const std::string blob = info.SerializeAsString();
    Text(host, 1, absl::StrCat("agent-", h));
    Text(host, 2, info.hostname());
    sqlite3_bind_blob(host, 3, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
    Step(db, host, "host");
  }
  int64_t job_id = 0;
  uint64_t noise = 88172645463325252ull;  // xorshift: the same database every time
  auto next = [&noise] {
    noise ^= noise << 13;
    noise ^= noise >> 7;
    noise ^= noise << 17;
    return static_cast<double>(noise % 10000) / 10000.0;
  };
  int64_t samples_total = 0;
  for (int r = 1; r <= static_cast<int>(runs.size()); ++r) {
    const SeedRun& seed = runs[static_cast<size_t>(r - 1)];
    const std::string& benchmark = seed.benchmark;
    const int samples_per_job = seed.samples_per_job;
    const int jobs = 2 * static_cast<int>(std::size(kThreads)) * seed.iterations;
    const std::string yaml = SpecYaml(benchmark, r, seed.iterations);
    absl::StatusOr<v1::RunSpec> spec = tlbfleet::scheduler::ParseRunSpec(yaml, "seed");
    if (!spec.ok()) {
      std::fprintf(stderr, "store_scale: %s\n", spec.status().ToString().c_str());
      std::exit(1);
    }
    const std::string spec_blob = spec->SerializeAsString();
    const int64_t created_ms = 1'700'000'000'000 + static_cast<int64_t>(r) * 600'000;
    const bool failed = seed.failed;
    sqlite3_bind_int64(run_stmt, 1, r);
    Text(run_stmt, 2, spec->name());
    Text(run_stmt, 3, benchmark);
    sqlite3_bind_blob(run_stmt, 4, spec_blob.data(), static_cast<int>(spec_blob.size()),
                      SQLITE_TRANSIENT);
    Text(run_stmt, 5, yaml);
    Text(run_stmt, 6, failed ? "failed" : "succeeded");
    Text(run_stmt, 7, failed ? "job 3 failed 3 times: workload exited 1" : "");
    sqlite3_bind_int64(run_stmt, 8, created_ms);
    sqlite3_bind_int64(run_stmt, 9, created_ms + 300'000);
    sqlite3_bind_int64(run_stmt, 10, seed.iterations);
    sqlite3_bind_int64(run_stmt, 11, static_cast<int64_t>(jobs) * samples_per_job);
    samples_total += static_cast<int64_t>(jobs) * samples_per_job;
    Step(db, run_stmt, "run");
    const std::string agent = absl::StrCat("agent-", r % kHosts);
    const std::string hostname = absl::StrCat("host-", r % kHosts);
    const std::string boot = absl::StrCat("boot-", r % kHosts, "-", r / 50);
    for (const char* arm : {"base", "test"}) {
      for (int threads : kThreads) {
        for (int it = 1; it <= seed.iterations; ++it) {
          ++job_id;
          const std::string lease = absl::StrCat("j", job_id, "a1");
          v1::JobAssignment assignment;
          assignment.set_run_id(absl::StrCat(r));
          assignment.set_benchmark(benchmark);
          assignment.set_arm(arm);
          assignment.set_iteration(static_cast<uint32_t>(it));
          const std::string blob = assignment.SerializeAsString();
          sqlite3_bind_int64(job_stmt, 1, job_id);
          sqlite3_bind_int64(job_stmt, 2, r);
          Text(job_stmt, 3, arm);
          Text(job_stmt, 4, absl::StrCat(threads));
          sqlite3_bind_int64(job_stmt, 5, it);
          sqlite3_bind_blob(job_stmt, 6, blob.data(), static_cast<int>(blob.size()),
                            SQLITE_TRANSIENT);
          Text(job_stmt, 7, lease);
          Text(job_stmt, 8, agent);
          sqlite3_bind_int64(job_stmt, 9, created_ms + job_id % 300'000);
          Step(db, job_stmt, "job");
          const double level = (std::string(arm) == "test" ? 1.03 : 1.0) * 1000 * threads;
          // One source per job (its lease, on one boot), as ingest writes them.
          sqlite3_bind_int64(source_stmt, 1, job_id);
          sqlite3_bind_int64(source_stmt, 2, r);
          Text(source_stmt, 3, lease);
          Text(source_stmt, 4, arm);
          Text(source_stmt, 5, absl::StrCat(threads));
          sqlite3_bind_int64(source_stmt, 6, it);
          Text(source_stmt, 7, agent);
          Text(source_stmt, 8, hostname);
          Text(source_stmt, 9, boot);
          Step(db, source_stmt, "source");
          for (int k = 0; k < samples_per_job; ++k) {
            const bool aggregate = k < samples_per_job - kSeriesPerJob || k < 2;
            const bool latency = aggregate && k % 2 == 1;
            sqlite3_bind_int64(sample_stmt, 1, job_id);
            sqlite3_bind_int64(sample_stmt, 2, k);
            Text(sample_stmt, 3, latency ? "usecs_per_op" : "records_per_sec");
            Text(sample_stmt, 4, aggregate ? "" : absl::StrCat("thread-", k));
            sqlite3_bind_double(
                sample_stmt, 5,
                latency ? 1e6 / level * (0.95 + 0.1 * next()) : level * (0.95 + 0.1 * next()));
            Text(sample_stmt, 6, latency ? "us" : "records/s");
            sqlite3_bind_int64(sample_stmt, 7, latency ? v1::BETTER_LOWER : v1::BETTER_HIGHER);
            Step(db, sample_stmt, "sample");
          }
        }
      }
    }
    if (r % 500 == 0) {
      Exec(db, "COMMIT");
      Exec(db, "BEGIN");
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "store_scale: seeded %d of %zu runs (%.0f s)\n", r, runs.size(), s);
    }
  }
  Exec(db, "COMMIT");
  for (sqlite3_stmt* s : {host, run_stmt, job_stmt, source_stmt, sample_stmt}) {
    sqlite3_finalize(s);
  }
  Exec(db, "PRAGMA wal_checkpoint(TRUNCATE); ANALYZE;");
  sqlite3_close(db);
  fs::rename(partial, path);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "store_scale: %s: %zu runs, %lld samples, %.0f s, %.0f MB\n", path.c_str(),
               runs.size(), static_cast<long long>(samples_total), s,
               static_cast<double>(fs::file_size(path)) / 1e6);
}

// The database with `runs` runs of `samples_per_run` samples (a multiple of 100 jobs x 10),
// seeded if it does not exist yet.
std::string Seed(const std::string& dir, int runs, int samples_per_run) {
  // Named by schema version too: a database seeded in an older layout is not reused.
  const std::string path = absl::StrCat(dir, "/store-v", tlbfleet::store::LatestSchemaVersion(),
                                        "-", runs, "x", samples_per_run, ".db");
  if (fs::exists(path)) return path;
  std::vector<SeedRun> seeds;
  seeds.reserve(static_cast<size_t>(runs));
  for (int r = 1; r <= runs; ++r) {
    seeds.push_back({.benchmark = kBenchmarks[r % 3],
                     .iterations = kIterations,
                     .samples_per_job = samples_per_run / 100,
                     .failed = r % 100 == 7});
  }
  SeedRuns(path + ".seeding", path, seeds);
  return path;
}

// --seed FILE: one ebizzy run per "ITERATIONSxSAMPLES_PER_JOB" in `layouts`; 2 on a bad
// layout or an existing FILE.
int SeedOnly(const std::string& path, const std::vector<std::string>& layouts) {
  std::vector<SeedRun> seeds;
  for (const std::string& layout : layouts) {
    SeedRun seed{.benchmark = "ebizzy"};
    char tail = 0;
    if (std::sscanf(layout.c_str(), "%dx%d%c", &seed.iterations, &seed.samples_per_job, &tail) !=
            2 ||
        seed.iterations < 1 || seed.samples_per_job < 1) {
      std::fprintf(stderr, "store_scale: --run %s: want ITERATIONSxSAMPLES_PER_JOB, e.g. 100x10\n",
                   layout.c_str());
      return 2;
    }
    seeds.push_back(seed);
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "store_scale: --seed needs at least one --run\n");
    return 2;
  }
  if (fs::exists(path)) {
    std::fprintf(stderr, "store_scale: --seed %s: exists; give a new file\n", path.c_str());
    return 2;
  }
  SeedRuns(path + ".seeding", path, seeds);
  return 0;
}

struct Opened {
  std::unique_ptr<Store> store;
  int runs = 0;
  std::string middle_page_token;  // keyset token halfway down the unfiltered list
};

Opened Open(const std::string& path, int runs) {
  auto store = Store::Open(path, {.writer_thread = true});
  if (!store.ok()) {
    std::fprintf(stderr, "store_scale: %s\n", store.status().ToString().c_str());
    std::exit(1);
  }
  Opened o{std::move(*store), runs, ""};
  v1::ListRunsRequest request;
  request.set_limit(1000);
  for (int seen = 0; seen < runs / 2;) {
    request.set_page_token(o.middle_page_token);
    auto page = o.store->QueryRuns(request);
    if (!page.ok() || page->next_page_token().empty()) break;
    seen += page->runs_size();
    o.middle_page_token = page->next_page_token();
  }
  return o;
}

void ListRuns(benchmark::State& state, Opened* o, v1::ListRunsRequest request) {
  size_t listed = 0;
  for (auto _ : state) {
    auto page = o->store->QueryRuns(request);
    if (!page.ok()) {
      Fail(state, page.status().ToString());
      return;
    }
    listed = static_cast<size_t>(page->runs_size());
    if (listed == 0) {
      Fail(state, "listed no runs");
      return;
    }
    benchmark::DoNotOptimize(page);
  }
  state.counters["runs_listed"] = static_cast<double>(listed);
}

void CompareRun(benchmark::State& state, Opened* o) {
  const std::string run_id = absl::StrCat(o->runs / 2 + 1);
  size_t samples = 0;
  for (auto _ : state) {
    // Controller::Compare: the run, its samples, the comparison with verdicts and text.
    auto run = o->store->GetRun(run_id);
    auto read = o->store->GetSamples(run_id);
    if (!run.ok() || !read.ok()) {
      Fail(state, "reading the run or its samples failed");
      return;
    }
    tlbfleet::report::CompareOptions options;
    for (const v1::ArmSpec& arm : run->spec().arms()) options.arm_order.push_back(arm.name());
    tlbfleet::report::RunReportOptions extras;
    extras.spec = &run->spec();
    auto response = tlbfleet::report::CompareRunSamples(*read, options, "scale", extras);
    if (!response.ok() || response->report().groups_size() == 0) {
      Fail(state, response.ok() ? "no rows" : response.status().ToString());
      return;
    }
    samples = read->size();
    benchmark::DoNotOptimize(response);
  }
  state.counters["samples_read"] = static_cast<double>(samples);
}

void Register(const std::string& label, Opened* o) {
  auto list = [&](const std::string& name, v1::ListRunsRequest request) {
    benchmark::RegisterBenchmark((label + "/list/" + name).c_str(), ListRuns, o, request)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  };
  list("first_page", {});
  v1::ListRunsRequest r;
  r.set_benchmark("tlbflush");
  list("benchmark", r);
  r.Clear();
  r.add_states(v1::RUN_STATE_FAILED);
  list("state_failed", r);
  r.Clear();
  r.set_host("host-3");
  list("host", r);
  r.Clear();
  r.set_name(absl::StrCat("nightly-", o->runs / 2));
  list("name_substring", r);
  r.Clear();
  r.set_page_token(o->middle_page_token);
  list("middle_page", r);
  benchmark::RegisterBenchmark((label + "/compare_one_run").c_str(), CompareRun, o)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, seed_path;
  std::vector<std::string> seed_layouts;
  int runs = 10000, samples_per_run = 1000, reference_runs = 100;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (a != flag || i + 1 >= argc) return nullptr;
      return argv[++i];
    };
    if (const char* v = value("--dir")) {
      dir = v;
    } else if (const char* v = value("--seed")) {
      seed_path = v;
    } else if (const char* v = value("--run")) {
      seed_layouts.push_back(v);
    } else if (const char* v = value("--runs")) {
      runs = std::atoi(v);
    } else if (const char* v = value("--samples-per-run")) {
      samples_per_run = std::atoi(v);
    } else if (const char* v = value("--reference-runs")) {
      reference_runs = std::atoi(v);
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (!seed_path.empty()) return SeedOnly(seed_path, seed_layouts);
  if (dir.empty() || runs < 1 || reference_runs < 1 || samples_per_run < 1000 ||
      samples_per_run % 100 != 0) {
    std::fprintf(stderr,
                 "usage: store_scale --dir DIR [--runs N] [--samples-per-run M (a multiple of "
                 "100, at least 1000)] [--reference-runs R] [benchmark flags]\n"
                 "       store_scale --seed FILE --run ITERATIONSxSAMPLES_PER_JOB [--run ...]\n");
    return 2;
  }
  fs::create_directories(dir);
  Opened reference = Open(Seed(dir, reference_runs, samples_per_run), reference_runs);
  Opened large = Open(Seed(dir, runs, samples_per_run), runs);
  Register(absl::StrCat("runs=", reference_runs), &reference);
  Register(absl::StrCat("runs=", runs), &large);
  int bench_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&bench_argc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return g_failed ? 1 : 0;
}
