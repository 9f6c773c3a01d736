#include "agent/runner/job.h"

#include <chrono>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "agent/kernel/ceiling.h"
#include "agent/runner/metric_line.h"
#include "common/files.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::agent {
namespace {

constexpr size_t kMaxBadLineEcho = 200;

std::string Ids(const v1::JobAssignment& a) {
  return absl::StrCat("run=", a.run_id(), " job=", a.job_id(), " lease=", a.lease_id());
}

std::string StderrTail(const ChildResult& result) {
  std::string tail = Trim(result.stderr_tail);
  return tail.empty() ? "(no stderr output)" : tail;
}

// Sets the assignment's ceiling and restores the original value when destroyed.
class CeilingGuard {
 public:
  CeilingGuard(const Sysroot& sysroot, const v1::JobAssignment& a) : sysroot_(sysroot), a_(a) {}
  ~CeilingGuard() { Restore(); }

  // OK once the kernel holds the requested value; otherwise the reason the job fails.
  absl::Status Apply() {
    const std::string& spec = a_.ceiling();
    absl::StatusOr<int64_t> want = ParseCeilingSpec(spec);
    if (!want.ok()) return want.status();
    v1::CeilingInfo probe = ProbeCeiling(sysroot_);
    if (!probe.writable()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "ceiling ", spec,
          " requested but the flush ceiling is not writable on this host: ", probe.reason()));
    }
    absl::StatusOr<int64_t> original = ReadCeiling(sysroot_);
    if (!original.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot read the flush ceiling before setting ", spec, ": ",
                       original.status().message()));
    }
    // TODO(journal): journal *original (fsync'd) before writing, so a crash mid-job can be
    // undone on the next start in the same boot. See docs/agent.md.
    original_ = *original;
    absl::StatusOr<int64_t> applied = WriteCeiling(sysroot_, *want);
    if (!applied.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot set the flush ceiling to ", spec, ": ", applied.status().message()));
    }
    applied_ = *applied;
    spdlog::info("ceiling set to {} (was {}) {}", *applied, *original_, Ids(a_));
    return absl::OkStatus();
  }

  std::optional<int64_t> applied() const { return applied_; }

  void Restore() {
    if (!original_.has_value()) return;
    absl::StatusOr<int64_t> back = WriteCeiling(sysroot_, *original_);
    if (back.ok()) {
      spdlog::info("ceiling restored to {} {}", *original_, Ids(a_));
    } else {
      spdlog::error("cannot restore the flush ceiling to {}: {} {}", *original_,
                    std::string(back.status().message()), Ids(a_));
    }
    original_.reset();
  }

 private:
  const Sysroot& sysroot_;
  const v1::JobAssignment& a_;
  std::optional<int64_t> original_;
  std::optional<int64_t> applied_;
};

void Complete(v1::SpooledJob& job, v1::JobStatus status, std::string error) {
  v1::JobComplete* c = job.mutable_complete();
  c->set_lease_id(job.assignment().lease_id());
  c->set_job_id(job.assignment().job_id());
  c->set_status(status);
  c->set_error(std::move(error));
}

}  // namespace

std::vector<std::string> WorkloadArgv(const v1::JobAssignment& assignment) {
  std::vector<std::string> argv = {"/proc/self/exe", "run-workload", assignment.benchmark(),
                                   "--json"};
  std::map<std::string, std::string> sorted(assignment.params().begin(), assignment.params().end());
  for (const auto& [key, value] : sorted) {
    argv.push_back("--set");
    argv.push_back(absl::StrCat(key, "=", value));
  }
  return argv;
}

v1::SpooledJob RunJob(const v1::JobAssignment& a, const HostContext& host,
                      const JobOptions& options, CancelToken* cancel) {
  const auto start = std::chrono::steady_clock::now();
  v1::SpooledJob job;
  *job.mutable_assignment() = a;
  auto finish = [&](v1::JobStatus status, std::string error) {
    Complete(job, status, std::move(error));
    job.mutable_complete()->set_sample_count(static_cast<uint64_t>(job.samples_size()));
    job.mutable_complete()->set_elapsed_seconds(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return job;
  };

  CeilingGuard ceiling(*options.sysroot, a);
  if (!a.ceiling().empty()) {
    if (absl::Status s = ceiling.Apply(); !s.ok()) {
      return finish(v1::JOB_STATUS_FAILED, std::string(s.message()));
    }
  }

  ChildSpec spec;
  spec.argv = options.argv_for(a);
  spec.timeout = std::chrono::seconds(a.timeout_seconds());
  spdlog::info("workload {} starting (timeout {} s) {}", a.benchmark(), a.timeout_seconds(),
               Ids(a));
  absl::StatusOr<ChildResult> result = RunChild(spec, cancel);
  ceiling.Restore();
  if (!result.ok()) {
    return finish(v1::JOB_STATUS_FAILED, absl::StrCat("cannot start workload ", a.benchmark(), ": ",
                                                      result.status().message()));
  }

  std::string bad_line;
  for (size_t i = 0; i < result->stdout_lines.size(); ++i) {
    const std::string& line = result->stdout_lines[i];
    if (Trim(line).empty()) continue;
    absl::StatusOr<v1::Sample> parsed = ParseMetricLine(line);
    if (!parsed.ok()) {
      if (bad_line.empty()) {
        bad_line = absl::StrCat("output line ", i + 1, " is not a metric (",
                                parsed.status().message(), "): ", line.substr(0, kMaxBadLineEcho));
      }
      continue;
    }
    v1::Sample& s = *job.add_samples();
    s = *std::move(parsed);
    s.set_run_id(a.run_id());
    s.set_job_id(a.job_id());
    s.set_lease_id(a.lease_id());
    s.set_seq(static_cast<uint64_t>(job.samples_size() - 1));
    s.set_arm(a.arm());
    s.set_param_name(a.param_name());
    s.set_param_value(a.param_value());
    s.set_iteration(a.iteration());
    s.set_host(host.host.hostname());
    s.set_agent_id(host.agent_id);
    s.set_boot_id(host.host.boot_id());
    s.set_kernel_release(host.host.kernel_release());
    s.set_kernel_cmdline(host.host.kernel_cmdline());
    s.set_microarch(host.host.cpu().microarch());
    if (ceiling.applied().has_value()) {
      s.set_ceiling_applied(true);
      s.set_ceiling(*ceiling.applied());
    }
  }

  const std::string what = absl::StrCat("workload ", a.benchmark());
  switch (result->outcome) {
    case ChildResult::Outcome::kTimedOut:
      return finish(v1::JOB_STATUS_TIMED_OUT,
                    absl::StrCat(what, " exceeded its ", a.timeout_seconds(),
                                 " s timeout; its process group was killed"));
    case ChildResult::Outcome::kCancelled: {
      std::string reason = cancel != nullptr ? cancel->reason() : "";
      return finish(v1::JOB_STATUS_CANCELLED,
                    absl::StrCat(what, " cancelled", reason.empty() ? "" : ": ", reason));
    }
    case ChildResult::Outcome::kSignaled:
    case ChildResult::Outcome::kExited:
      break;
  }
  if (!result->succeeded()) {
    return finish(v1::JOB_STATUS_FAILED,
                  absl::StrCat(what, " ", result->Describe(), ": ", StderrTail(*result)));
  }
  if (!bad_line.empty()) return finish(v1::JOB_STATUS_FAILED, absl::StrCat(what, ": ", bad_line));
  if (result->stdout_truncated) {
    return finish(v1::JOB_STATUS_FAILED,
                  absl::StrCat(what, ": output truncated (line or total size limit)"));
  }
  if (job.samples_size() == 0) {
    return finish(v1::JOB_STATUS_FAILED,
                  absl::StrCat(what, " exited 0 but printed no metrics: ", StderrTail(*result)));
  }
  return finish(v1::JOB_STATUS_SUCCEEDED, "");
}

}  // namespace tlbfleet::agent
