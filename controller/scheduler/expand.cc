#include "controller/scheduler/expand.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalogue/catalogue.h"
#include "controller/scheduler/boot_plan.h"
#include "controller/scheduler/ncpus_expr.h"
#include "controller/scheduler/run_spec.h"
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
void ResolveJob(const catalogue::WorkloadSchema* workload, uint32_t fixed_timeout, JobPlan* job) {
  job->timeout_seconds = fixed_timeout > 0 ? fixed_timeout : kFallbackTimeoutSeconds;
  if (workload == nullptr) return;
  absl::StatusOr<catalogue::Params> resolved = catalogue::ResolveParams(*workload, job->params);
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

// FNV-1a, then SplitMix64's finaliser to spread FNV's weak low bits over the whole word.
uint64_t StableHash(const std::string& text) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

// Evaluates one host-dependent bound and checks it against the sweep bounds, naming the
// expression and the host's value in the error.
absl::StatusOr<int64_t> EvaluateBound(const std::string& expr, const std::string& path, int64_t lo,
                                      const HostTopology& topology) {
  absl::StatusOr<int64_t> value = EvaluateNcpusExpr(expr, topology.cpus);
  if (!value.ok()) return FieldError(path, value.status().message());
  if (*value < lo || *value > kMaxSweepBound) {
    return FieldError(path,
                      absl::StrCat(expr, " = ", *value, " on this host (ncpus=", topology.cpus,
                                   "); must be in [", lo, ", ", kMaxSweepBound, "]"));
  }
  return value;
}

}  // namespace

HostTopology TopologyOf(const v1::HostInfo& host) {
  HostTopology t;
  const v1::CpuTopology& topo = host.topology();
  t.cpus = topo.cpus() > 0 ? topo.cpus() : host.logical_cpus();
  t.cpus_per_core = topo.cpus_per_core();
  t.cpus_per_llc = topo.cpus_per_llc();
  t.cpus_per_numa_node = topo.cpus_per_numa_node();
  return t;
}

bool SweepDependsOnHost(const v1::SweepSpec& sweep) {
  return !sweep.param().empty() &&
         (sweep.policy() == "topology" || !sweep.min_expr().empty() || !sweep.max_expr().empty());
}

std::vector<int64_t> TopologySequence(int64_t min, int64_t max, const HostTopology& topology) {
  if (min > max) return {};
  std::set<int64_t> values = {min, max};
  const int64_t n = topology.cpus;
  for (int64_t level : {topology.cpus_per_core, topology.cpus_per_llc, topology.cpus_per_numa_node,
                        n, 2 * n, 4 * n}) {
    if (level > min && level < max) values.insert(level);
  }
  return {values.begin(), values.end()};
}

absl::StatusOr<v1::SweepSpec> ResolveSweepForHost(const v1::SweepSpec& sweep,
                                                  const HostTopology& topology) {
  v1::SweepSpec out = sweep;
  out.clear_min_expr();
  out.clear_max_expr();
  if (!SweepDependsOnHost(sweep)) return out;
  const std::string path = absl::StrCat("sweep.", sweep.param());
  if (topology.cpus <= 0) {
    return FieldError(path, "depends on the host's CPUs, but the host did not report them");
  }
  if (!sweep.min_expr().empty()) {
    absl::StatusOr<int64_t> min =
        EvaluateBound(sweep.min_expr(), path + ".min", kMinSweepBound, topology);
    if (!min.ok()) return min.status();
    out.set_min(*min);
  }
  if (!sweep.max_expr().empty()) {
    absl::StatusOr<int64_t> max =
        EvaluateBound(sweep.max_expr(), path + ".max", kMinSweepBound, topology);
    if (!max.ok()) return max.status();
    out.set_max(*max);
  }
  if (sweep.values_size() > 0) {  // a list capped by max_expr
    const int64_t cap = out.max();
    out.clear_values();
    out.clear_min();
    for (const std::string& value : sweep.values()) {
      int64_t n = 0;
      if (!absl::SimpleAtoi(value, &n) || n <= cap) out.add_values(value);
    }
    if (out.values_size() == 0) {
      return FieldError(path + ".max", absl::StrCat(sweep.max_expr(), " = ", out.max(),
                                                    " on this host (ncpus=", topology.cpus,
                                                    ") leaves no value of the list"));
    }
    out.clear_max();
    return out;
  }
  if (out.max() < out.min()) {
    const std::string max_text = sweep.max_expr().empty()
                                     ? absl::StrCat(out.max())
                                     : absl::StrCat(sweep.max_expr(), " = ", out.max());
    const std::string min_text = sweep.min_expr().empty()
                                     ? absl::StrCat(out.min())
                                     : absl::StrCat(sweep.min_expr(), " = ", out.min());
    return FieldError(path + ".max", absl::StrCat(max_text, " is below min ", min_text,
                                                  " on this host (ncpus=", topology.cpus, ")"));
  }
  if (sweep.policy() == "topology") {
    out.clear_policy();
    for (int64_t v : TopologySequence(out.min(), out.max(), topology)) {
      out.add_values(absl::StrCat(v));
    }
    out.clear_min();
    out.clear_max();
  }
  return out;
}

absl::StatusOr<SlotExpansion> ExpandSlotForHost(const v1::RunSpec& spec,
                                                const HostTopology& topology) {
  const std::string on_host = absl::StrCat(" (on a host with ncpus=", topology.cpus, ")");
  absl::StatusOr<v1::SweepSpec> sweep = ResolveSweepForHost(spec.sweep(), topology);
  if (!sweep.ok()) return sweep.status();
  v1::RunSpec resolved = spec;
  *resolved.mutable_sweep() = *std::move(sweep);
  // Validated with every slot counted as this one, so the job limit holds for the run.
  if (absl::Status s = ValidateRunSpec(resolved); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(std::string(s.message()), on_host));
  }
  resolved.mutable_hosts()->set_count(1);  // ExpandRun: this one slot
  SlotExpansion out;
  out.jobs = ExpandRun(resolved);
  out.basis = absl::StrCat(resolved.sweep().param(), "=",
                           absl::StrJoin(SweepValues(resolved.sweep()), ","));
  return out;
}

std::vector<std::string> SweepValues(const v1::SweepSpec& sweep) {
  if (sweep.param().empty()) return {""};
  if (sweep.values_size() > 0) return {sweep.values().begin(), sweep.values().end()};
  std::vector<std::string> out;
  for (int64_t v : PolicySequence(sweep)) out.push_back(absl::StrCat(v));
  return out;
}

std::map<std::string, std::string> ArmParams(const v1::RunSpec& spec, const v1::ArmSpec& arm) {
  std::map<std::string, std::string> params(spec.params().begin(), spec.params().end());
  for (const auto& [name, value] : arm.params()) params[name] = value;
  for (const auto& [name, policy] : arm.param_policies()) params.erase(name);
  return params;
}

std::map<std::string, v1::ParamPolicy> ArmParamPolicies(const v1::RunSpec& spec,
                                                        const v1::ArmSpec& arm) {
  std::map<std::string, v1::ParamPolicy> policies(spec.param_policies().begin(),
                                                  spec.param_policies().end());
  for (const auto& [name, policy] : arm.param_policies()) policies[name] = policy;
  for (const auto& [name, value] : arm.params()) policies.erase(name);
  return policies;
}

IntRange MmtestsSection(uint32_t iteration, int64_t max) {
  // With max >= 8 every section holds at least one value; below that, one value each.
  const int64_t sections = std::min<int64_t>(8, max);
  const int64_t k = static_cast<int64_t>((iteration - 1) % static_cast<uint64_t>(sections));
  return {k * max / sections + 1, (k + 1) * max / sections};
}

int64_t MmtestsPolicyValue(const std::string& run_name, const std::string& param,
                           uint32_t iteration, int64_t max) {
  const IntRange section = MmtestsSection(iteration, max);
  const uint64_t width = static_cast<uint64_t>(section.hi - section.lo) + 1;
  // '\0' cannot occur in a run name or parameter name, so the fields cannot run together.
  const std::string seed =
      absl::StrCat(run_name, std::string(1, '\0'), param, std::string(1, '\0'), iteration);
  return section.lo + static_cast<int64_t>(StableHash(seed) % width);
}

std::vector<JobPlan> ExpandRun(const v1::RunSpec& spec) {
  const catalogue::WorkloadSchema* workload = FindWorkload(spec.benchmark());
  const std::vector<std::string> values = SweepValues(spec.sweep());
  const bool ceiling_sweep = IsCeilingSweep(spec.sweep());
  // A ceiling sweep sets the job's ceiling, not a workload parameter.
  const std::string swept = ceiling_sweep ? std::string() : spec.sweep().param();

  // The (sweep value, arm) templates, resolved once: the slots and iterations repeat them.
  // Per template, the parameters drawn per iteration (usually none).
  std::vector<JobPlan> templates;
  std::vector<std::map<std::string, v1::ParamPolicy>> policies;
  templates.reserve(values.size() * static_cast<size_t>(spec.arms_size()));
  for (const std::string& value : values) {
    for (const v1::ArmSpec& arm : spec.arms()) {
      JobPlan job;
      job.arm = arm.name();
      job.param_name = swept;
      job.params = ArmParams(spec, arm);
      policies.push_back(ArmParamPolicies(spec, arm));
      if (!swept.empty()) job.params[swept] = value;
      ResolveJob(workload, spec.job_timeout_seconds(), &job);
      if (!swept.empty()) job.param_value = job.params[swept];
      if (!arm.ceiling().empty()) {
        absl::StatusOr<std::string> ceiling = CanonicalCeiling(arm.ceiling(), "ceiling");
        job.ceiling = ceiling.ok() ? *ceiling : arm.ceiling();
      }
      if (ceiling_sweep) {
        absl::StatusOr<std::string> ceiling = CanonicalCeiling(value, "sweep.ceiling");
        job.ceiling = ceiling.ok() ? *ceiling : value;
        job.param_name = kCeilingSweepParam;
        job.param_value = job.ceiling;
      }
      job.boot_entry = arm.boot_entry();
      job.monitors.assign(spec.monitors().begin(), spec.monitors().end());
      templates.push_back(std::move(job));
    }
  }

  std::vector<JobPlan> jobs;
  // One entry per boot index; "" everywhere when no arm names a boot entry.
  const std::vector<std::string> boot_entries =
      BootIndexEntries(spec, std::max<uint32_t>(spec.boots(), 1));
  const size_t arms = static_cast<size_t>(spec.arms_size());
  jobs.reserve(templates.size() * spec.iterations() * boot_entries.size() * spec.hosts().count());
  for (uint32_t slot = 0; slot < spec.hosts().count(); ++slot) {
    for (uint32_t boot = 0; boot < boot_entries.size(); ++boot) {
      for (uint32_t iteration = 1; iteration <= spec.iterations(); ++iteration) {
        std::vector<size_t> order(values.size());
        for (size_t v = 0; v < order.size(); ++v) order[v] = v;
        if (ceiling_sweep) order = BalancedOrder(values.size(), iteration);
        for (size_t t = 0; t < templates.size(); ++t) {
          const size_t i = order[t / arms] * arms + t % arms;
          if (templates[i].boot_entry != boot_entries[boot]) continue;
          JobPlan& job = jobs.emplace_back(templates[i]);
          job.slot = slot;
          job.boot = boot;
          job.iteration = iteration;
          if (policies[i].empty()) continue;
          for (const auto& [name, policy] : policies[i]) {
            job.params[name] = absl::StrCat(MmtestsPolicyValue(spec.name(), name, iteration,
                                                               std::max<int64_t>(policy.max(), 1)));
          }
          ResolveJob(workload, spec.job_timeout_seconds(), &job);  // the timeout may depend on it
        }
      }
    }
  }
  return jobs;
}

void RetargetJob(const v1::RunSpec& spec, uint32_t boot, uint32_t iteration, JobPlan* job) {
  job->boot = boot;
  job->iteration = iteration;
  auto arm = std::find_if(spec.arms().begin(), spec.arms().end(),
                          [&](const v1::ArmSpec& a) { return a.name() == job->arm; });
  if (arm == spec.arms().end()) return;
  const std::map<std::string, v1::ParamPolicy> policies = ArmParamPolicies(spec, *arm);
  if (policies.empty()) return;
  for (const auto& [name, policy] : policies) {
    job->params[name] = absl::StrCat(
        MmtestsPolicyValue(spec.name(), name, iteration, std::max<int64_t>(policy.max(), 1)));
  }
  ResolveJob(FindWorkload(spec.benchmark()), spec.job_timeout_seconds(), job);
}

}  // namespace tlbfleet::scheduler
