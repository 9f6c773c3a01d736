// The run service: the user API, run events and gauges (run_service.h).

#include "controller/core/run_service_impl.h"

#include <algorithm>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "controller/core/workload_catalogue.h"
#include "controller/report/arm_ceilings.h"
#include "controller/report/compare.h"
#include "controller/report/comparison.h"
#include "controller/report/cross_run.h"
#include "controller/report/render.h"
#include "controller/scheduler/boot_plan.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/host_lost.h"
#include "controller/scheduler/run_spec.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::core {

std::string_view AgentStateName(AgentState state) {
  switch (state) {
    case AgentState::kConnecting:
      return "connecting";
    case AgentState::kIdle:
      return "idle";
    case AgentState::kRunning:
      return "running";
    case AgentState::kRebooting:
      return "rebooting";
    case AgentState::kDisconnected:
      return "disconnected";
  }
  return "unknown";
}

// Arms with `kernel:` are checked against the builders and given a boot entry of their own
// ("kernel-<random>"): every boot of the arm is a boot into its build (store/builds.h).
absl::Status RunServiceImpl::PrepareKernelArms(v1::RunSpec& spec) {
  for (int i = 0; i < spec.arms_size(); ++i) {
    v1::ArmSpec& arm = *spec.mutable_arms(i);
    if (!arm.has_kernel()) continue;
    const std::string field = absl::StrCat("arms[", i, "].kernel");
    TLB_RETURN_IF_ERROR(fleet_.CheckKernel(*arm.mutable_kernel(), field));
    // A revision that does not resolve is the user's mistake: refused now, naming it, when a
    // builder can say so. One that cannot answer now is no reason to refuse the run: the
    // build resolves the revision, and fails the run naming it if it does not.
    if (resolve_at_submit_ > absl::ZeroDuration()) {
      v1::GitQuery resolve;
      resolve.set_kind(v1::GitQuery::KIND_RESOLVE);
      resolve.set_source(arm.kernel().source());
      resolve.set_rev(arm.kernel().rev());
      absl::StatusOr<v1::GitAnswer> answer = fleet_.QueryGit(resolve, resolve_at_submit_);
      if (absl::IsInvalidArgument(answer.status())) {
        return absl::InvalidArgumentError(absl::StrCat(field, ".rev: ", answer.status().message()));
      }
      if (answer.ok() && !arm.kernel().revert().empty()) {
        resolve.set_rev(arm.kernel().revert());
        answer = fleet_.QueryGit(resolve, resolve_at_submit_);
        if (absl::IsInvalidArgument(answer.status())) {
          return absl::InvalidArgumentError(
              absl::StrCat(field, ".revert: ", answer.status().message()));
        }
      }
    }
    std::string id(6, '\0');
    absl::BitGen gen;
    for (char& c : id) c = static_cast<char>(absl::Uniform<uint8_t>(gen));
    arm.set_boot_entry(absl::StrCat(scheduler::kKernelEntryPrefix, absl::BytesToHexString(id)));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::SubmitRunResponse> RunServiceImpl::Submit(const std::string& spec_yaml,
                                                             const std::string& source) {
  TLB_ASSIGN_OR_RETURN(v1::RunSpec spec,
                       scheduler::ParseRunSpec(spec_yaml, source.empty() ? "spec" : source));
  TLB_RETURN_IF_ERROR(PrepareKernelArms(spec));
  std::vector<scheduler::JobPlan> jobs;
  std::string run_id;
  if (scheduler::SweepDependsOnHost(spec.sweep())) {
    // The sweep is known only once a host takes a slot: Store::Lease expands it then.
    TLB_ASSIGN_OR_RETURN(run_id, store_.CreateDeferredRun(spec, spec_yaml, Now()));
  } else {
    jobs = scheduler::ExpandRun(spec);
    TLB_ASSIGN_OR_RETURN(run_id, store_.CreateRun(spec, spec_yaml, jobs, Now()));
  }
  spdlog::info(
      "run={} submitted: {} ({}, {} arms, {})", run_id, spec.name(), spec.benchmark(),
      spec.arms_size(),
      jobs.empty() ? std::string("jobs expanded per host") : absl::StrCat(jobs.size(), " jobs"));
  v1::SubmitRunResponse response;
  response.set_run_id(run_id);
  response.set_jobs(static_cast<uint32_t>(jobs.size()));
  fleet_.OfferWork(run_id);
  return response;
}

absl::StatusOr<v1::GetBuildLogResponse> RunServiceImpl::GetBuildLog(int64_t task_id) {
  TLB_ASSIGN_OR_RETURN(std::optional<v1::KernelBuild> build, store_.GetBuild(task_id));
  if (!build.has_value()) {
    return absl::NotFoundError(absl::StrCat("build ", task_id, " not found"));
  }
  TLB_ASSIGN_OR_RETURN(std::vector<std::string> lines, store_.BuildLog(task_id));
  v1::GetBuildLogResponse response;
  *response.mutable_build() = *std::move(build);
  for (std::string& line : lines) response.add_lines(std::move(line));
  return response;
}

absl::StatusOr<v1::Run> RunServiceImpl::GetRun(const std::string& run_id) {
  TLB_ASSIGN_OR_RETURN(v1::Run run, store_.GetRun(run_id));
  fleet_.DecorateRun(run);
  return run;
}

absl::StatusOr<v1::ListRunsResponse> RunServiceImpl::ListRuns(const v1::ListRunsRequest& request) {
  TLB_ASSIGN_OR_RETURN(v1::ListRunsResponse response, store_.QueryRuns(request));
  for (v1::Run& run : *response.mutable_runs()) fleet_.DecorateRun(run);
  return response;
}

absl::StatusOr<v1::Run> RunServiceImpl::CancelRun(const std::string& run_id) {
  TLB_ASSIGN_OR_RETURN(auto running, store_.CancelRun(run_id, Now()));
  fleet_.CancelLeases(running, "run cancelled");
  spdlog::info("run={} cancelled by user ({} running jobs told to stop)", run_id, running.size());
  return store_.GetRun(run_id);
}

absl::StatusOr<v1::ListHostsResponse> RunServiceImpl::ListHosts() {
  TLB_ASSIGN_OR_RETURN(std::vector<store::StoredHost> hosts, store_.ListHosts());
  v1::ListHostsResponse response;
  for (store::StoredHost& h : hosts) {
    v1::Host* out = response.add_hosts();
    out->set_agent_id(h.agent_id);
    *out->mutable_info() = std::move(h.info);
    out->set_last_seen_unix(h.last_seen_ms / 1000);
    if (!h.lease_id.empty()) {
      out->set_current_lease(h.lease_id);
      out->set_current_run_id(h.lease_run_id);
      out->set_current_job_id(h.lease_job_id);
      out->set_current_benchmark(h.lease_benchmark);
      out->set_current_arm(h.lease_arm);
      out->set_current_iteration(static_cast<uint32_t>(h.lease_iteration));
    }
    fleet_.DecorateHost(*out);
  }
  return response;
}

absl::StatusOr<v1::GetResultsResponse> RunServiceImpl::GetResults(const std::string& run_id) {
  TLB_ASSIGN_OR_RETURN(std::vector<v1::Sample> samples, store_.GetSamples(run_id));
  v1::GetResultsResponse response;
  for (v1::Sample& s : samples) *response.add_samples() = std::move(s);
  return response;
}

namespace {

report::RunReportOptions ReportOptionsFromRequest(const v1::CompareRequest& request) {
  report::RunReportOptions extras;
  if (!request.flush_param().empty()) extras.flush_param = request.flush_param();
  extras.ceiling_metric = request.ceiling_metric();
  return extras;
}

}  // namespace

absl::StatusOr<v1::CompareResponse> RunServiceImpl::Compare(const v1::CompareRequest& request) {
  const std::string& run_id = request.run_id();
  TLB_ASSIGN_OR_RETURN(v1::Run run, store_.GetRun(run_id));
  TLB_ASSIGN_OR_RETURN(report::CompareOptions options, report::CompareOptionsFromRequest(request));
  if (!request.with_run_id().empty()) {
    // Across runs: the same comparison over both runs' chosen arms (report/cross_run.h).
    absl::StatusOr<v1::Run> other = store_.GetRun(request.with_run_id());
    if (!other.ok()) {
      return absl::Status(other.status().code(),
                          absl::StrCat("with_run_id: ", other.status().message()));
    }
    TLB_ASSIGN_OR_RETURN(std::vector<v1::Sample> samples, store_.GetSamples(run_id));
    TLB_ASSIGN_OR_RETURN(std::vector<v1::Sample> other_samples,
                         store_.GetSamples(request.with_run_id()));
    TLB_ASSIGN_OR_RETURN(report::CrossRun merged,
                         report::MergeRuns(run, std::move(samples), request.arm(), *other,
                                           std::move(other_samples), request.with_arm()));
    options.arm_order = merged.arm_order;
    if (!options.baseline.empty() && std::find(merged.arm_order.begin(), merged.arm_order.end(),
                                               options.baseline) == merged.arm_order.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("baseline: across runs the arms are ", absl::StrJoin(merged.arm_order, ", "),
                       "; no arm is named \"", options.baseline, "\""));
    }
    report::RunReportOptions extras = ReportOptionsFromRequest(request);
    extras.spec = &merged.spec;
    extras.across_runs_note = merged.note;
    TLB_ASSIGN_OR_RETURN(v1::CompareResponse response,
                         report::CompareRunSamples(merged.samples, options, merged.title, extras));
    response.mutable_report()->set_run_id(run_id);
    return response;
  }
  if (!request.arm().empty() || !request.with_arm().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(request.arm().empty() ? "with_arm" : "arm",
                     ": only a comparison across runs (with_run_id) picks arms"));
  }
  for (const v1::ArmSpec& arm : run.spec().arms()) options.arm_order.push_back(arm.name());
  if (!options.baseline.empty() && std::find(options.arm_order.begin(), options.arm_order.end(),
                                             options.baseline) == options.arm_order.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("baseline: run ", run_id, " has no arm named \"", options.baseline,
                     "\" (arms: ", absl::StrJoin(options.arm_order, ", "), ")"));
  }
  TLB_ASSIGN_OR_RETURN(std::vector<v1::Sample> samples, store_.GetSamples(run_id));
  const std::string title = absl::StrCat(run.spec().benchmark(), " — run ", run_id, " (",
                                         run.spec().name(), "), ", v1::RunState_Name(run.state()));
  // The same comparison the CLI computes for JSON/CSV and offline CSV: one pipeline from the
  // samples to the Report (with verdicts) and its text.
  report::RunReportOptions extras = ReportOptionsFromRequest(request);
  extras.spec = &run.spec();
  // A stop: verdict run's judged rows are reported with their sequential verdicts.
  if (run.spec().adaptive().stop() == v1::AdaptiveSpec::STOP_VERDICT) {
    extras.adaptive_rows = &run.adaptive_rows();
  }
  TLB_ASSIGN_OR_RETURN(v1::CompareResponse response,
                       report::CompareRunSamples(samples, options, title, extras));
  response.mutable_report()->set_run_id(run_id);
  return response;
}

absl::StatusOr<std::vector<v1::RunEvent>> RunServiceImpl::RunEventsSince(const std::string& run_id,
                                                                         uint64_t after_id,
                                                                         uint32_t limit) {
  return store_.RunEventsSince(run_id, after_id, limit);
}

const v1::ListWorkloadsResponse& RunServiceImpl::ListWorkloads() { return WorkloadCatalogue(); }

absl::StatusOr<FleetSnapshot> RunServiceImpl::Snapshot() {
  TLB_ASSIGN_OR_RETURN(store::StoreCounts counts, store_.Counts());
  FleetSnapshot snapshot;
  for (AgentState s : {AgentState::kConnecting, AgentState::kIdle, AgentState::kRunning,
                       AgentState::kRebooting, AgentState::kDisconnected}) {
    snapshot.agents[s] = 0;
  }
  for (int s = v1::RunState_MIN; s <= v1::RunState_MAX; ++s) {
    if (s != v1::RUN_STATE_UNSPECIFIED) snapshot.runs[static_cast<v1::RunState>(s)] = 0;
  }
  for (int s = v1::JobState_MIN; s <= v1::JobState_MAX; ++s) {
    if (s != v1::JOB_STATE_UNSPECIFIED) snapshot.jobs[static_cast<v1::JobState>(s)] = 0;
  }
  for (const auto& [state, n] : counts.runs) snapshot.runs[state] += n;
  for (const auto& [state, n] : counts.jobs) snapshot.jobs[state] += n;
  snapshot.queue_depth = counts.queued_jobs_of_active_runs;

  fleet_.CountAgents(counts.hosts, snapshot);
  return snapshot;
}

}  // namespace tlbfleet::core
