// ValidateRunSpec: the one check of a RunSpec at the boundary, whether it came from YAML,
// from the JSON API or from a nightly schedule.

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalogue/catalogue.h"
#include "controller/scheduler/boot_plan.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/host_lost.h"
#include "controller/scheduler/iteration_length.h"
#include "controller/scheduler/ncpus_expr.h"
#include "controller/scheduler/run_spec.h"
#include "controller/scheduler/run_spec_internal.h"

namespace tlbfleet::scheduler {

absl::StatusOr<std::string> CanonicalCeiling(absl::string_view text, absl::string_view path) {
  if (text == "default") return std::string("default");
  // Digits only, like workload integers: no sign, spaces or suffixes to interpret.
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(),
                                                   [](char c) { return c >= '0' && c <= '9'; });
  int64_t pages = 0;
  if (!digits || !absl::SimpleAtoi(text, &pages) || pages > kMaxCeiling) {
    return FieldError(path, absl::StrCat("must be \"default\" or an integer in [0, ", kMaxCeiling,
                                         "], got ", Quote(text)));
  }
  return absl::StrCat(pages);
}

const catalogue::WorkloadSchema* FindWorkload(const std::string& name) {
  return catalogue::FindWorkload(name);
}

namespace {

constexpr char kMmtestsPolicy[] = "mmtests";

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// Run and arm names end up in file names, URLs and report columns, hence the narrow charset.
absl::Status CheckName(const std::string& name, const std::string& path) {
  if (name.empty()) return FieldError(path, "required");
  if (name.size() > kMaxNameLength) {
    return FieldError(
        path, absl::StrCat("must be at most ", kMaxNameLength, " characters, got ", name.size()));
  }
  for (char c : name) {
    if (!IsNameChar(c)) {
      return FieldError(path, absl::StrCat("may only contain letters, digits, '.', '_' and '-', "
                                           "got ",
                                           Quote(name)));
    }
  }
  return absl::OkStatus();
}

// Boot entries are named by the agents' own configuration: letters, digits, '.', '_', '+'
// and '-' ("6.12.117+deb12"). Whether a host has the entry is checked when hosts are matched.
absl::Status CheckBootEntryName(const std::string& name, const std::string& path) {
  if (name.size() > kMaxNameLength) {
    return FieldError(
        path, absl::StrCat("must be at most ", kMaxNameLength, " characters, got ", name.size()));
  }
  for (char c : name) {
    if (!IsNameChar(c) && c != '+') {
      return FieldError(path, absl::StrCat("may only contain letters, digits, '.', '_', '+' and "
                                           "'-', got ",
                                           Quote(name)));
    }
  }
  return absl::OkStatus();
}

// Source and config names are the builder agents' (docs/kernels.md); a revision is one git
// argument, never an option: whether it resolves is the builder's to say.
absl::Status CheckRevision(const std::string& rev, const std::string& field) {
  if (rev.empty()) return FieldError(field, "required");
  if (rev.size() > 256) {
    return FieldError(field, absl::StrCat("must be at most 256 characters, got ", rev.size()));
  }
  if (rev[0] == '-') {
    return FieldError(field, absl::StrCat("a revision may not start with '-', got ", Quote(rev)));
  }
  for (char c : rev) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f || c == '\\') {
      return FieldError(
          field,
          absl::StrCat("a git revision has no spaces or control characters, got ", Quote(rev)));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckKernelRevision(const v1::KernelRevision& kernel, const std::string& path) {
  if (absl::Status s = CheckName(kernel.source(), path + ".source"); !s.ok()) return s;
  if (!kernel.config().empty()) {
    if (absl::Status s = CheckName(kernel.config(), path + ".config"); !s.ok()) return s;
  }
  if (absl::Status s = CheckRevision(kernel.rev(), path + ".rev"); !s.ok()) return s;
  if (!kernel.revert().empty()) return CheckRevision(kernel.revert(), path + ".revert");
  return absl::OkStatus();
}

absl::Status UnknownParameter(const catalogue::WorkloadSchema& workload, const std::string& path) {
  std::vector<std::string> known;
  for (const catalogue::ParamSpec& p : workload.Schema()) known.push_back(p.name);
  return FieldError(path, absl::StrCat("unknown parameter for ", std::string(workload.Name()),
                                       " (known: ", absl::StrJoin(known, ", "), ")"));
}

// One params map (the run's or an arm's): known names, valid values, and not the swept
// parameter — the sweep would silently override it, which is never what the user meant.
absl::Status CheckParams(const catalogue::WorkloadSchema& workload,
                         const google::protobuf::Map<std::string, std::string>& params,
                         const std::string& path, const std::string& swept) {
  // Proto maps iterate in no particular order; sort so the first error is reproducible.
  const std::map<std::string, std::string> sorted(params.begin(), params.end());
  for (const auto& [name, value] : sorted) {
    const std::string field = absl::StrCat(path, ".", name);
    const catalogue::ParamSpec* spec = workload.FindParam(name);
    if (spec == nullptr) return UnknownParameter(workload, field);
    if (absl::Status s = spec->Check(value); !s.ok()) return FieldError(field, s.message());
    if (name == swept) {
      return FieldError(field, absl::StrCat("is the swept parameter (sweep.", swept,
                                            "); set it in the sweep only"));
    }
  }
  return absl::OkStatus();
}

// One param_policies map (the run's or an arm's), next to the params map of the same level.
absl::Status CheckParamPolicies(const catalogue::WorkloadSchema& workload,
                                const google::protobuf::Map<std::string, v1::ParamPolicy>& policies,
                                const google::protobuf::Map<std::string, std::string>& fixed,
                                const std::string& path, const std::string& swept) {
  const std::map<std::string, v1::ParamPolicy> sorted(policies.begin(), policies.end());
  for (const auto& [name, policy] : sorted) {
    const std::string field = absl::StrCat(path, ".", name);
    const catalogue::ParamSpec* spec = workload.FindParam(name);
    if (spec == nullptr) return UnknownParameter(workload, field);
    if (name == swept) {
      return FieldError(field, absl::StrCat("is the swept parameter (sweep.", swept,
                                            "); set it in the sweep only"));
    }
    if (fixed.find(name) != fixed.end()) {
      return FieldError(field, "given both as a value and as a policy");
    }
    if (policy.policy() != kMmtestsPolicy) {
      return FieldError(
          absl::StrCat(field, ".policy"),
          policy.policy().empty()
              ? std::string("required (mmtests)")
              : absl::StrCat("unknown policy ", Quote(policy.policy()), " (known: mmtests)"));
    }
    if (spec->type != catalogue::ParamType::kInt) {
      return FieldError(field, "the mmtests policy needs an integer parameter");
    }
    const std::string max_path = absl::StrCat(field, ".max");
    if (policy.max() < kMinSweepBound || policy.max() > kMaxSweepBound) {
      return RangeError(max_path, kMinSweepBound, kMaxSweepBound, absl::StrCat(policy.max()));
    }
    // Every drawn value lies in [1, max], so checking the ends checks them all.
    if (absl::Status s = spec->Check("1"); !s.ok()) {
      return FieldError(field, absl::StrCat("the mmtests policy draws from 1, which is not a valid "
                                            "value: ",
                                            std::string(s.message())));
    }
    if (absl::Status s = spec->Check(absl::StrCat(policy.max())); !s.ok()) {
      return FieldError(max_path, s.message());
    }
  }
  return absl::OkStatus();
}

// `sweep: {ceiling: [1, 2, 4, ...]}` (or a linear/pow2/fib policy): flush ceilings in pages,
// 0..INT_MAX, each once. Not a workload parameter: the agent writes each before its job.
absl::Status CheckCeilingSweep(const v1::SweepSpec& sweep) {
  const std::string path = absl::StrCat("sweep.", kCeilingSweepParam);
  if (!sweep.min_expr().empty() || !sweep.max_expr().empty()) {
    return FieldError(path, "ceiling values do not depend on the host; give numbers");
  }
  if (sweep.values_size() > 0) {
    if (!sweep.policy().empty()) {
      return FieldError(path, "give either a list of values or a policy, not both");
    }
    std::set<std::string> seen;
    for (int i = 0; i < sweep.values_size(); ++i) {
      const std::string field = absl::StrCat(path, "[", i, "]");
      const std::string& value = sweep.values(i);
      int64_t pages = 0;
      const bool digits = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
        return c >= '0' && c <= '9';
      });
      if (!digits || !absl::SimpleAtoi(value, &pages) || pages > kMaxCeiling) {
        return RangeError(field, 0, kMaxCeiling, value);
      }
      if (!seen.insert(absl::StrCat(pages)).second) {
        return FieldError(field, absl::StrCat("duplicate ceiling ", pages));
      }
    }
    return absl::OkStatus();
  }
  if (sweep.policy() != "linear" && sweep.policy() != "pow2" && sweep.policy() != "fib") {
    return FieldError(absl::StrCat(path, ".policy"),
                      sweep.policy().empty()
                          ? std::string("required (linear, pow2 or fib), or give a list")
                          : absl::StrCat("unknown policy ", Quote(sweep.policy()),
                                         " for a ceiling sweep (known: linear, pow2, fib)"));
  }
  if (sweep.min() < 0 || sweep.min() > kMaxCeiling) {
    return RangeError(path + ".min", 0, kMaxCeiling, absl::StrCat(sweep.min()));
  }
  if (sweep.max() < sweep.min() || sweep.max() > kMaxCeiling) {
    return RangeError(path + ".max", sweep.min(), kMaxCeiling, absl::StrCat(sweep.max()));
  }
  return absl::OkStatus();
}

absl::Status CheckSweep(const catalogue::WorkloadSchema& workload, const v1::SweepSpec& sweep) {
  if (IsCeilingSweep(sweep)) return CheckCeilingSweep(sweep);
  if (sweep.param().empty()) {
    if (sweep.values_size() > 0 || !sweep.policy().empty()) {
      return FieldError("sweep.param", "required when sweep values or a policy are given");
    }
    return absl::OkStatus();
  }
  const std::string path = absl::StrCat("sweep.", sweep.param());
  const catalogue::ParamSpec* spec = workload.FindParam(sweep.param());
  if (spec == nullptr) return UnknownParameter(workload, path);
  if (sweep.values_size() > 0 && !sweep.policy().empty()) {
    return FieldError(path, "give either a list of values or a policy, not both");
  }
  const std::string min_path = absl::StrCat(path, ".min");
  const std::string max_path = absl::StrCat(path, ".max");
  // Expressions are checked for syntax here and evaluated on the host (ExpandSlotForHost).
  for (const auto& [expr, field] :
       {std::pair(&sweep.min_expr(), &min_path), std::pair(&sweep.max_expr(), &max_path)}) {
    if (expr->empty()) continue;
    absl::StatusOr<NcpusExpr> parsed = ParseNcpusExpr(*expr);
    if (!parsed.ok()) return FieldError(*field, parsed.status().message());
  }
  if (sweep.values_size() > 0) {
    if (!sweep.min_expr().empty()) {
      return FieldError(min_path, "a list takes no min (max caps it on the host)");
    }
    std::set<std::string> seen;
    for (int i = 0; i < sweep.values_size(); ++i) {
      const std::string field = absl::StrCat(path, "[", i, "]");
      const std::string& value = sweep.values(i);
      if (absl::Status s = spec->Check(value); !s.ok()) return FieldError(field, s.message());
      if (!seen.insert(value).second) {
        return FieldError(field, absl::StrCat("duplicate value ", Quote(value)));
      }
    }
    if (!sweep.max_expr().empty() && spec->type != catalogue::ParamType::kInt) {
      return FieldError(max_path, "a capped list needs an integer parameter");
    }
    return absl::OkStatus();
  }
  if (sweep.policy().empty()) {
    return FieldError(path, "at least one value (or a policy) is required");
  }
  if (sweep.policy() != "linear" && sweep.policy() != "pow2" && sweep.policy() != "fib" &&
      sweep.policy() != "topology") {
    return FieldError(absl::StrCat(path, ".policy"),
                      absl::StrCat("unknown policy ", Quote(sweep.policy()),
                                   " (known: linear, pow2, fib, topology)"));
  }
  if (spec->type != catalogue::ParamType::kInt) {
    return FieldError(path, absl::StrCat("a ", sweep.policy(),
                                         " sweep needs an integer parameter; give a list of "
                                         "values instead"));
  }
  const bool fixed_min = sweep.min_expr().empty();
  const bool fixed_max = sweep.max_expr().empty();
  if (fixed_min && (sweep.min() < kMinSweepBound || sweep.min() > kMaxSweepBound)) {
    return RangeError(min_path, kMinSweepBound, kMaxSweepBound, absl::StrCat(sweep.min()));
  }
  if (fixed_max &&
      (sweep.max() < (fixed_min ? sweep.min() : kMinSweepBound) || sweep.max() > kMaxSweepBound)) {
    return RangeError(max_path, fixed_min ? sweep.min() : kMinSweepBound, kMaxSweepBound,
                      absl::StrCat(sweep.max()));
  }
  // Every generated value lies in [min, max], so checking the ends checks them all. The
  // ends that depend on the host are checked when a host takes the run.
  if (absl::Status s = spec->Check(absl::StrCat(sweep.min())); fixed_min && !s.ok()) {
    return FieldError(min_path, s.message());
  }
  if (absl::Status s = spec->Check(absl::StrCat(sweep.max())); fixed_max && !s.ok()) {
    return FieldError(max_path, s.message());
  }
  return absl::OkStatus();
}

absl::Status CheckArms(const catalogue::WorkloadSchema& workload, const v1::RunSpec& spec) {
  if (spec.arms_size() == 0) return FieldError("arms", "at least one arm is required");
  std::set<std::string> names;
  for (int i = 0; i < spec.arms_size(); ++i) {
    const v1::ArmSpec& arm = spec.arms(i);
    const std::string path = absl::StrCat("arms[", i, "]");
    if (absl::Status s = CheckName(arm.name(), path + ".name"); !s.ok()) return s;
    if (!names.insert(arm.name()).second) {
      return FieldError(path + ".name", absl::StrCat("duplicate arm name ", Quote(arm.name())));
    }
    absl::Status s = CheckParams(workload, arm.params(), path + ".params", spec.sweep().param());
    if (!s.ok()) return s;
    s = CheckParamPolicies(workload, arm.param_policies(), arm.params(), path + ".params",
                           spec.sweep().param());
    if (!s.ok()) return s;
    if (!arm.ceiling().empty()) {
      absl::StatusOr<std::string> ceiling = CanonicalCeiling(arm.ceiling(), path + ".ceiling");
      if (!ceiling.ok()) return ceiling.status();
      if (IsCeilingSweep(spec.sweep())) {
        return FieldError(path + ".ceiling",
                          "the run sweeps the ceiling (sweep.ceiling); an arm may not set one");
      }
    }
    if (!arm.boot_entry().empty()) {
      if (absl::Status s = CheckBootEntryName(arm.boot_entry(), path + ".boot_entry"); !s.ok()) {
        return s;
      }
      // The controller names a kernel arm's boot entry itself (kernel-<id>): a user's entry
      // of that form would be taken for one, and an arm has one boot entry.
      const bool generated = absl::StartsWith(arm.boot_entry(), kKernelEntryPrefix);
      if (arm.has_kernel() && !generated) {
        return FieldError(path + ".boot_entry",
                          "an arm boots either a boot entry or a kernel built from source "
                          "(kernel:), not both");
      }
      if (!arm.has_kernel() && generated) {
        return FieldError(path + ".boot_entry",
                          absl::StrCat("boot entry names starting with ", Quote(kKernelEntryPrefix),
                                       " are the controller's, for kernels built from source"));
      }
    }
    if (arm.has_kernel()) {
      if (absl::Status s = CheckKernelRevision(arm.kernel(), path + ".kernel"); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status CheckHosts(const v1::HostSelector& hosts) {
  if (hosts.count() < kMinHosts || hosts.count() > kMaxHosts) {
    return RangeError("hosts.count", kMinHosts, kMaxHosts, absl::StrCat(hosts.count()));
  }
  const std::map<std::string, std::string> labels(hosts.labels().begin(), hosts.labels().end());
  for (const auto& [key, value] : labels) {
    if (key.empty()) return FieldError("hosts.labels", "label names must not be empty");
  }
  for (int i = 0; i < hosts.microarch_size(); ++i) {
    if (hosts.microarch(i).empty()) {
      return FieldError(absl::StrCat("hosts.microarch[", i, "]"), "must not be empty");
    }
  }
  std::set<std::string> names;
  for (int i = 0; i < hosts.names_size(); ++i) {
    const std::string path = absl::StrCat("hosts.names[", i, "]");
    if (hosts.names(i).empty()) return FieldError(path, "must not be empty");
    if (!names.insert(hosts.names(i)).second) {
      return FieldError(path, absl::StrCat("duplicate host name ", Quote(hosts.names(i))));
    }
  }
  if (hosts.min_dtlb_entries() > kMaxDtlbEntries) {
    return RangeError("hosts.min_dtlb_entries", kMinDtlbEntries, kMaxDtlbEntries,
                      absl::StrCat(hosts.min_dtlb_entries()));
  }
  if (hosts.kernel_release().size() > kMaxKernelReleaseGlob) {
    return FieldError("hosts.kernel_release",
                      absl::StrCat("must be at most ", kMaxKernelReleaseGlob, " characters, got ",
                                   hosts.kernel_release().size()));
  }
  // A run that can never find enough hosts would wait forever; refuse it now.
  if (!names.empty() && hosts.count() > names.size()) {
    return FieldError("hosts.count", absl::StrCat(hosts.count(),
                                                  " hosts requested but hosts.names "
                                                  "lists only ",
                                                  names.size()));
  }
  return absl::OkStatus();
}

// Saturates instead of overflowing: only the comparison against kMaxJobs matters.
uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) return UINT64_MAX;
  return a * b;
}

uint64_t SweepValueCount(const v1::SweepSpec& sweep) {
  if (sweep.param().empty()) return 1;
  if (SweepDependsOnHost(sweep)) return 1;  // counted per slot when a host takes it
  if (sweep.values_size() > 0) return static_cast<uint64_t>(sweep.values_size());
  // A linear sweep is counted, not generated: it may be a million values long.
  if (sweep.policy() == "linear") return static_cast<uint64_t>(sweep.max() - sweep.min() + 1);
  return SweepValues(sweep).size();
}

// The monitors of the catalogue; each may appear once.
absl::Status CheckMonitors(const v1::RunSpec& spec) {
  std::set<std::string> seen;
  for (int i = 0; i < spec.monitors_size(); ++i) {
    const std::string path = absl::StrCat("monitors[", i, "]");
    const std::string& name = spec.monitors(i);
    if (catalogue::FindMonitor(name) == nullptr) {
      std::vector<std::string> known;
      for (const catalogue::MonitorInfo& m : catalogue::Monitors()) known.push_back(m.name);
      return FieldError(path, absl::StrCat("unknown monitor ", Quote(name),
                                           " (known: ", absl::StrJoin(known, ", "), ")"));
    }
    if (!seen.insert(name).second)
      return FieldError(path, absl::StrCat("duplicate monitor ", Quote(name)));
  }
  return absl::OkStatus();
}

// One adaptive level (`iterations` or `boots`): planned = min <= max <= hi.
absl::Status CheckAdaptiveLevel(const std::string& path, const v1::AdaptiveSpec::Range& range,
                                uint32_t planned, int64_t hi) {
  if (range.max() == 0) {
    if (range.min() != 0) return FieldError(path + ".max", "required for an adaptive level");
    return absl::OkStatus();
  }
  if (range.max() > hi) return RangeError(path + ".max", 1, hi, absl::StrCat(range.max()));
  if (range.min() < 1 || range.min() > range.max()) {
    return FieldError(path + ".min", absl::StrCat("must be between 1 and max (", range.max(),
                                                  "), got ", range.min()));
  }
  if (planned != range.min()) {
    return FieldError(path, absl::StrCat("an adaptive level starts at its min (", range.min(),
                                         "), got ", planned));
  }
  return absl::OkStatus();
}

absl::Status CheckBootsAndAdaptive(const catalogue::WorkloadSchema& workload,
                                   const v1::RunSpec& spec) {
  // 0 is the proto default of specs built in code or sent as JSON before `boots` existed:
  // one boot, like 1.
  if (spec.boots() > kMaxBoots) {
    return RangeError("boots", 1, kMaxBoots, absl::StrCat(spec.boots()));
  }
  const v1::AdaptiveSpec& a = spec.adaptive();
  const bool adaptive_iterations = a.iterations().max() > 0;
  const bool adaptive_boots = a.boots().max() > 0;
  if (absl::Status s =
          CheckAdaptiveLevel("iterations", a.iterations(), spec.iterations(), kMaxIterations);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckAdaptiveLevel("boots", a.boots(), std::max<uint32_t>(spec.boots(), 1), kMaxBoots);
      !s.ok()) {
    return s;
  }
  const std::string level = adaptive_iterations ? "iterations" : "boots";
  if ((adaptive_iterations || adaptive_boots) && RunUsesBootEntries(spec)) {
    // Growing a run adds boots or iterations to the latest boot, which is one entry's only.
    return FieldError(level, "an adaptive run cannot use boot entries (arms[].boot_entry) yet");
  }
  const bool sequential_options = a.stop() != v1::AdaptiveSpec::STOP_UNSPECIFIED ||
                                  a.level() != 0 || a.margin() != 0 ||
                                  a.spending() != v1::AdaptiveSpec::SPENDING_UNSPECIFIED;
  if (a.stop() != v1::AdaptiveSpec::STOP_VERDICT && sequential_options &&
      (a.level() != 0 || a.margin() != 0 ||
       a.spending() != v1::AdaptiveSpec::SPENDING_UNSPECIFIED)) {
    return FieldError(a.spending() != v1::AdaptiveSpec::SPENDING_UNSPECIFIED ? "adaptive.spending"
                      : a.level() != 0                                       ? "adaptive.level"
                                                                             : "adaptive.margin",
                      "only for stop: verdict (stop: precision judges by target_ci)");
  }
  if (!adaptive_iterations && !adaptive_boots) {
    if (a.stop() == v1::AdaptiveSpec::STOP_VERDICT) {
      return FieldError("adaptive.spending",
                        "alpha spending needs a maximum to spend over: make boots or iterations "
                        "adaptive (boots: {min, max})");
    }
    if (a.target_ci() != 0 || a.metrics_size() > 0 || sequential_options) {
      return FieldError("iterations",
                        "target_ci and metrics need an adaptive level: "
                        "iterations: {min, max, target_ci} (or the same for boots)");
    }
    return absl::OkStatus();
  }
  // stop: verdict needs no target (a target given anyway is checked as usual).
  const bool needs_target = a.stop() != v1::AdaptiveSpec::STOP_VERDICT || a.target_ci() != 0;
  // The proto cannot tell a missing target from "target_ci: 0": both are refused here.
  if (needs_target && a.target_ci() == 0) {
    return FieldError(level + ".target_ci",
                      "required for an adaptive run, and above 0 (a ratio CI half-width such "
                      "as 1%)");
  }
  if (needs_target && !(a.target_ci() > 0)) {
    return FieldError(level + ".target_ci",
                      absl::StrCat("must be above 0 (a ratio CI half-width such as 1%), got ",
                                   a.target_ci() * 100, "%"));
  }
  if (needs_target && !(a.target_ci() >= kMinTargetCi && a.target_ci() <= kMaxTargetCi)) {
    return FieldError(
        level + ".target_ci",
        absl::StrCat("must be a ratio CI half-width between ", kMinTargetCi * 100, "% and ",
                     kMaxTargetCi * 100, "%, got ", a.target_ci() * 100, "%"));
  }
  if (spec.arms_size() < 2) {
    return FieldError(level,
                      "an adaptive run stops when its arms' comparison settles: "
                      "give at least two arms");
  }
  std::vector<std::string> known;
  for (const catalogue::MetricSpec& m : workload.Metrics()) known.push_back(m.name);
  for (int i = 0; i < a.metrics_size(); ++i) {
    if (std::find(known.begin(), known.end(), a.metrics(i)) == known.end()) {
      return FieldError(
          absl::StrCat(level, ".metrics[", i, "]"),
          absl::StrCat("unknown metric ", Quote(a.metrics(i)), " of ", spec.benchmark(),
                       " (known: ", absl::StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckJobCount(const v1::RunSpec& spec) {
  const uint64_t values = SweepValueCount(spec.sweep());
  // An adaptive run may grow to its maxima; bound that, not just the first plan.
  const uint64_t iterations = std::max(spec.iterations(), spec.adaptive().iterations().max());
  const uint64_t boots = std::max(spec.boots(), spec.adaptive().boots().max());
  uint64_t jobs = SaturatingMul(spec.hosts().count(), SaturatingMul(iterations, boots));
  jobs = SaturatingMul(jobs, values);
  jobs = SaturatingMul(jobs, static_cast<uint64_t>(spec.arms_size()));
  if (jobs <= static_cast<uint64_t>(kMaxJobs)) return absl::OkStatus();
  const std::string path =
      spec.sweep().param().empty() ? std::string("iterations") : "sweep." + spec.sweep().param();
  return FieldError(
      path, absl::StrCat("the run would have more than ", kMaxJobs, " jobs (", spec.hosts().count(),
                         " hosts x ", iterations, " iterations x ", boots, " boots x ", values,
                         " sweep values x ", spec.arms_size(), " arms)"));
}

// The sweep values known before a host is chosen: all of them for a sweep that does not
// depend on the host; for one that does, the list before its cap, or a fixed min; else none
// (the arms' parameters are then checked without the swept one).
std::vector<std::string> SubmitTimeSweepValues(const v1::SweepSpec& sweep) {
  if (!SweepDependsOnHost(sweep)) return SweepValues(sweep);
  if (sweep.values_size() > 0) return {sweep.values().begin(), sweep.values().end()};
  if (sweep.min_expr().empty()) return {absl::StrCat(sweep.min())};
  return {""};
}

// The field to blame for parameters of arm `arm` that do not combine: the parameter the
// workload names first in its error ("port: ..."), where the spec sets it (the sweep, the
// arm, or the run); the arm itself when the spec does not set it (its default).
std::string CombinationField(const v1::RunSpec& spec, int arm, absl::string_view error) {
  const std::string name(error.substr(0, error.find(':')));
  const v1::ArmSpec& a = spec.arms(arm);
  if (!name.empty() && name == spec.sweep().param()) return absl::StrCat("sweep.", name);
  if (a.params().count(name) > 0) return absl::StrCat("arms[", arm, "].params.", name);
  if (a.param_policies().count(name) > 0) {
    return absl::StrCat("arms[", arm, "].param_policies.", name);
  }
  if (spec.params().count(name) > 0) return absl::StrCat("params.", name);
  if (spec.param_policies().count(name) > 0) return absl::StrCat("param_policies.", name);
  return absl::StrCat("arms[", arm, "]");
}

// Each parameter may be valid alone yet the combination not (a workload may bound one
// parameter by another), so every (arm, sweep value) pair goes through ResolveParams. This
// also catches sweep values that differ in spelling only ("01" and "1").
absl::Status CheckCombinations(const catalogue::WorkloadSchema& workload, const v1::RunSpec& spec) {
  // A ceiling sweep changes no workload parameter: the arms' parameters are checked once.
  const std::vector<std::string> values = IsCeilingSweep(spec.sweep())
                                              ? std::vector<std::string>{""}
                                              : SubmitTimeSweepValues(spec.sweep());
  const std::string swept = IsCeilingSweep(spec.sweep()) ? std::string() : spec.sweep().param();
  for (int i = 0; i < spec.arms_size(); ++i) {
    std::map<std::string, std::string> merged = ArmParams(spec, spec.arms(i));
    // A parameter drawn per iteration is checked at its largest value here, at 1 below.
    const std::map<std::string, v1::ParamPolicy> policies = ArmParamPolicies(spec, spec.arms(i));
    for (const auto& [name, policy] : policies) merged[name] = absl::StrCat(policy.max());
    std::map<std::string, size_t> canonical_values;  // canonical sweep value -> index
    for (size_t j = 0; j < values.size(); ++j) {
      if (!swept.empty() && !values[j].empty()) merged[swept] = values[j];
      absl::StatusOr<catalogue::Params> resolved = catalogue::ResolveParams(workload, merged);
      if (!resolved.ok()) {
        const std::string at = swept.empty() ? "" : absl::StrCat(" at ", swept, "=", values[j]);
        return FieldError(CombinationField(spec, i, resolved.status().message()),
                          absl::StrCat("parameters of arms[", i, "] do not combine", at, ": ",
                                       std::string(resolved.status().message())));
      }
      if (swept.empty()) continue;
      auto it = resolved->values().find(swept);
      if (it == resolved->values().end()) continue;
      auto [seen, inserted] = canonical_values.emplace(it->second, j);
      if (!inserted) {
        return FieldError(absl::StrCat("sweep.", swept, "[", j, "]"),
                          absl::StrCat("duplicate value ", Quote(values[j]), " (same as ",
                                       Quote(values[seen->second]), ")"));
      }
    }
    if (policies.empty()) continue;
    const std::string lowest_value = absl::StrCat(1);
    for (const auto& [name, policy] : policies) merged[name] = lowest_value;
    if (!swept.empty() && !values.front().empty()) merged[swept] = values.front();
    absl::StatusOr<catalogue::Params> lowest = catalogue::ResolveParams(workload, merged);
    if (!lowest.ok()) {
      return FieldError(
          CombinationField(spec, i, lowest.status().message()),
          absl::StrCat("parameters of arms[", i, "] do not combine with the lowest drawn value 1: ",
                       std::string(lowest.status().message())));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRunSpec(const v1::RunSpec& spec) {
  if (absl::Status s = CheckName(spec.name(), "name"); !s.ok()) return s;
  if (spec.benchmark().empty()) return FieldError("benchmark", "required");
  const catalogue::WorkloadSchema* workload = FindWorkload(spec.benchmark());
  if (workload == nullptr) {
    return FieldError("benchmark",
                      absl::StrCat("unknown benchmark ", Quote(spec.benchmark()), " (known: ",
                                   absl::StrJoin(catalogue::WorkloadNames(), ", "), ")"));
  }
  const std::string& swept = spec.sweep().param();
  if (absl::Status s = CheckParams(*workload, spec.params(), "params", swept); !s.ok()) return s;
  if (absl::Status s = CheckAutoParamsRecord(spec); !s.ok()) return s;
  if (RunUsesBootEntries(spec) && spec.hosts().kernel_release().size() > 0) {
    // The entry decides the kernel; a release glob too would only make hosts unmatchable.
    return FieldError("hosts.kernel_release",
                      "the arms name boot entries, which decide the kernel; leave it out");
  }
  if (absl::Status s =
          CheckParamPolicies(*workload, spec.param_policies(), spec.params(), "params", swept);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckSweep(*workload, spec.sweep()); !s.ok()) return s;
  if (spec.iterations() < kMinIterations || spec.iterations() > kMaxIterations) {
    return RangeError("iterations", kMinIterations, kMaxIterations,
                      absl::StrCat(spec.iterations()));
  }
  if (absl::Status s = CheckArms(*workload, spec); !s.ok()) return s;
  if (absl::Status s = CheckBootsAndAdaptive(*workload, spec); !s.ok()) return s;
  if (absl::Status s = CheckHosts(spec.hosts()); !s.ok()) return s;
  if (spec.job_timeout_seconds() > kMaxJobTimeoutSeconds) {
    return RangeError("job_timeout_seconds", 0, kMaxJobTimeoutSeconds,
                      absl::StrCat(spec.job_timeout_seconds()));
  }
  if (absl::Status s = CheckMonitors(spec); !s.ok()) return s;
  if (absl::Status s = CheckHostLostPolicy(spec); !s.ok()) return s;
  if (absl::Status s = CheckJobCount(spec); !s.ok()) return s;
  return CheckCombinations(*workload, spec);
}

}  // namespace tlbfleet::scheduler
