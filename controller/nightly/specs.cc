#include "controller/nightly/specs.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catalogue/catalogue.h"
#include "common/yaml_fields.h"
#include "controller/bisect/calibrated.h"
#include "controller/nightly/cron.h"
#include "controller/report/comparison.h"
#include "controller/scheduler/expand.h"
#include "controller/scheduler/run_spec.h"

namespace tlbfleet::nightly {
namespace {

constexpr size_t kMaxScheduleName = 64;

bool IsCommits(const v1::BisectSpec& spec) { return spec.has_commits(); }

using yaml_fields::FieldError;
using yaml_fields::ScalarBool;
using yaml_fields::ScalarInt;
using yaml_fields::ScalarList;
using yaml_fields::ScalarText;
using yaml_fields::UnknownField;

std::string Emit(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return std::string(out.c_str()) + "\n";
}

// A run spec map, kept as YAML; errors of the run name the field under `run.`.
absl::StatusOr<YAML::Node> RunNode(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull())
    return FieldError("run", "required: the run spec to start");
  if (!node.IsMap()) return FieldError("run", "expected a run spec (a map)");
  return YAML::Clone(node);
}

absl::StatusOr<v1::RunSpec> CheckRunYaml(const std::string& yaml) {
  absl::StatusOr<v1::RunSpec> spec = scheduler::ParseRunSpec(yaml, "run");
  if (!spec.ok()) {
    const std::string message(spec.status().message());
    // ParseRunSpec names fields from the run spec's root; here it sits under `run`.
    return absl::InvalidArgumentError(
        message.rfind("run:", 0) == 0 ? message : absl::StrCat("run.", message));
  }
  return spec;
}

absl::Status ParseOnRegression(const YAML::Node& node, v1::OnRegression* out) {
  const std::string path = "on_regression";
  if (node.IsScalar()) {
    if (node.Scalar() == "alert") {
      out->set_action(v1::OnRegression::ACTION_ALERT);
      return absl::OkStatus();
    }
    if (node.Scalar() == "bisect") {
      // Over the two nights' commits when the schedule follows a branch; CheckOnRegression
      // asks for entries otherwise.
      out->set_action(v1::OnRegression::ACTION_BISECT);
      return absl::OkStatus();
    }
    return FieldError(path, absl::StrCat("expected alert or bisect, got \"", node.Scalar(), "\""));
  }
  if (!node.IsMap()) return FieldError(path, "expected alert, or a map with action: bisect");
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string field = absl::StrCat(path, ".", key);
    if (key == "action") {
      absl::StatusOr<std::string> a = ScalarText(kv.second, field);
      if (!a.ok()) return a.status();
      if (*a == "alert") {
        out->set_action(v1::OnRegression::ACTION_ALERT);
      } else if (*a == "bisect") {
        out->set_action(v1::OnRegression::ACTION_BISECT);
      } else {
        return FieldError(field, absl::StrCat("expected alert or bisect, got \"", *a, "\""));
      }
    } else if (key == "entries") {
      absl::StatusOr<std::vector<std::string>> e = ScalarList(kv.second, field);
      if (!e.ok()) return e.status();
      out->mutable_entries()->Assign(e->begin(), e->end());
    } else if (key == "good" || key == "bad") {
      absl::StatusOr<std::string> e = ScalarText(kv.second, field);
      if (!e.ok()) return e.status();
      key == "good" ? out->set_good(*e) : out->set_bad(*e);
    } else if (key == "boots_per_round" || key == "max_boots_per_step") {
      absl::StatusOr<int64_t> n = ScalarInt(kv.second, field, 1, 100);
      if (!n.ok()) return n.status();
      key == "boots_per_round" ? out->set_boots_per_round(static_cast<uint32_t>(*n))
                               : out->set_max_boots_per_step(static_cast<uint32_t>(*n));
    } else {
      return UnknownField(
          field, {"action", "entries", "good", "bad", "boots_per_round", "max_boots_per_step"});
    }
  }
  if (out->action() == v1::OnRegression::ACTION_UNSPECIFIED) {
    return FieldError(path + ".action", "required (alert or bisect)");
  }
  return absl::OkStatus();
}

// A bisection over boot entries needs them; one over commits (a schedule following a branch)
// takes its ends from the two nights and must not name entries.
absl::Status CheckOnRegression(const v1::ScheduleSpec& spec) {
  const std::string path = "on_regression";
  const v1::OnRegression* out = &spec.on_regression();
  if (out->action() != v1::OnRegression::ACTION_BISECT) return absl::OkStatus();
  if (spec.has_kernel()) {
    if (out->entries_size() > 0 || !out->good().empty() || !out->bad().empty()) {
      return FieldError(path + ".entries",
                        "a schedule that follows a kernel branch bisects between the commits of "
                        "its two nights: give no entries, good or bad");
    }
    return absl::OkStatus();
  }
  {
    if (out->entries_size() < 2) {
      return FieldError(path + ".entries",
                        "a bisection needs at least two boot entries, oldest first "
                        "({action: bisect, entries: [...]}), or a schedule that follows a kernel "
                        "branch (kernel: {source, branch})");
    }
    // The ends, when given, are checked as a bisection would check them.
    v1::BisectSpec probe;
    probe.mutable_entries()->CopyFrom(out->entries());
    probe.set_good(out->good().empty() ? out->entries(0) : out->good());
    probe.set_bad(out->bad().empty() ? *out->entries().rbegin() : out->bad());
    probe.set_boots_per_round(out->boots_per_round());
    probe.set_max_boots_per_step(out->max_boots_per_step());
    absl::StatusOr<bisect::Bisection> b = bisect::Bisection::Start("probe", probe);
    if (!b.ok()) return FieldError(path, std::string(b.status().message()));
  }
  return absl::OkStatus();
}

// `kernel: {source: linux, branch: my-branch, config: lab}`.
absl::Status ParseKernelBranch(const YAML::Node& node, v1::KernelBranch* out) {
  if (!node.IsMap()) return FieldError("kernel", "expected a map with source, branch and config");
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string field = absl::StrCat("kernel.", key);
    absl::StatusOr<std::string> text = ScalarText(kv.second, field);
    if (!text.ok()) return text.status();
    if (key == "source") {
      out->set_source(*text);
    } else if (key == "branch") {
      out->set_branch(*text);
    } else if (key == "config") {
      out->set_config(*text);
    } else {
      return UnknownField(field, {"source", "branch", "config"});
    }
  }
  if (out->source().empty()) return FieldError("kernel.source", "required");
  if (out->branch().empty()) return FieldError("kernel.branch", "required");
  return absl::OkStatus();
}

absl::Status ParseDrift(const YAML::Node& node, v1::ChangeDetection* out) {
  if (!node.IsMap()) {
    return FieldError("detect.drift", "expected a map (detect, opens_regression, threshold)");
  }
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string field = absl::StrCat("detect.drift.", key);
    if (key == "detect" || key == "opens_regression") {
      absl::StatusOr<bool> b = ScalarBool(kv.second, field);
      if (!b.ok()) return b.status();
      if (key == "detect") {
        out->set_drift_off(!*b);
      } else {
        out->set_drift_opens_regression(*b);
      }
    } else if (key == "threshold") {
      absl::StatusOr<std::string> t = ScalarText(kv.second, field);
      if (!t.ok()) return t.status();
      double threshold = 0;
      if (!absl::SimpleAtod(*t, &threshold) || !(threshold >= 0 && threshold < 1)) {
        return FieldError(
            field, absl::StrCat("must be a fraction of the level in [0, 1), got \"", *t, "\""));
      }
      out->set_drift_threshold(threshold);
    } else {
      return UnknownField(field, {"detect", "opens_regression", "threshold"});
    }
  }
  if (out->drift_off() && out->drift_opens_regression()) {
    return FieldError("detect.drift.opens_regression", "needs drifts detected (detect: true)");
  }
  return absl::OkStatus();
}

absl::Status ParseDetection(const YAML::Node& node, v1::ChangeDetection* out) {
  if (!node.IsMap()) return FieldError("detect", "expected a map (test, max_p, min_segment)");
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string field = absl::StrCat("detect.", key);
    if (key == "test") {
      absl::StatusOr<std::string> t = ScalarText(kv.second, field);
      if (!t.ok()) return t.status();
      if (*t != "permutation" && *t != "student-t") {
        return FieldError(field,
                          absl::StrCat("expected permutation or student-t, got \"", *t, "\""));
      }
      out->set_test(*t);
    } else if (key == "max_p") {
      absl::StatusOr<std::string> t = ScalarText(kv.second, field);
      if (!t.ok()) return t.status();
      double p = 0;
      if (!absl::SimpleAtod(*t, &p) || !(p > 0 && p <= 0.5)) {
        return FieldError(field,
                          absl::StrCat("must be a probability in (0, 0.5], got \"", *t, "\""));
      }
      out->set_max_p(p);
    } else if (key == "min_segment") {
      absl::StatusOr<int64_t> n = ScalarInt(kv.second, field, 2, 50);
      if (!n.ok()) return n.status();
      out->set_min_segment(static_cast<uint32_t>(*n));
    } else if (key == "serial") {
      absl::StatusOr<std::string> t = ScalarText(kv.second, field);
      if (!t.ok()) return t.status();
      if (*t != "ar1" && *t != "independent" && *t != "block") {
        return FieldError(field,
                          absl::StrCat("expected ar1, independent or block, got \"", *t, "\""));
      }
      out->set_serial(*t);
    } else if (key == "block_length") {
      absl::StatusOr<int64_t> n = ScalarInt(kv.second, field, 1, 100);
      if (!n.ok()) return n.status();
      out->set_block_length(static_cast<uint32_t>(*n));
    } else if (key == "drift") {
      if (absl::Status s = ParseDrift(kv.second, out); !s.ok()) return s;
    } else {
      return UnknownField(field,
                          {"test", "max_p", "min_segment", "serial", "block_length", "drift"});
    }
  }
  if (out->serial() == "block" && out->block_length() == 0) {
    return FieldError("detect.block_length", "required with serial: block (at least 1)");
  }
  if (out->block_length() > 0 && out->serial() != "block") {
    return FieldError("detect.block_length", "only with serial: block");
  }
  return absl::OkStatus();
}

// The metric a bisection follows (default: the benchmark's primary one) and its direction.
absl::Status ResolveMetric(v1::BisectSpec* spec) {
  const catalogue::WorkloadSchema* workload = catalogue::FindWorkload(spec->run().benchmark());
  if (workload == nullptr) return FieldError("run.benchmark", "unknown benchmark");
  if (spec->metric().empty()) spec->set_metric(std::string(workload->PrimaryMetric()));
  std::vector<std::string> known;
  for (const catalogue::MetricSpec& m : workload->Metrics()) {
    known.push_back(m.name);
    if (m.name == spec->metric()) {
      spec->set_lower_is_better(m.better == catalogue::Better::kLower);
      spec->set_benchmark(spec->run().benchmark());
      return absl::OkStatus();
    }
  }
  return FieldError(
      "metric", absl::StrCat("unknown metric \"", spec->metric(), "\" of ", spec->run().benchmark(),
                             " (known: ", absl::StrJoin(known, ", "), ")"));
}

// The sweep value a bisection follows: required when the run sweeps several.
absl::Status ResolveParam(v1::BisectSpec* spec) {
  const v1::SweepSpec& sweep = spec->run().sweep();
  std::vector<std::string> labels;
  for (const std::string& v : scheduler::SweepValues(sweep)) {
    labels.push_back(report::SweepLabel(sweep.param(), v));
  }
  if (labels.size() <= 1) {
    if (!spec->param().empty() && (labels.empty() || spec->param() != labels[0])) {
      return FieldError("param",
                        absl::StrCat("the run has no sweep value \"", spec->param(), "\""));
    }
    if (!labels.empty()) spec->set_param(labels[0]);
    return absl::OkStatus();
  }
  if (std::find(labels.begin(), labels.end(), spec->param()) != labels.end()) {
    return absl::OkStatus();
  }
  return FieldError("param", absl::StrCat(spec->param().empty() ? std::string("required: ")
                                                                : absl::StrCat("\"", spec->param(),
                                                                               "\" is not one of "),
                                          "the run sweeps ", absl::StrJoin(labels, ", "),
                                          "; name the value to bisect on"));
}

// A git revision as the agents take it (run_spec_validate.cc's rule for kernel.rev): one
// argument, never an option.
absl::Status CheckRevisionText(const std::string& rev, const std::string& field) {
  if (rev.empty()) return FieldError(field, "required");
  if (rev.size() > 256) {
    return FieldError(field, absl::StrCat("must be at most 256 characters, got ", rev.size()));
  }
  if (rev[0] == '-') {
    return FieldError(field, absl::StrCat("a revision may not start with '-', got \"", rev, "\""));
  }
  for (char c : rev) {
    if (std::isspace(static_cast<unsigned char>(c)) ||
        std::iscntrl(static_cast<unsigned char>(c))) {
      return FieldError(field, absl::StrCat("a git revision has no spaces or control characters,"
                                            " got \"",
                                            rev, "\""));
    }
  }
  return absl::OkStatus();
}

// A source or config name: the agents' names (letters, digits, '.', '_', '-').
absl::Status CheckSourceName(const std::string& name, const std::string& field) {
  if (name.empty()) return FieldError(field, "required");
  const bool ok =
      name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
      });
  if (!ok) {
    return FieldError(
        field,
        absl::StrCat("expected a name (letters, digits, '.', '_', '-'), got \"", name, "\""));
  }
  return absl::OkStatus();
}

// `commits: {source, good, bad, config}`: the revisions as the user wrote them. The range and
// the full hashes come later, from a builder (Nightly::StartBisect).
absl::Status ParseCommits(const YAML::Node& node, v1::BisectCommits* out) {
  if (!node.IsMap()) {
    return FieldError("commits", "expected a map: {source: linux, good: v6.1, bad: my-branch}");
  }
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string field = absl::StrCat("commits.", key);
    if (key != "source" && key != "good" && key != "bad" && key != "config") {
      return UnknownField(field, {"source", "good", "bad", "config"});
    }
    absl::StatusOr<std::string> v = ScalarText(kv.second, field);
    if (!v.ok()) return v.status();
    if (key == "source") out->set_source(*v);
    if (key == "good") out->set_good_rev(*v);
    if (key == "bad") out->set_bad_rev(*v);
    if (key == "config") out->set_config(*v);
  }
  if (absl::Status s = CheckSourceName(out->source(), "commits.source"); !s.ok()) return s;
  if (!out->config().empty()) {
    if (absl::Status s = CheckSourceName(out->config(), "commits.config"); !s.ok()) return s;
  }
  if (absl::Status s = CheckRevisionText(out->good_rev(), "commits.good"); !s.ok()) return s;
  if (absl::Status s = CheckRevisionText(out->bad_rev(), "commits.bad"); !s.ok()) return s;
  if (out->good_rev() == out->bad_rev()) {
    return FieldError("commits.bad",
                      absl::StrCat("good and bad are the same revision \"", out->good_rev(), "\""));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::ScheduleSpec> ParseScheduleSpec(std::string_view yaml_in,
                                                   std::string_view source_in) {
  const std::string source(source_in.empty() ? "schedule" : source_in);
  v1::ScheduleSpec spec;
  try {
    const YAML::Node root = YAML::Load(std::string(yaml_in));
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": expected a map (name, cron, run)"));
    }
    YAML::Node run;
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      if (key == "name") {
        absl::StatusOr<std::string> name = ScalarText(kv.second, key);
        if (!name.ok()) return name.status();
        spec.set_name(*name);
      } else if (key == "cron") {
        absl::StatusOr<std::string> cron = ScalarText(kv.second, key);
        if (!cron.ok()) return cron.status();
        absl::StatusOr<CronSchedule> parsed = CronSchedule::Parse(*cron);
        if (!parsed.ok()) return FieldError("cron", std::string(parsed.status().message()));
        spec.set_cron(parsed->text());
      } else if (key == "run") {
        absl::StatusOr<YAML::Node> node = RunNode(kv.second);
        if (!node.ok()) return node.status();
        run = *node;
      } else if (key == "hosts") {
        if (!kv.second.IsMap()) return FieldError("hosts", "expected a host selector (a map)");
        spec.set_hosts_yaml(Emit(kv.second));
      } else if (key == "on_regression") {
        if (absl::Status s = ParseOnRegression(kv.second, spec.mutable_on_regression()); !s.ok()) {
          return s;
        }
      } else if (key == "detect") {
        if (absl::Status s = ParseDetection(kv.second, spec.mutable_detection()); !s.ok()) return s;
      } else if (key == "kernel") {
        if (absl::Status s = ParseKernelBranch(kv.second, spec.mutable_kernel()); !s.ok()) return s;
      } else {
        return UnknownField(key,
                            {"name", "cron", "hosts", "run", "kernel", "on_regression", "detect"});
      }
    }
    if (spec.name().empty()) return FieldError("name", "required");
    const bool name_ok =
        spec.name().size() <= kMaxScheduleName &&
        std::all_of(spec.name().begin(), spec.name().end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
        });
    if (!name_ok) {
      return FieldError(
          "name", absl::StrCat("must be 1 to ", kMaxScheduleName,
                               " letters, digits, '.', '_' or '-', got \"", spec.name(), "\""));
    }
    if (spec.cron().empty()) return FieldError("cron", "required, e.g. \"0 2 * * *\" (UTC)");
    if (!run.IsDefined()) return FieldError("run", "required: the run spec to start");
    spec.set_run_yaml(Emit(run));
    if (spec.on_regression().action() == v1::OnRegression::ACTION_UNSPECIFIED) {
      spec.mutable_on_regression()->set_action(v1::OnRegression::ACTION_ALERT);
    }
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.msg));
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  if (absl::Status s = CheckOnRegression(spec); !s.ok()) return s;
  // The run is checked as it will be submitted (a branch's head as a placeholder revision).
  if (spec.has_kernel()) {
    absl::StatusOr<v1::RunSpec> as_given = CheckRunYaml(spec.run_yaml());
    if (!as_given.ok()) return as_given.status();
    for (int i = 0; i < as_given->arms_size(); ++i) {
      const v1::ArmSpec& arm = as_given->arms(i);
      if (arm.has_kernel() || !arm.boot_entry().empty()) {
        return FieldError(
            absl::StrCat("run.arms[", i, "].", arm.has_kernel() ? "kernel" : "boot_entry"),
            "the schedule's kernel (a branch) is what every arm boots");
      }
    }
  }
  v1::KernelRevision placeholder;
  if (spec.has_kernel()) {
    placeholder.set_source(spec.kernel().source());
    placeholder.set_rev(spec.kernel().branch());
    placeholder.set_config(spec.kernel().config());
    placeholder.set_branch(spec.kernel().branch());
  }
  absl::StatusOr<std::string> probe =
      ScheduledRunYaml(spec, "probe", spec.has_kernel() ? &placeholder : nullptr);
  if (!probe.ok()) return probe.status();
  absl::StatusOr<v1::RunSpec> run = CheckRunYaml(*probe);
  if (!run.ok()) return run.status();
  return spec;
}

absl::StatusOr<std::string> ScheduledRunYaml(const v1::ScheduleSpec& spec,
                                             const std::string& run_name,
                                             const v1::KernelRevision* kernel) {
  try {
    YAML::Node run = YAML::Load(spec.run_yaml());
    run["name"] = run_name;
    if (!spec.hosts_yaml().empty()) run["hosts"] = YAML::Load(spec.hosts_yaml());
    if (kernel != nullptr) {
      YAML::Node arms = run["arms"];
      if (!arms.IsDefined() || !arms.IsSequence() || arms.size() == 0) {
        return FieldError("run.arms",
                          "a schedule that follows a kernel branch needs the run's arms");
      }
      for (size_t i = 0; i < arms.size(); ++i) {
        YAML::Node k;
        k["source"] = kernel->source();
        k["rev"] = kernel->rev();
        if (!kernel->config().empty()) k["config"] = kernel->config();
        if (!kernel->branch().empty()) k["branch"] = kernel->branch();
        arms[i]["kernel"] = k;
      }
    }
    return Emit(run);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("run: ", e.msg));
  }
}

absl::StatusOr<std::string> BisectRunYamlFromSchedule(const v1::ScheduleSpec& spec,
                                                      const std::string& arm) {
  absl::StatusOr<std::string> yaml = ScheduledRunYaml(spec, "bisect");
  if (!yaml.ok()) return yaml;
  try {
    YAML::Node run = YAML::Load(*yaml);
    YAML::Node kept(YAML::NodeType::Sequence);
    const YAML::Node arms = run["arms"];
    if (arms.IsDefined() && arms.IsSequence()) {
      for (size_t i = 0; i < arms.size(); ++i) {
        if (!arms[i].IsMap() || !arms[i]["name"].IsDefined() || arms[i]["name"].Scalar() != arm) {
          continue;
        }
        YAML::Node copy = YAML::Clone(arms[i]);
        copy.remove("boot_entry");
        kept.push_back(copy);
      }
    }
    if (kept.size() == 0) {
      run.remove("arms");
    } else {
      run["arms"] = kept;
    }
    run.remove("boots");
    return Emit(run);
  } catch (const YAML::Exception& e) {
    return FieldError("run", e.msg);
  }
}

stats::ChangePointOptions DetectorOptions(const v1::ChangeDetection& detection) {
  stats::ChangePointOptions options;
  if (detection.test() == "student-t") {
    options.test = stats::ChangePointTest::kStudentT;
    options.max_p = stats::kStudentTDefaultMaxP;
  }
  if (detection.max_p() > 0) options.max_p = detection.max_p();
  if (detection.min_segment() > 0) options.min_segment = detection.min_segment();
  if (detection.serial() == "independent") {
    options.serial = stats::SerialModel::kIndependent;
  } else if (detection.serial() == "block") {
    options.serial = stats::SerialModel::kBlock;
    options.block_length = detection.block_length();
  }
  options.detect_drift = !detection.drift_off();
  options.drift_threshold = detection.drift_threshold();
  return options;
}

absl::StatusOr<v1::BisectSpec> ParseBisectSpec(std::string_view yaml_in,
                                               std::string_view source_in) {
  const std::string source(source_in.empty() ? "bisect" : source_in);
  v1::BisectSpec spec;
  try {
    const YAML::Node root = YAML::Load(std::string(yaml_in));
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": expected a map (entries, good, bad, run)"));
    }
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      if (key == "entries") {
        absl::StatusOr<std::vector<std::string>> e = ScalarList(kv.second, key);
        if (!e.ok()) return e.status();
        spec.mutable_entries()->Assign(e->begin(), e->end());
      } else if (key == "good" || key == "bad" || key == "metric" || key == "param") {
        absl::StatusOr<std::string> v = ScalarText(kv.second, key);
        if (!v.ok()) return v.status();
        if (key == "good") spec.set_good(*v);
        if (key == "bad") spec.set_bad(*v);
        if (key == "metric") spec.set_metric(*v);
        if (key == "param") spec.set_param(*v);
      } else if (key == "boots_per_round" || key == "max_boots_per_step") {
        absl::StatusOr<int64_t> n = ScalarInt(kv.second, key, 1, 100);
        if (!n.ok()) return n.status();
        key == "boots_per_round" ? spec.set_boots_per_round(static_cast<uint32_t>(*n))
                                 : spec.set_max_boots_per_step(static_cast<uint32_t>(*n));
      } else if (key == "skip_endpoint_check") {
        absl::StatusOr<bool> b = ScalarBool(kv.second, key);
        if (!b.ok()) return b.status();
        spec.set_skip_endpoint_check(*b);
      } else if (key == "run") {
        absl::StatusOr<YAML::Node> run = RunNode(kv.second);
        if (!run.ok()) return run.status();
        spec.set_run_yaml(Emit(*run));
      } else if (key == "commits") {
        if (absl::Status s = ParseCommits(kv.second, spec.mutable_commits()); !s.ok()) return s;
      } else {
        return UnknownField(
            key, {"entries", "commits", "good", "bad", "metric", "param", "boots_per_round",
                  "max_boots_per_step", "skip_endpoint_check", "run"});
      }
    }
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.msg));
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  if (spec.run_yaml().empty()) return FieldError("run", "required: the run each step measures");
  if (spec.has_commits()) {
    // The commits' own good and bad: the top-level ones name boot entries.
    if (!spec.entries().empty()) {
      return FieldError("commits",
                        "give either entries (boot entries) or commits (git revisions), not both");
    }
    if (!spec.good().empty() || !spec.bad().empty()) {
      return FieldError(spec.good().empty() ? "bad" : "good",
                        "with commits, good and bad go under commits: {source, good, bad}");
    }
    if (spec.max_boots_per_step() != 0 && spec.max_boots_per_step() < spec.boots_per_round()) {
      return FieldError("max_boots_per_step",
                        absl::StrCat(spec.max_boots_per_step(), " is less than boots_per_round (",
                                     spec.boots_per_round(), ")"));
    }
    if (absl::Status s = CheckBisectRun(&spec); !s.ok()) return s;
    return spec;
  }
  if (spec.entries().empty()) {
    return FieldError("entries",
                      "required: boot entries, oldest first (or commits: {source, good, bad})");
  }
  for (int i = 0; i < spec.entries_size(); ++i) {
    const std::string& e = spec.entries(i);
    const bool ok = !e.empty() && e.size() <= 128 && std::all_of(e.begin(), e.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' ||
             c == '-';
    });
    if (!ok) {
      return FieldError(absl::StrCat("entries[", i, "]"),
                        absl::StrCat("'", e,
                                     "' is not a boot entry name (letters, digits, '.', '_', "
                                     "'+', '-')"));
    }
  }
  // The entries, good and bad are checked first: they are what a user gets wrong most.
  absl::StatusOr<bisect::Bisection> probe = bisect::Bisection::Start("probe", spec);
  if (!probe.ok()) return probe.status();
  if (absl::Status s = CheckBisectRun(&spec); !s.ok()) return s;
  return spec;
}

absl::Status CheckBisectRun(v1::BisectSpec* spec) {
  try {
    const YAML::Node run = YAML::Load(spec->run_yaml());
    const YAML::Node arms = run["arms"];
    if (arms.IsDefined() && !arms.IsNull()) {
      if (!arms.IsSequence() || arms.size() > 1) {
        return FieldError("run.arms",
                          "a bisection measures one configuration: give at most one arm "
                          "(its params and ceiling go to every entry)");
      }
      if (arms[0].IsMap() && arms[0]["boot_entry"].IsDefined()) {
        return FieldError("run.arms[0].boot_entry", "the bisection chooses the entries");
      }
      if (arms[0].IsMap() && arms[0]["kernel"].IsDefined()) {
        return FieldError("run.arms[0].kernel", "the bisection chooses the kernels");
      }
    }
  } catch (const YAML::Exception& e) {
    return FieldError("run", e.msg);
  }
  bisect::NextAction probe;
  probe.kind = bisect::NextAction::Kind::kMeasure;
  if (IsCommits(*spec)) {
    // The revisions as written: the run is checked as a step will submit it.
    const std::string good = spec->good().empty() ? spec->commits().good_rev() : spec->good();
    const std::string bad = spec->bad().empty() ? spec->commits().bad_rev() : spec->bad();
    probe.entries = {good, bad, bad};
  } else {
    probe.entries = {spec->entries(0), spec->entries(0), spec->entries(spec->entries_size() - 1)};
  }
  probe.boots = std::max<uint32_t>(spec->boots_per_round(), 1);
  absl::StatusOr<std::string> yaml = MeasurementRunYaml(*spec, probe, "probe");
  if (!yaml.ok()) return yaml.status();
  absl::StatusOr<v1::RunSpec> run = CheckRunYaml(*yaml);
  if (!run.ok()) return run.status();
  // Kept without the probe's arms and boots: what the user asked for.
  *spec->mutable_run() = *run;
  spec->mutable_run()->clear_arms();
  if (absl::Status s = ResolveMetric(spec); !s.ok()) return s;
  return ResolveParam(spec);
}

absl::StatusOr<std::string> MeasurementRunYaml(const v1::BisectSpec& spec,
                                               const bisect::NextAction& next,
                                               const std::string& run_name) {
  try {
    YAML::Node run = YAML::Load(spec.run_yaml());
    YAML::Node base;
    if (run["arms"].IsDefined() && run["arms"].IsSequence() && run["arms"].size() == 1) {
      base = YAML::Clone(run["arms"][0]);
    }
    // The parent check measures the parent as good and the culprit as tested (calibrated.h).
    std::vector<const char*> roles = {bisect::kGoodArm, bisect::kTestedArm, bisect::kBadArm};
    if (next.entries.size() == 2) {
      roles = {bisect::kGoodArm, next.kind == bisect::NextAction::Kind::kVerifyParent
                                     ? bisect::kTestedArm
                                     : bisect::kBadArm};
    }
    YAML::Node arms(YAML::NodeType::Sequence);
    for (size_t i = 0; i < next.entries.size() && i < roles.size(); ++i) {
      YAML::Node arm(YAML::NodeType::Map);
      arm["name"] = roles[i];
      if (IsCommits(spec)) {
        // A full hash (a revision only in the probe of ParseBisectSpec); the revert check's
        // tested arm is bad with the culprit reverted.
        YAML::Node kernel(YAML::NodeType::Map);
        kernel["source"] = spec.commits().source();
        kernel["rev"] = next.entries[i];
        if (!spec.commits().config().empty()) kernel["config"] = spec.commits().config();
        if (next.kind == bisect::NextAction::Kind::kVerifyRevert &&
            roles[i] == bisect::kTestedArm) {
          kernel["revert"] = next.revert;
        }
        arm["kernel"] = kernel;
      } else {
        arm["boot_entry"] = next.entries[i];
      }
      if (base.IsMap()) {
        if (base["params"].IsDefined()) arm["params"] = base["params"];
        if (base["ceiling"].IsDefined()) arm["ceiling"] = base["ceiling"];
      }
      arms.push_back(arm);
    }
    run["name"] = run_name;
    run["arms"] = arms;
    run["boots"] = next.boots;
    return Emit(run);
  } catch (const YAML::Exception& e) {
    return FieldError("run", e.msg);
  }
}

}  // namespace tlbfleet::nightly
