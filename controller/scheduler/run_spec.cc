#include "controller/scheduler/run_spec.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "controller/scheduler/host_lost.h"
#include "controller/scheduler/iteration_length.h"
#include "controller/scheduler/ncpus_expr.h"
#include "controller/scheduler/presets.h"
#include "controller/scheduler/run_spec_internal.h"

namespace tlbfleet::scheduler {
namespace {

using yaml_fields::ScalarBool;
using yaml_fields::ScalarInt;
using yaml_fields::ScalarText;
using yaml_fields::UnknownField;

// A topology sweep without max walks up to four times the machine, as mmtests does.
constexpr char kTopologyDefaultMax[] = "4*ncpus";

std::string ChildPath(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : absl::StrCat(parent, ".", key);
}

// The YAML side of the parser: every helper returns a status naming the field path, so
// that the only exceptions left to catch are yaml-cpp's own (malformed documents).
using EntryVisitor = std::function<absl::Status(const std::string& key, const YAML::Node& value)>;

// Visits a map's entries in document order (`path` is "" only for the top level, whose
// shape ParseTopLevel checks first so that errors name the source instead). Rejects non-maps,
// non-scalar keys and duplicate keys (yaml-cpp keeps both, and silently using one of them would
// hide a typo).
absl::Status ForEachEntry(const YAML::Node& node, const std::string& path,
                          const EntryVisitor& visit) {
  if (!node.IsMap()) {
    return FieldError(path, "expected a map");
  }
  std::set<std::string> seen;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      return FieldError(path, "keys must be plain strings");
    }
    const std::string key = entry.first.Scalar();
    if (!seen.insert(key).second) return FieldError(ChildPath(path, key), "duplicate key");
    if (absl::Status s = visit(key, entry.second); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ParseStringMap(const YAML::Node& node, const std::string& path,
                            google::protobuf::Map<std::string, std::string>* out) {
  if (node.IsNull()) return absl::OkStatus();  // "params:" with nothing after it
  return ForEachEntry(node, path, [&](const std::string& key, const YAML::Node& value) {
    absl::StatusOr<std::string> text = ScalarText(value, ChildPath(path, key));
    if (!text.ok()) return text.status();
    (*out)[key] = *text;
    return absl::OkStatus();
  });
}

// One per-iteration parameter: `{policy: mmtests, max: 512}`. ValidateRunSpec checks the
// policy name and the bounds against the workload; here only the shape and integer syntax.
absl::Status ParseParamPolicy(const YAML::Node& node, const std::string& path,
                              v1::ParamPolicy* policy) {
  bool has_policy = false;
  bool has_max = false;
  absl::Status s = ForEachEntry(node, path, [&](const std::string& key, const YAML::Node& v) {
    const std::string field = ChildPath(path, key);
    if (key == "policy") {
      absl::StatusOr<std::string> text = ScalarText(v, field);
      if (!text.ok()) return text.status();
      policy->set_policy(*text);
      has_policy = true;
    } else if (key == "max") {
      absl::StatusOr<int64_t> n = ScalarInt(v, field, kMinSweepBound, kMaxSweepBound);
      if (!n.ok()) return n.status();
      policy->set_max(*n);
      has_max = true;
    } else {
      return UnknownField(field, {"policy", "max"});
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  if (!has_policy) return FieldError(ChildPath(path, "policy"), "required (mmtests)");
  if (!has_max) return FieldError(ChildPath(path, "max"), "required");
  return absl::OkStatus();
}

// A params map: scalar values are fixed parameters, maps are per-iteration policies.
absl::Status ParseParams(const YAML::Node& node, const std::string& path,
                         google::protobuf::Map<std::string, std::string>* params,
                         google::protobuf::Map<std::string, v1::ParamPolicy>* policies) {
  if (node.IsNull()) return absl::OkStatus();  // "params:" with nothing after it
  return ForEachEntry(node, path, [&](const std::string& key, const YAML::Node& value) {
    const std::string field = ChildPath(path, key);
    if (value.IsMap()) return ParseParamPolicy(value, field, &(*policies)[key]);
    absl::StatusOr<std::string> text = ScalarText(value, field);
    if (!text.ok()) return text.status();
    (*params)[key] = *text;
    return absl::OkStatus();
  });
}

absl::Status ParseStringList(const YAML::Node& node, const std::string& path,
                             google::protobuf::RepeatedPtrField<std::string>* out) {
  if (node.IsNull()) return absl::OkStatus();
  if (!node.IsSequence()) return FieldError(path, "expected a list");
  for (size_t i = 0; i < node.size(); ++i) {
    absl::StatusOr<std::string> text = ScalarText(node[i], absl::StrCat(path, "[", i, "]"));
    if (!text.ok()) return text.status();
    out->Add(std::move(*text));
  }
  return absl::OkStatus();
}

// A fraction for target_ci: "1%" or 0.01. Range checks are ValidateRunSpec's.
absl::StatusOr<double> ScalarFraction(const YAML::Node& node, const std::string& path) {
  absl::StatusOr<std::string> text = ScalarText(node, path);
  if (!text.ok()) return text.status();
  std::string number = *text;
  double scale = 1;
  if (!number.empty() && number.back() == '%') {
    number.pop_back();
    scale = 0.01;
  }
  double value = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(number), &value) || !std::isfinite(value)) {
    return FieldError(path,
                      absl::StrCat("expected a fraction such as 0.01 or 1%, got ", Quote(*text)));
  }
  return value * scale;
}

// `iterations: {min, max, target_ci, metrics}` (and the same for `boots`): the level grows
// from min towards max until the comparison settles (docs/statistics.md#adaptive-runs).
// The planned count starts at min. Bounds are ValidateRunSpec's.
absl::Status ParseAdaptiveLevel(const YAML::Node& node, const std::string& path, int64_t hi,
                                v1::AdaptiveSpec* adaptive, v1::AdaptiveSpec::Range* range,
                                uint32_t* planned) {
  bool has_min = false;
  bool has_max = false;
  absl::Status s = ForEachEntry(node, path, [&](const std::string& key, const YAML::Node& v) {
    const std::string field = ChildPath(path, key);
    if (key == "min" || key == "max") {
      absl::StatusOr<int64_t> n = ScalarInt(v, field, 1, hi);
      if (!n.ok()) return n.status();
      if (key == "min") {
        range->set_min(static_cast<uint32_t>(*n));
        has_min = true;
      } else {
        range->set_max(static_cast<uint32_t>(*n));
        has_max = true;
      }
      return absl::OkStatus();
    }
    if (key == "target_ci") {
      absl::StatusOr<double> target = ScalarFraction(v, field);
      if (!target.ok()) return target.status();
      if (adaptive->target_ci() != 0 && adaptive->target_ci() != *target) {
        return FieldError(field,
                          "differs from the target_ci given for the other level; "
                          "a run has one target");
      }
      adaptive->set_target_ci(*target);
      return absl::OkStatus();
    }
    if (key == "metrics") return ParseStringList(v, field, adaptive->mutable_metrics());
    return UnknownField(field, {"min", "max", "target_ci", "metrics"});
  });
  if (!s.ok()) return s;
  if (!has_max) return FieldError(ChildPath(path, "max"), "required for an adaptive level");
  if (!has_min) range->set_min(1);
  *planned = range->min();
  return absl::OkStatus();
}

// `adaptive: {stop, level, margin, spending}`: what ends an adaptive run
// (docs/statistics.md#sequential-verdicts). Level and margin are fractions in (0, 1); which
// levels are adaptive and whether stop: verdict has a maximum to spend over is
// ValidateRunSpec's.
absl::Status ParseAdaptiveStop(const YAML::Node& node, v1::AdaptiveSpec* adaptive) {
  return ForEachEntry(node, "adaptive", [&](const std::string& key, const YAML::Node& v) {
    const std::string field = ChildPath("adaptive", key);
    if (key == "level" || key == "margin") {
      absl::StatusOr<double> value = ScalarFraction(v, field);
      if (!value.ok()) return value.status();
      if (!(*value > 0 && *value < 1)) {
        return FieldError(field, absl::StrCat("must be above 0 and below 1 (",
                                              key == "level" ? "a confidence level such as 0.95"
                                                             : "a margin such as 1%",
                                              "), got ", *value));
      }
      key == "level" ? adaptive->set_level(*value) : adaptive->set_margin(*value);
      return absl::OkStatus();
    }
    absl::StatusOr<std::string> text = ScalarText(v, field);
    if (!text.ok()) return text.status();
    if (key == "stop") {
      if (*text == "precision") {
        adaptive->set_stop(v1::AdaptiveSpec::STOP_PRECISION);
      } else if (*text == "verdict") {
        adaptive->set_stop(v1::AdaptiveSpec::STOP_VERDICT);
      } else {
        return FieldError(field, absl::StrCat("expected precision or verdict, got ", Quote(*text)));
      }
      return absl::OkStatus();
    }
    if (key == "spending") {
      if (*text == "obrien-fleming") {
        adaptive->set_spending(v1::AdaptiveSpec::SPENDING_OBRIEN_FLEMING);
      } else if (*text == "pocock") {
        adaptive->set_spending(v1::AdaptiveSpec::SPENDING_POCOCK);
      } else {
        return FieldError(field,
                          absl::StrCat("expected obrien-fleming or pocock, got ", Quote(*text)));
      }
      return absl::OkStatus();
    }
    return UnknownField(field, {"stop", "level", "margin", "spending"});
  });
}

absl::Status ParseSweep(const YAML::Node& node, v1::SweepSpec* sweep) {
  if (node.IsNull()) return absl::OkStatus();  // "sweep:" alone means no sweep
  if (!node.IsMap()) return FieldError("sweep", "expected a map with one swept parameter");
  if (node.size() != 1) {
    std::vector<std::string> keys;
    for (const auto& entry : node) keys.push_back(entry.first.Scalar());
    return FieldError("sweep", absl::StrCat("expected exactly one swept parameter, got ",
                                            node.size(), " (", absl::StrJoin(keys, ", "), ")"));
  }
  return ForEachEntry(node, "sweep", [&](const std::string& param, const YAML::Node& value) {
    const std::string path = ChildPath("sweep", param);
    sweep->set_param(param);
    if (value.IsSequence()) return ParseStringList(value, path, sweep->mutable_values());
    if (!value.IsMap()) return FieldError(path, "expected a list or a map");
    bool has_policy = false;
    bool has_min = false;
    bool has_max = false;
    bool has_values = false;
    sweep->set_min(1);
    absl::Status s = ForEachEntry(value, path, [&](const std::string& key, const YAML::Node& v) {
      const std::string field = ChildPath(path, key);
      if (key == "policy") {
        absl::StatusOr<std::string> text = ScalarText(v, field);
        if (!text.ok()) return text.status();
        sweep->set_policy(*text);
        has_policy = true;
      } else if (key == "values") {
        has_values = true;
        if (!v.IsSequence()) return FieldError(field, "expected a list");
        return ParseStringList(v, path, sweep->mutable_values());
      } else if (key == "min" || key == "max") {
        absl::StatusOr<std::string> text = ScalarText(v, field);
        if (!text.ok()) return text.status();
        // An integer, or an expression of ncpus; a constant expression is folded now.
        int64_t n = 0;
        if (!absl::SimpleAtoi(*text, &n)) {
          absl::StatusOr<NcpusExpr> expr = ParseNcpusExpr(*text);
          if (!expr.ok()) {
            return FieldError(field, absl::StrCat("expected an integer or an expression of ncpus: ",
                                                  expr.status().message()));
          }
          if (expr->uses_ncpus) {
            (key == "min" ? sweep->mutable_min_expr() : sweep->mutable_max_expr())->assign(*text);
          }
          n = expr->constant.value_or(0);
        }
        if (key == "min") {
          sweep->set_min(n);
          has_min = true;
        } else {
          sweep->set_max(n);
          has_max = true;
        }
      } else {
        return UnknownField(field, {"policy", "min", "max", "values"});
      }
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    if (has_values) {
      if (has_policy) {
        return FieldError(ChildPath(path, "policy"), "give either values or a policy, not both");
      }
      sweep->set_min(0);
      if (has_min) {
        return FieldError(ChildPath(path, "min"), "a list takes no min (max caps it)");
      }
      if (has_max && sweep->max_expr().empty()) {
        // A constant cap applies now: drop the values above it.
        std::vector<std::string> kept;
        for (const std::string& v : sweep->values()) {
          int64_t n = 0;
          if (!absl::SimpleAtoi(v, &n) || n <= sweep->max()) kept.push_back(v);
        }
        if (kept.empty()) {
          return FieldError(ChildPath(path, "max"),
                            absl::StrCat("caps every value of the list (max ", sweep->max(), ")"));
        }
        sweep->mutable_values()->Assign(kept.begin(), kept.end());
      }
      sweep->set_max(0);
      return absl::OkStatus();
    }
    if (!has_policy) {
      return FieldError(ChildPath(path, "policy"), "required (linear, pow2, fib or topology)");
    }
    if (!has_max) {
      if (sweep->policy() != "topology") return FieldError(ChildPath(path, "max"), "required");
      sweep->set_max_expr(kTopologyDefaultMax);
    }
    return absl::OkStatus();
  });
}

// `kernel: {source: linux, rev: v6.1.190, config: lab}` (docs/kernels.md).
absl::Status ParseKernelRevision(const YAML::Node& node, const std::string& path,
                                 v1::KernelRevision* kernel) {
  if (!node.IsMap()) return FieldError(path, "expected a map with source, rev and config");
  absl::Status s = ForEachEntry(node, path, [&](const std::string& key, const YAML::Node& v) {
    const std::string field = ChildPath(path, key);
    absl::StatusOr<std::string> text = ScalarText(v, field);
    if (!text.ok()) return text.status();
    if (key == "source") {
      kernel->set_source(*text);
    } else if (key == "rev") {
      kernel->set_rev(*text);
    } else if (key == "config") {
      kernel->set_config(*text);
    } else if (key == "revert") {
      kernel->set_revert(*text);
    } else if (key == "branch") {
      kernel->set_branch(*text);  // provenance: the series of a schedule following a branch
    } else {
      return UnknownField(field, {"source", "rev", "config", "revert", "branch"});
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  if (kernel->source().empty()) return FieldError(ChildPath(path, "source"), "required");
  if (kernel->rev().empty()) return FieldError(ChildPath(path, "rev"), "required");
  return absl::OkStatus();
}

absl::Status ParseArms(const YAML::Node& node, v1::RunSpec* spec) {
  if (node.IsNull()) return absl::OkStatus();  // ValidateRunSpec reports the missing arms
  if (!node.IsSequence()) return FieldError("arms", "expected a list");
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string path = absl::StrCat("arms[", i, "]");
    v1::ArmSpec* arm = spec->add_arms();
    absl::Status s = ForEachEntry(node[i], path, [&](const std::string& key, const YAML::Node& v) {
      const std::string field = ChildPath(path, key);
      if (key == "name") {
        absl::StatusOr<std::string> text = ScalarText(v, field);
        if (!text.ok()) return text.status();
        arm->set_name(*text);
      } else if (key == "params") {
        return ParseParams(v, field, arm->mutable_params(), arm->mutable_param_policies());
      } else if (key == "ceiling") {
        absl::StatusOr<std::string> text = ScalarText(v, field);
        if (!text.ok()) return text.status();
        absl::StatusOr<std::string> ceiling = CanonicalCeiling(*text, field);
        if (!ceiling.ok()) return ceiling.status();
        arm->set_ceiling(*ceiling);
      } else if (key == "boot_entry") {
        absl::StatusOr<std::string> text = ScalarText(v, field);
        if (!text.ok()) return text.status();
        arm->set_boot_entry(*text);
      } else if (key == "kernel") {
        return ParseKernelRevision(v, field, arm->mutable_kernel());
      } else {
        return UnknownField(field, {"name", "params", "ceiling", "boot_entry", "kernel"});
      }
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ParseHosts(const YAML::Node& node, v1::HostSelector* hosts) {
  if (node.IsNull()) return absl::OkStatus();
  return ForEachEntry(node, "hosts", [&](const std::string& key, const YAML::Node& v) {
    const std::string field = ChildPath("hosts", key);
    if (key == "count") {
      absl::StatusOr<int64_t> n = ScalarInt(v, field, kMinHosts, kMaxHosts);
      if (!n.ok()) return n.status();
      hosts->set_count(static_cast<uint32_t>(*n));
      return absl::OkStatus();
    }
    if (key == "labels") return ParseStringMap(v, field, hosts->mutable_labels());
    if (key == "microarch") return ParseStringList(v, field, hosts->mutable_microarch());
    if (key == "names") return ParseStringList(v, field, hosts->mutable_names());
    if (key == "pcid" || key == "invpcid") {
      absl::StatusOr<bool> b = ScalarBool(v, field);
      if (!b.ok()) return b.status();
      if (key == "pcid") {
        hosts->set_pcid(*b);
      } else {
        hosts->set_invpcid(*b);
      }
      return absl::OkStatus();
    }
    if (key == "min_dtlb_entries") {
      absl::StatusOr<int64_t> n = ScalarInt(v, field, kMinDtlbEntries, kMaxDtlbEntries);
      if (!n.ok()) return n.status();
      hosts->set_min_dtlb_entries(static_cast<uint32_t>(*n));
      return absl::OkStatus();
    }
    if (key == "kernel_release") {
      absl::StatusOr<std::string> text = ScalarText(v, field);
      if (!text.ok()) return text.status();
      // "" would silently mean "any host"; say so instead.
      if (text->empty()) return FieldError(field, "must not be empty (leave it out for any)");
      hosts->set_kernel_release(*text);
      return absl::OkStatus();
    }
    return UnknownField(field, {"count", "labels", "microarch", "names", "pcid", "invpcid",
                                "min_dtlb_entries", "kernel_release"});
  });
}

// `on_host_lost: {action: restart, after: 30m}`; CheckHostLostPolicy checks the action.
absl::Status ParseHostLost(const YAML::Node& node, v1::HostLostPolicy* policy) {
  return ForEachEntry(node, "on_host_lost", [&](const std::string& key, const YAML::Node& v) {
    const std::string field = ChildPath("on_host_lost", key);
    absl::StatusOr<std::string> text = ScalarText(v, field);
    if (!text.ok()) return text.status();
    if (key == "action") {
      policy->set_action(*text);
      return absl::OkStatus();
    }
    if (key == "after") {
      absl::StatusOr<uint32_t> seconds = ParseHostLostAfter(*text, field);
      if (!seconds.ok()) return seconds.status();
      policy->set_after_seconds(*seconds);
      return absl::OkStatus();
    }
    return UnknownField(field, {"action", "after"});
  });
}

absl::Status ParseTopLevel(const YAML::Node& root, const std::string& where, v1::RunSpec* spec) {
  for (const auto& entry : root) {
    if (!entry.first.IsScalar()) return FieldError(where, "keys must be plain strings");
  }
  return ForEachEntry(root, "", [&](const std::string& key, const YAML::Node& v) {
    if (key == "name" || key == "benchmark") {
      absl::StatusOr<std::string> text = ScalarText(v, key);
      if (!text.ok()) return text.status();
      if (key == "name") {
        spec->set_name(*text);
      } else {
        spec->set_benchmark(*text);
      }
      return absl::OkStatus();
    }
    if (key == "params") {
      return ParseParams(v, key, spec->mutable_params(), spec->mutable_param_policies());
    }
    if (key == "sweep") return ParseSweep(v, spec->mutable_sweep());
    if (key == "arms") return ParseArms(v, spec);
    if (key == "hosts") return ParseHosts(v, spec->mutable_hosts());
    if (key == "iterations" || key == "boots") {
      const bool iterations = key == "iterations";
      const int64_t hi = iterations ? kMaxIterations : kMaxBoots;
      if (v.IsMap()) {
        uint32_t planned = 0;
        v1::AdaptiveSpec* adaptive = spec->mutable_adaptive();
        absl::Status s = ParseAdaptiveLevel(
            v, key, hi, adaptive,
            iterations ? adaptive->mutable_iterations() : adaptive->mutable_boots(), &planned);
        if (!s.ok()) return s;
        iterations ? spec->set_iterations(planned) : spec->set_boots(planned);
        return absl::OkStatus();
      }
      absl::StatusOr<int64_t> n = ScalarInt(v, key, 1, hi);
      if (!n.ok()) return n.status();
      iterations ? spec->set_iterations(static_cast<uint32_t>(*n))
                 : spec->set_boots(static_cast<uint32_t>(*n));
      return absl::OkStatus();
    }
    if (key == "adaptive") return ParseAdaptiveStop(v, spec->mutable_adaptive());
    if (key == "monitors") return ParseStringList(v, key, spec->mutable_monitors());
    if (key == "on_host_lost") return ParseHostLost(v, spec->mutable_on_host_lost());
    if (key == "job_timeout_seconds") {
      absl::StatusOr<int64_t> n = ScalarInt(v, key, 0, kMaxJobTimeoutSeconds);
      if (!n.ok()) return n.status();
      spec->set_job_timeout_seconds(static_cast<uint32_t>(*n));
      return absl::OkStatus();
    }
    return UnknownField(
        key, {"name", "benchmark", "params", "sweep", "iterations", "boots", "arms", "hosts",
              "adaptive", "job_timeout_seconds", "monitors", "on_host_lost", "preset"});
  });
}

}  // namespace

void FillRunSpecDefaults(v1::RunSpec* spec) {
  if (spec->iterations() == 0) spec->set_iterations(1);
  if (spec->boots() == 0) spec->set_boots(1);
  if (spec->hosts().count() == 0) spec->mutable_hosts()->set_count(1);
}

absl::StatusOr<v1::RunSpec> ParseRunSpec(std::string_view yaml, std::string_view source) {
  const std::string where = source.empty() ? std::string("<run spec>") : std::string(source);
  v1::RunSpec spec;
  // yaml-cpp reports malformed input and failed conversions by throwing; nothing may escape
  // this function, so every yaml-cpp call stays inside this try block.
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsDefined() || root.IsNull()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the run spec is empty"));
    }
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": expected a map of run spec fields at the top level"));
    }
    YAML::Node doc = root;
    if (root["preset"]) {
      // Duplicate keys are refused before the overlay, which would hide them.
      absl::Status unique = ForEachEntry(
          root, "", [](const std::string&, const YAML::Node&) { return absl::OkStatus(); });
      if (!unique.ok()) return unique;
      absl::StatusOr<YAML::Node> merged = ApplyPreset(root);
      if (!merged.ok()) return merged.status();
      doc = *merged;
    }
    if (absl::Status s = ParseTopLevel(doc, where, &spec); !s.ok()) return s;
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return absl::InvalidArgumentError(absl::StrCat(where, ": ", e.msg));
    // yaml-cpp marks are 0-based; editors and compilers count from 1.
    return absl::InvalidArgumentError(
        absl::StrCat(where, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", e.what()));
  }
  FillRunSpecDefaults(&spec);
  if (absl::Status s = ResolveAutoParams(&spec); !s.ok()) return s;
  if (absl::Status s = ValidateRunSpec(spec); !s.ok()) return s;
  return spec;
}

}  // namespace tlbfleet::scheduler
