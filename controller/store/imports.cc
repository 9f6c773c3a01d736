#include "controller/store/imports.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "controller/store/events.h"
#include "controller/store/runs.h"

namespace tlbfleet::store::imports {
namespace {

// What every sample of one imported job shares (the job row and its sample_sources row).
struct ImportJob {
  const v1::Sample* first = nullptr;
  std::vector<const v1::Sample*> samples;
  int64_t boot_index = 0;
};

absl::StatusOr<std::optional<int64_t>> RunOfDigest(Database& db, const std::string& digest) {
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare("SELECT run_id FROM imported_runs WHERE digest = ?1"));
  q.Bind(1, digest);
  TLB_ASSIGN_OR_RETURN(bool found, q.Step());
  if (!found) return std::nullopt;
  return q.Int(0);
}

}  // namespace

absl::StatusOr<ImportedRunResult> Insert(Database& db, EventBatch& events,
                                         const ImportedRunRecord& record, int64_t now_ms) {
  if (record.digest.empty()) return absl::InvalidArgumentError("digest: required");
  ImportedRunResult result;
  TLB_ASSIGN_OR_RETURN(std::optional<int64_t> existing, RunOfDigest(db, record.digest));
  if (existing.has_value()) {
    result.run_id = absl::StrCat(*existing);
    result.already_imported = true;
    return result;
  }

  // Jobs in the order of their numbers; each arm's boots numbered in order of appearance.
  std::map<int64_t, ImportJob> jobs;
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> boots_of_arm;
  uint32_t max_iteration = 0;
  size_t max_boots = 1;
  for (const v1::Sample& s : record.samples) {
    if (s.job_id() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("samples: a sample of arm \"", s.arm(), "\" has no job number"));
    }
    ImportJob& job = jobs[s.job_id()];
    if (job.first == nullptr) {
      job.first = &s;
      auto& boots = boots_of_arm[s.arm()];
      const auto key = std::pair(s.host(), s.boot_id());
      auto it = std::find(boots.begin(), boots.end(), key);
      job.boot_index = it - boots.begin();
      if (it == boots.end()) boots.push_back(key);
      max_boots = std::max(max_boots, boots.size());
    }
    job.samples.push_back(&s);
    max_iteration = std::max(max_iteration, s.iteration());
  }

  v1::RunSpec spec = record.spec;
  spec.set_iterations(max_iteration);
  spec.set_boots(static_cast<uint32_t>(max_boots));
  TLB_ASSIGN_OR_RETURN(int64_t run_id,
                       runs::Insert(db, spec, record.spec_yaml, record.created_ms, false));
  const int64_t finished_ms = record.finished_ms > 0 ? record.finished_ms : record.created_ms;

  TLB_ASSIGN_OR_RETURN(
      Statement job_ins,
      db.Prepare("INSERT INTO jobs(run_id, slot, arm, param_name, param_value, iteration,"
                 " assignment, state, attempts, lease_id, agent_id, finished_ms, boot_index)"
                 " VALUES(?1, 0, ?2, ?3, ?4, ?5, ?6, 'succeeded', 1, ?7, ?8, ?9, ?10)"));
  TLB_ASSIGN_OR_RETURN(
      Statement source_ins,
      db.Prepare("INSERT INTO sample_sources(run_id, job_id, lease_id, arm, param_name,"
                 " param_value, iteration, agent_id, host, boot_id, kernel_release,"
                 " kernel_cmdline, microarch, peer_host, boot_entry) VALUES(?1, ?2, ?3, ?4, ?5,"
                 " ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"));
  TLB_ASSIGN_OR_RETURN(
      Statement imported_ins,
      db.Prepare("INSERT INTO imported_sources(source_id, machine_id, commit_hash, build_id)"
                 " VALUES(?1, ?2, ?3, ?4)"));
  TLB_ASSIGN_OR_RETURN(
      Statement value_ins,
      db.Prepare("INSERT INTO sample_values(source_id, seq, metric, series, value, unit, better,"
                 " ceiling_applied, ceiling, ceiling_observed)"
                 " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
  for (const auto& [number, job] : jobs) {
    const v1::Sample& f = *job.first;
    // A lease id of its own (jobs.lease_id is unique): the key that refuses replayed samples.
    const std::string lease_id = absl::StrCat("import-", run_id, "-", number);
    v1::JobAssignment assignment;
    assignment.set_run_id(absl::StrCat(run_id));
    assignment.set_benchmark(spec.benchmark());
    assignment.set_arm(f.arm());
    assignment.set_param_name(f.param_name());
    assignment.set_param_value(f.param_value());
    assignment.set_iteration(f.iteration());
    TLB_RETURN_IF_ERROR(job_ins.Bind(1, run_id)
                            .Bind(2, f.arm())
                            .Bind(3, f.param_name())
                            .Bind(4, f.param_value())
                            .Bind(5, static_cast<int64_t>(f.iteration()))
                            .BindBlob(6, assignment.SerializeAsString())
                            .Bind(7, lease_id)
                            .Bind(8, f.agent_id())
                            .Bind(9, finished_ms)
                            .Bind(10, job.boot_index)
                            .Run());
    const int64_t job_id = db.LastInsertId();
    TLB_RETURN_IF_ERROR(source_ins.Bind(1, run_id)
                            .Bind(2, job_id)
                            .Bind(3, lease_id)
                            .Bind(4, f.arm())
                            .Bind(5, f.param_name())
                            .Bind(6, f.param_value())
                            .Bind(7, static_cast<int64_t>(f.iteration()))
                            .Bind(8, f.agent_id())
                            .Bind(9, f.host())
                            .Bind(10, f.boot_id())
                            .Bind(11, f.kernel_release())
                            .Bind(12, f.kernel_cmdline())
                            .Bind(13, f.microarch())
                            .Bind(14, f.peer_host())
                            .Bind(15, f.boot_entry())
                            .Run());
    const int64_t source_id = db.LastInsertId();
    if (!f.machine_id().empty() || !f.commit().empty() || !f.build_id().empty()) {
      TLB_RETURN_IF_ERROR(imported_ins.Bind(1, source_id)
                              .Bind(2, f.machine_id())
                              .Bind(3, f.commit())
                              .Bind(4, f.build_id())
                              .Run());
    }
    int64_t seq = 0;
    for (const v1::Sample* s : job.samples) {
      TLB_RETURN_IF_ERROR(value_ins.Bind(1, source_id)
                              .Bind(2, seq++)
                              .Bind(3, s->metric())
                              .Bind(4, s->series())
                              .Bind(5, s->value())
                              .Bind(6, s->unit())
                              .Bind(7, static_cast<int64_t>(s->better()))
                              .Bind(8, static_cast<int64_t>(s->ceiling_applied()))
                              .Bind(9, s->ceiling_applied() || s->ceiling_observed()
                                           ? std::optional<int64_t>(s->ceiling())
                                           : std::nullopt)
                              .Bind(10, static_cast<int64_t>(s->ceiling_observed()))
                              .Run());
      ++result.samples;
    }
  }

  const bool failed = record.failed;
  TLB_ASSIGN_OR_RETURN(
      Statement finish,
      db.Prepare("UPDATE runs SET state = ?2, finished_ms = ?3, samples = ?4, error = ?5,"
                 " stop_reason = ?6 WHERE id = ?1"));
  TLB_RETURN_IF_ERROR(
      finish.Bind(1, run_id)
          .Bind(2, std::string(failed ? "failed" : "succeeded"))
          .Bind(3, finished_ms)
          .Bind(4, static_cast<int64_t>(result.samples))
          .Bind(5, std::string(
                       failed ? absl::StrCat("the ", record.format, " results record a failed test")
                              : ""))
          .Bind(6, absl::StrCat("imported from ", record.format, " results (", record.source, ")"))
          .Run());
  TLB_ASSIGN_OR_RETURN(
      Statement mark,
      db.Prepare("INSERT INTO imported_runs(run_id, digest, format, source, imported_ms)"
                 " VALUES(?1, ?2, ?3, ?4, ?5)"));
  TLB_RETURN_IF_ERROR(mark.Bind(1, run_id)
                          .Bind(2, record.digest)
                          .Bind(3, record.format)
                          .Bind(4, record.source)
                          .Bind(5, now_ms)
                          .Run());
  // One terminal event: observers (nightly's history) take the run as any finished one.
  TLB_RETURN_IF_ERROR(events::Record(
      db, events,
      events::StateChange(run_id, failed ? v1::RUN_STATE_FAILED : v1::RUN_STATE_SUCCEEDED,
                          absl::StrCat("imported from ", record.format, " results"), now_ms)));
  result.run_id = absl::StrCat(run_id);
  return result;
}

}  // namespace tlbfleet::store::imports
