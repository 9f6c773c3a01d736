#include "controller/scheduler/expand.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "agent/workloads/workload.h"
#include "controller/scheduler/run_spec_internal.h"

namespace tlbfleet::scheduler {
namespace {

// Only reached for a spec that skipped validation (the workload vanished or the parameters
// no longer resolve); an hour keeps such a job from hanging a host forever.
constexpr uint32_t kFallbackTimeoutSeconds = 3600;

// Both sequences stop before stepping past `max`, so neither overflows, even for bounds
// that never went through ValidateRunSpec.
std::vector<int64_t> Pow2Sequence(int64_t min, int64_t max) {
  std::vector<int64_t> out = {min};
  for (int64_t p = 1; p < max; p *= 2) {
    if (p > min) out.push_back(p);
    if (p > max / 2) break;
  }
  if (max > min) out.push_back(max);
  return out;
}

std::vector<int64_t> FibSequence(int64_t min, int64_t max) {
  std::vector<int64_t> out = {min};
  int64_t a = 1;
  int64_t b = 2;
  while (a < max) {
    if (a > min) out.push_back(a);
    if (b >= max) break;
    const int64_t next = b > max - a ? max : a + b;  // anything >= max ends the loop anyway
    a = b;
    b = next;
  }
  if (max > min) out.push_back(max);
  return out;
}

std::vector<int64_t> PolicySequence(const v1::SweepSpec& sweep) {
  const int64_t min = sweep.min();
  const int64_t max = sweep.max();
  if (min > max) return {};
  if (sweep.policy() == "linear") {
    std::vector<int64_t> out;
    // Unsigned: max - min may not fit in int64_t for bounds that skipped validation.
    const uint64_t span = static_cast<uint64_t>(max) - static_cast<uint64_t>(min);
    out.reserve(static_cast<size_t>(std::min<uint64_t>(span, 1 << 20)) + 1);
    for (int64_t v = min;; ++v) {
      out.push_back(v);
      if (v == max) break;
    }
    return out;
  }
  if (sweep.policy() == "pow2") return Pow2Sequence(min, max);
  if (sweep.policy() == "fib") return FibSequence(min, max);
  return {};
}

// Fills in the job's timeout and rewrites its parameters (those the user gave, merged) in
// the workload's canonical spelling, so that "yes" and "true" do not make two
// different-looking jobs.
void ResolveJob(const workloads::Workload* workload, uint32_t fixed_timeout, JobPlan* job) {
  job->timeout_seconds = fixed_timeout > 0 ? fixed_timeout : kFallbackTimeoutSeconds;
  if (workload == nullptr) return;
  absl::StatusOr<workloads::Params> resolved = workloads::ResolveParams(*workload, job->params);
  if (!resolved.ok()) return;
  for (auto& [name, value] : job->params) {
    auto it = resolved->values().find(name);
    if (it != resolved->values().end()) value = it->second;
  }
  if (fixed_timeout > 0) return;
  const int64_t seconds = workload->TimeoutSeconds(*resolved);
  job->timeout_seconds =
      static_cast<uint32_t>(std::clamp<int64_t>(seconds, 1, std::numeric_limits<uint32_t>::max()));
}

}  // namespace

std::vector<std::string> SweepValues(const v1::SweepSpec& sweep) {
  if (sweep.param().empty()) return {""};
  if (sweep.values_size() > 0) return {sweep.values().begin(), sweep.values().end()};
  std::vector<std::string> out;
  for (int64_t v : PolicySequence(sweep)) out.push_back(absl::StrCat(v));
  return out;
}

std::vector<JobPlan> ExpandRun(const v1::RunSpec& spec) {
  const workloads::Workload* workload = FindWorkload(spec.benchmark());
  const std::vector<std::string> values = SweepValues(spec.sweep());
  const std::string& swept = spec.sweep().param();

  // The (sweep value, arm) templates, resolved once: the slots and iterations repeat them.
  std::vector<JobPlan> templates;
  templates.reserve(values.size() * static_cast<size_t>(spec.arms_size()));
  for (const std::string& value : values) {
    for (const v1::ArmSpec& arm : spec.arms()) {
      JobPlan job;
      job.arm = arm.name();
      job.param_name = swept;
      job.params.insert(spec.params().begin(), spec.params().end());
      for (const auto& [name, v] : arm.params()) job.params[name] = v;
      if (!swept.empty()) job.params[swept] = value;
      ResolveJob(workload, spec.job_timeout_seconds(), &job);
      if (!swept.empty()) job.param_value = job.params[swept];
      if (!arm.ceiling().empty()) {
        absl::StatusOr<std::string> ceiling = CanonicalCeiling(arm.ceiling(), "ceiling");
        job.ceiling = ceiling.ok() ? *ceiling : arm.ceiling();
      }
      job.monitors.assign(spec.monitors().begin(), spec.monitors().end());
      templates.push_back(std::move(job));
    }
  }

  std::vector<JobPlan> jobs;
  jobs.reserve(templates.size() * spec.iterations() * spec.hosts().count());
  for (uint32_t slot = 0; slot < spec.hosts().count(); ++slot) {
    for (uint32_t iteration = 1; iteration <= spec.iterations(); ++iteration) {
      for (const JobPlan& t : templates) {
        JobPlan& job = jobs.emplace_back(t);
        job.slot = slot;
        job.iteration = iteration;
      }
    }
  }
  return jobs;
}

}  // namespace tlbfleet::scheduler
