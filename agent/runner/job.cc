#include "agent/runner/job.h"

#include <chrono>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "agent/kernel/monitor.h"
#include "agent/runner/job_ceiling.h"
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

namespace {

void AddProvenance(const v1::JobAssignment& a, const HostContext& host,
                   const JobCeiling::Outcome& ceiling, v1::SpooledJob& job, v1::Sample s) {
  s.set_run_id(a.run_id());
  s.set_job_id(a.job_id());
  s.set_lease_id(a.lease_id());
  s.set_seq(static_cast<uint64_t>(job.samples_size()));
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
  s.set_boot_entry(host.host.boot_entry());
  s.set_commit(host.host.commit());
  s.set_build_id(host.host.build_id());
  s.set_ceiling_applied(ceiling.applied);
  if (ceiling.ceiling.has_value()) s.set_ceiling(*ceiling.ceiling);
  s.set_ceiling_observed(ceiling.observed);
  s.set_peer_host(a.peer_host());
  *job.add_samples() = std::move(s);
}

}  // namespace

v1::SpooledJob RunJob(const v1::JobAssignment& a, const HostContext& host,
                      const JobOptions& options, CancelToken* cancel) {
  const auto start = std::chrono::steady_clock::now();
  v1::SpooledJob job;
  *job.mutable_assignment() = a;
  std::string ceiling_error;  // set once the workload has ended; fails the job whatever else
  auto finish = [&](v1::JobStatus status, std::string error) {
    if (!ceiling_error.empty()) {
      error = status == v1::JOB_STATUS_SUCCEEDED ? ceiling_error
                                                 : absl::StrCat(error, "; ", ceiling_error);
      if (status == v1::JOB_STATUS_SUCCEEDED) status = v1::JOB_STATUS_FAILED;
    }
    Complete(job, status, std::move(error));
    job.mutable_complete()->set_sample_count(static_cast<uint64_t>(job.samples_size()));
    job.mutable_complete()->set_elapsed_seconds(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return job;
  };
  auto note = [&](const std::string& text) {
    spdlog::info("{} {}", text, Ids(a));
    if (options.progress) options.progress(text);
  };

  // Monitors are created (names checked) before anything on the host changes.
  std::vector<std::unique_ptr<Monitor>> monitors;
  for (const std::string& name : a.monitors()) {
    absl::StatusOr<std::unique_ptr<Monitor>> m = CreateMonitor(name, *options.sysroot);
    if (!m.ok()) return finish(v1::JOB_STATUS_FAILED, std::string(m.status().message()));
    monitors.push_back(*std::move(m));
  }

  if (!a.ceiling().empty() && options.ceiling_journal.empty()) {
    return finish(v1::JOB_STATUS_FAILED, "internal: no ceiling journal path for this job");
  }
  JobCeiling ceiling({options.sysroot, options.ceiling_journal, options.ceiling_degraded,
                      host.host.boot_id(), Ids(a)});
  if (absl::Status s = ceiling.Begin(a.ceiling()); !s.ok()) {
    return finish(v1::JOB_STATUS_FAILED, std::string(s.message()));
  }
  if (!a.ceiling().empty()) {
    spdlog::info("ceiling set to {} (spec '{}', was {}) {}", ceiling.expected().value_or(-1),
                 a.ceiling(), ceiling.original().value_or(-1), Ids(a));
  }

  size_t started = 0;
  absl::Status start_error;
  for (; started < monitors.size(); ++started) {
    start_error = monitors[started]->Start();
    if (!start_error.ok()) break;
  }
  if (!start_error.ok()) {
    MonitorOutput ignored;
    for (size_t i = 0; i < started; ++i) (void)monitors[i]->Stop(&ignored);
    return finish(v1::JOB_STATUS_FAILED,
                  absl::StrCat("monitor ", std::string(monitors[started]->name()),
                               " cannot run on this host: ", start_error.message()));
  }

  ChildSpec spec;
  spec.argv = options.argv_for(a);
  spec.timeout = std::chrono::seconds(a.timeout_seconds());
  if (!monitors.empty()) {
    spec.on_forked = [&monitors](pid_t pid) {
      for (auto& m : monitors) m->OnChildForked(pid);
    };
  }
  spdlog::info("workload {} starting (timeout {} s) {}", a.benchmark(), a.timeout_seconds(),
               Ids(a));
  absl::StatusOr<ChildResult> result = RunChild(spec, cancel);
  if (result.ok() && options.on_child_exit) options.on_child_exit(*result);
  MonitorOutput observed;
  std::string monitor_error;
  for (auto& m : monitors) {
    if (absl::Status s = m->Stop(&observed); !s.ok() && monitor_error.empty()) {
      monitor_error = absl::StrCat("monitor ", std::string(m->name()), ": ", s.message());
    }
  }
  monitors.clear();
  const JobCeiling::Outcome applied = ceiling.End();
  ceiling_error = applied.error;
  if (!applied.error.empty()) {
    spdlog::error("{} {}", applied.error, Ids(a));
  } else if (applied.applied) {
    spdlog::info("ceiling restored to its original value {}", Ids(a));
  }
  for (const std::string& n : observed.notes) note(n);
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
    AddProvenance(a, host, applied, job, *std::move(parsed));
  }
  const int workload_samples = job.samples_size();
  for (v1::Sample& s : observed.samples) AddProvenance(a, host, applied, job, std::move(s));

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
  if (workload_samples == 0) {
    return finish(v1::JOB_STATUS_FAILED,
                  absl::StrCat(what, " exited 0 but printed no metrics: ", StderrTail(*result)));
  }
  if (!monitor_error.empty()) return finish(v1::JOB_STATUS_FAILED, monitor_error);
  return finish(v1::JOB_STATUS_SUCCEEDED, "");
}

}  // namespace tlbfleet::agent
