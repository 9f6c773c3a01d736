#include "controller/report/import_lkp_results.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "catalogue/catalogue.h"
#include "controller/report/export_lkp.h"

namespace tlbfleet::report {
namespace {

namespace v1 = tlbfleet::v1;

// LKP stats key -> (tlbfleet benchmark, metric), from the catalogue through LkpStatKey: the
// one list of keys is the export's.
const std::map<std::string, std::pair<std::string, std::string>>& LkiMetricOfKey() {
  static const auto* kKeys = [] {
    auto* keys = new std::map<std::string, std::pair<std::string, std::string>>;
    for (const catalogue::WorkloadSchema* w : catalogue::AllWorkloads()) {
      const std::string name(w->Name());
      for (const catalogue::MetricSpec& m : w->Metrics()) {
        keys->emplace(LkpStatKey(name, m.name), std::pair(name, m.name));
      }
    }
    return keys;
  }();
  return *kKeys;
}

// A JSON (or YAML) file as a node; INVALID_ARGUMENT naming FILE:LINE when it does not parse.
absl::StatusOr<YAML::Node> LkiLoad(const std::string& path, const std::string& text) {
  try {
    YAML::Node node = YAML::Load(text);
    if (!node.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":1: not an object"));
    }
    return node;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", e.mark.line + 1, ": does not parse: ", e.msg));
  }
}

absl::StatusOr<double> LkiNumber(const std::string& path, const YAML::Node& value,
                                 const std::string& key) {
  double v = 0;
  if (!value.IsScalar() || !absl::SimpleAtod(value.Scalar(), &v) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", value.Mark().line + 1, ": ", key, ": not a number"));
  }
  return v;
}

// One run of a result root: its stats, and what its job.yaml says of where it ran.
struct LkiRun {
  std::map<std::string, double> stats;
  std::map<std::string, std::string> job;  // job.yaml's top-level scalars
  std::map<std::string, std::string> program_params;
};

// will-it-scale's parse writes one task's ops/s as per_process_ops or per_thread_ops by mode,
// the other 0; tlbfleet has one metric for both (ops_per_sec_per_task, whose key is
// per_process_ops): a thread-mode run's per_thread_ops takes that key.
void LkiOneTaskOps(LkiRun& run) {
  auto thread = run.stats.find("will-it-scale.per_thread_ops");
  if (thread == run.stats.end()) return;
  auto mode = run.program_params.find("mode");
  auto process = run.stats.find("will-it-scale.per_process_ops");
  const bool thread_mode =
      mode != run.program_params.end()
          ? mode->second == "thread"
          : thread->second != 0 && (process == run.stats.end() || process->second == 0);
  if (thread_mode) run.stats["will-it-scale.per_process_ops"] = thread->second;
  run.stats.erase(thread);
}

struct LkiRoot {
  std::map<int64_t, std::string> run_dirs;  // N -> ROOT/N
  bool has_matrix = false;
};

std::string LkiParent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string LkiJoin(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : absl::StrCat(dir, "/", name);
}

absl::Status LkiReadJob(const ImportFiles& files, const std::string& dir, LkiRun* run) {
  const std::string path = LkiJoin(dir, "job.yaml");
  auto it = files.find(path);
  if (it == files.end()) return absl::OkStatus();
  absl::StatusOr<YAML::Node> job = LkiLoad(path, it->second);
  if (!job.ok()) return job.status();
  for (const auto& entry : *job) {
    const std::string key = entry.first.as<std::string>();
    if (entry.second.IsScalar()) {
      run->job[key] = entry.second.Scalar();
    } else if (entry.second.IsMap()) {
      // The program's parameters ("ebizzy: {threads: 4}"); the testcase says which.
      for (const auto& p : entry.second) {
        if (p.second.IsScalar()) run->program_params[p.first.as<std::string>()] = p.second.Scalar();
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ImportedRun> ImportLkpResults(const ImportFiles& files) {
  std::map<std::string, LkiRoot> roots;
  for (const auto& [path, content] : files) {
    const std::string dir = LkiParent(path);
    const std::string name = path.substr(dir.empty() ? 0 : dir.size() + 1);
    if (name == "matrix.json") roots[dir].has_matrix = true;
    if (name != "stats.json" || dir.empty()) continue;
    const std::string root = LkiParent(dir);
    int64_t n = 0;
    if (absl::SimpleAtoi(dir.substr(root.empty() ? 0 : root.size() + 1), &n) && n >= 0) {
      roots[root].run_dirs[n] = dir;
    }
  }
  if (roots.empty()) {
    return absl::InvalidArgumentError(
        "DIR: not an LKP result root (no N/stats.json nor matrix.json under it)");
  }
  ImportedRun out;
  std::string benchmark;
  std::set<std::string> skipped_keys;
  std::map<std::string, v1::ArmSpec*> arms;
  std::set<std::string> param_names, param_values;
  int64_t job = 0;
  for (const auto& [root, r] : roots) {
    // The runs of the root: run directories, or the matrix's columns.
    std::vector<LkiRun> runs;
    if (!r.run_dirs.empty()) {
      for (int64_t n = 0; n <= r.run_dirs.rbegin()->first; ++n) {
        if (!r.run_dirs.count(n)) {
          return absl::InvalidArgumentError(absl::StrCat(
              LkiJoin(root, absl::StrCat(n)), ": missing (", root.empty() ? "DIR" : root,
              " has runs 0 to ", r.run_dirs.rbegin()->first, "; every run directory is needed)"));
        }
        const std::string path = LkiJoin(r.run_dirs.at(n), "stats.json");
        absl::StatusOr<YAML::Node> stats = LkiLoad(path, files.at(path));
        if (!stats.ok()) return stats.status();
        LkiRun& run = runs.emplace_back();
        for (const auto& entry : *stats) {
          const std::string key = entry.first.as<std::string>();
          if (entry.second.IsNull()) continue;  // LKP writes null for a figure it lacks
          absl::StatusOr<double> v = LkiNumber(path, entry.second, key);
          if (!v.ok()) return v.status();
          run.stats[key] = *v;
        }
        if (absl::Status s = LkiReadJob(files, r.run_dirs.at(n), &run); !s.ok()) return s;
      }
    } else {
      const std::string path = LkiJoin(root, "matrix.json");
      absl::StatusOr<YAML::Node> matrix = LkiLoad(path, files.at(path));
      if (!matrix.ok()) return matrix.status();
      for (const auto& entry : *matrix) {
        const std::string key = entry.first.as<std::string>();
        if (key == "stats_source") continue;
        if (!entry.second.IsSequence()) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ":", entry.second.Mark().line + 1, ": ", key, ": not an array"));
        }
        for (size_t i = 0; i < entry.second.size(); ++i) {
          if (runs.size() <= i) runs.resize(i + 1);
          if (entry.second[i].IsNull()) continue;
          absl::StatusOr<double> v = LkiNumber(path, entry.second[i], key);
          if (!v.ok()) return v.status();
          runs[i].stats[key] = *v;
        }
      }
    }

    // The arm and sweep value: tlbfleet's ARM/PARAM, else the root's path.
    std::vector<std::string> parts = absl::StrSplit(root, '/', absl::SkipEmpty());
    std::string arm = root.empty() ? "lkp" : root, param_name, param_value;
    if (parts.size() >= 2 && (parts.back() == "default" || absl::StrContains(parts.back(), '='))) {
      arm = absl::StrJoin(parts.begin(), parts.end() - 1, "/");
      if (parts.back() != "default") {
        std::pair<std::string, std::string> kv = absl::StrSplit(parts.back(), '=');
        param_name = kv.first;
        param_value = kv.second;
      }
    }
    if (!runs.empty() && runs[0].job.count("tlbfleet_arm")) arm = runs[0].job.at("tlbfleet_arm");
    if (!param_name.empty()) {
      param_names.insert(param_name);
      param_values.insert(param_value);
    }

    for (LkiRun& run : runs) LkiOneTaskOps(run);
    for (size_t n = 0; n < runs.size(); ++n) {
      const LkiRun& run = runs[n];
      ++job;
      size_t kept = 0;
      for (const auto& [key, value] : run.stats) {
        auto m = LkiMetricOfKey().find(key);
        if (m == LkiMetricOfKey().end()) {
          skipped_keys.insert(key);
          continue;
        }
        const auto& [bench, metric] = m->second;
        if (benchmark.empty()) benchmark = bench;
        if (bench != benchmark) {
          return absl::InvalidArgumentError(
              absl::StrCat(LkiJoin(root, absl::StrCat(n)), ": ", key, " is ", bench, "'s, not ",
                           benchmark, "'s as the other runs; one run is one benchmark"));
        }
        ++kept;
        v1::Sample& s = out.samples.emplace_back();
        s.set_job_id(job);
        s.set_seq(out.samples.size() - 1);
        s.set_arm(arm);
        s.set_param_name(param_name);
        s.set_param_value(param_value);
        s.set_iteration(static_cast<uint32_t>(n + 1));
        s.set_metric(metric);
        s.set_value(value);
        SetMetricFacts(benchmark, &s);
        auto get = [&](const char* k) {
          auto it = run.job.find(k);
          return it == run.job.end() ? std::string() : it->second;
        };
        s.set_host(get("testbox"));
        s.set_microarch(get("tbox_group"));
        s.set_commit(get("commit"));
        s.set_kernel_release(get("kernel_release"));
        s.set_kernel_cmdline(get("kernel_cmdline"));
        s.set_boot_entry(get("boot_entry"));
        s.set_boot_id(get("tlbfleet_boot_id"));
        s.set_agent_id(get("tlbfleet_agent_id"));
        s.set_machine_id(get("tlbfleet_machine_id"));
        s.set_build_id(get("tlbfleet_build_id"));
      }
      if (kept == 0 && !run.stats.empty()) {
        out.warnings.push_back(
            absl::StrCat(LkiJoin(root, absl::StrCat(n)), ": no stats key of a tlbfleet metric"));
      }
    }
    if (!arms.count(arm)) {
      v1::ArmSpec* a = out.spec.add_arms();
      a->set_name(arm);
      if (!runs.empty()) {
        for (const auto& [k, v] : runs[0].program_params) {
          if (k != param_name) (*a->mutable_params())[k] = v;
        }
      }
      arms[arm] = a;
    }
  }
  if (benchmark.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DIR: no stats key of a benchmark tlbfleet runs (keys such as ebizzy.throughput; found ",
        absl::StrJoin(skipped_keys, ", "), ")"));
  }
  if (!skipped_keys.empty()) {
    out.warnings.push_back(absl::StrCat(skipped_keys.size(),
                                        " stats keys no tlbfleet metric has were left out (",
                                        absl::StrJoin(skipped_keys, ", "), ")"));
  }
  out.spec.set_benchmark(benchmark);
  if (param_names.size() == 1) {
    std::vector<std::string> values(param_values.begin(), param_values.end());
    std::sort(values.begin(), values.end(), [](const std::string& a, const std::string& b) {
      double x = 0, y = 0;
      if (absl::SimpleAtod(a, &x) && absl::SimpleAtod(b, &y) && x != y) return x < y;
      return a < b;
    });
    out.spec.mutable_sweep()->set_param(*param_names.begin());
    for (const std::string& v : values) out.spec.mutable_sweep()->add_values(v);
  }
  std::vector<std::string> names;
  for (const v1::ArmSpec& a : out.spec.arms()) names.push_back(a.name());
  out.spec.set_name(absl::StrCat("lkp ", benchmark, ": ", absl::StrJoin(names, ",")));
  return out;
}

}  // namespace tlbfleet::report
