#include "controller/report/export_lkp.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json.h"
#include "controller/report/results_csv.h"

namespace tlbfleet::report {
namespace {

namespace v1 = tlbfleet::v1;

// LKP's program name for a tlbfleet benchmark (its programs/NAME/parse).
std::string LkpProgram(const std::string& benchmark) {
  if (benchmark == "pipetest") return "perf-bench-sched-pipe";
  if (benchmark == "willitscale") return "will-it-scale";
  return benchmark;
}

// Ordered key -> number(s): JSON objects written in key order, as LKP's save_json does.
using LkpStats = std::map<std::string, double>;
using LkpMatrix = std::map<std::string, std::vector<double>>;

std::string LkpNumber(double v) { return std::isfinite(v) ? FormatDouble(v) : "null"; }

std::string LkpStatsJson(const LkpStats& stats) {
  std::vector<std::string> lines;
  for (const auto& [key, value] : stats) {
    lines.push_back(absl::StrCat("  ", JsonQuote(key), ": ", LkpNumber(value)));
  }
  return absl::StrCat("{\n", absl::StrJoin(lines, ",\n"), "\n}\n");
}

std::string LkpMatrixJson(const LkpMatrix& matrix, const std::vector<std::string>& sources) {
  std::vector<std::string> lines;
  for (const auto& [key, values] : matrix) {
    std::vector<std::string> numbers;
    for (double v : values) numbers.push_back(LkpNumber(v));
    lines.push_back(absl::StrCat("  ", JsonQuote(key), ": [", absl::StrJoin(numbers, ", "), "]"));
  }
  if (!sources.empty()) {
    std::vector<std::string> quoted;
    for (const std::string& s : sources) quoted.push_back(JsonQuote(s));
    lines.push_back(absl::StrCat("  \"stats_source\": [", absl::StrJoin(quoted, ", "), "]"));
  }
  return absl::StrCat("{\n", absl::StrJoin(lines, ",\n"), "\n}\n");
}

// One job iteration of an arm: the program's stats.
struct LkpRun {
  std::string param_dir;
  std::map<std::string, std::string> params;
  const v1::Sample* first = nullptr;  // host and kernel
  LkpStats stats;
  std::vector<std::pair<int64_t, double>> threads;  // ebizzy per-thread throughput
};

double LkpMean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// LKP's standard_deviation: the population form (divides by n).
double LkpStddev(const std::vector<double>& v) {
  const double mean = LkpMean(v);
  double sum = 0;
  for (double x : v) sum += (x - mean) * (x - mean);
  return std::sqrt(sum / static_cast<double>(v.size()));
}

// A YAML scalar that reads back as the same string whatever it holds.
std::string LkpYamlString(const std::string& s) { return JsonQuote(s); }

std::string LkpJobYaml(const v1::Run& run, const std::string& arm, const LkpRun& r,
                       const std::string& program) {
  const v1::Sample& s = *r.first;
  std::string text =
      absl::StrCat("suite: ", LkpYamlString(program), "\ntestcase: ", LkpYamlString(program),
                   "\ncategory: benchmark\n");
  absl::StrAppend(&text, program, ":\n");
  for (const auto& [name, value] : r.params) {
    absl::StrAppend(&text, "  ", name, ": ", LkpYamlString(value), "\n");
  }
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"tbox_group", s.microarch()},
           {"testbox", s.host()},
           {"commit", s.commit()},
           {"kernel_release", s.kernel_release()},
           {"kernel_cmdline", s.kernel_cmdline()},
           {"boot_entry", s.boot_entry()},
           {"tlbfleet_run", run.id()},
           {"tlbfleet_arm", arm},
           {"tlbfleet_job", absl::StrCat(s.job_id())},
           {"tlbfleet_iteration", absl::StrCat(s.iteration())},
           {"tlbfleet_boot_id", s.boot_id()},
           {"tlbfleet_agent_id", s.agent_id()},
           {"tlbfleet_machine_id", s.machine_id()},
           {"tlbfleet_build_id", s.build_id()}}) {
    if (!value.empty()) absl::StrAppend(&text, key, ": ", LkpYamlString(value), "\n");
  }
  return text;
}

// Ruby's printf "%d" of a float (LKP's parse): the integer part.
double LkpInteger(double v) { return std::trunc(v); }

// will-it-scale's stats as lkp-tests' programs/will-it-scale/parse writes them from
// runtest.py's CSV line "tasks,processes,processes_idle,threads,threads_idle,linear", for a
// one-shot run of N tasks (LKP's nr_task), one mode:
//   will-it-scale.N.processes / .N.threads   every task's ops/s (the other mode's column 0)
//   will-it-scale.N.linear                   N x the 1-task ops/s of the same test and mode
//                                            when the run measured 1 task, else 0 (runtest.py
//                                            given one task count writes 0)
//   will-it-scale.per_process_ops / per_thread_ops   ops/s / N (the other mode's 0)
//   will-it-scale.workload                   every task's ops/s
//   will-it-scale.scalability                N.processes / N.linear when linear is known and
//                                            N > 1 (the parser divides the processes column,
//                                            so thread mode gives 0, as LKP's does)
// Integers where the parser prints "%d", scalability to "%f"'s six decimals. The idle columns
// are not measured and not written.
void LkpWillItScaleStats(std::map<std::tuple<int64_t, uint32_t>, LkpRun>& runs) {
  const std::string workload_key = LkpStatKey("willitscale", "ops_per_sec");
  const std::string per_task_key = LkpStatKey("willitscale", "ops_per_sec_per_task");
  auto param = [](const LkpRun& r, const std::string& name, const std::string& missing) {
    auto it = r.params.find(name);
    return it == r.params.end() ? missing : it->second;
  };
  auto tasks_of = [&](const LkpRun& r) {
    int64_t n = 1;
    if (!absl::SimpleAtoi(param(r, "tasks", "1"), &n) || n < 1) n = 1;
    return n;
  };
  auto others_of = [](const LkpRun& r) {
    std::map<std::string, std::string> p = r.params;
    p.erase("tasks");
    return p;
  };
  // The 1-task ops/s of each configuration (every parameter but tasks), over its runs.
  std::map<std::map<std::string, std::string>, std::vector<double>> one_task;
  for (const auto& [key, r] : runs) {
    auto w = r.stats.find(workload_key);
    if (w != r.stats.end() && tasks_of(r) == 1) one_task[others_of(r)].push_back(w->second);
  }
  for (auto& [key, r] : runs) {
    auto w = r.stats.find(workload_key);
    if (w == r.stats.end()) continue;
    const double ops = w->second;
    const int64_t n = tasks_of(r);
    const bool threads = param(r, "mode", "process") == "thread";
    double linear = 0;
    if (auto base = one_task.find(others_of(r)); base != one_task.end()) {
      linear = LkpInteger(LkpMean(base->second)) * static_cast<double>(n);
    }
    r.stats.erase(per_task_key);
    const std::string prefix = absl::StrCat("will-it-scale.", n, ".");
    const double processes = threads ? 0 : LkpInteger(ops);
    r.stats[prefix + "processes"] = processes;
    r.stats[prefix + "threads"] = threads ? LkpInteger(ops) : 0;
    r.stats[prefix + "linear"] = linear;
    r.stats["will-it-scale.per_process_ops"] =
        threads ? 0 : LkpInteger(ops / static_cast<double>(n));
    r.stats["will-it-scale.per_thread_ops"] =
        threads ? LkpInteger(ops / static_cast<double>(n)) : 0;
    r.stats["will-it-scale.workload"] = LkpInteger(ops);
    if (linear != 0 && n != 1) {
      r.stats["will-it-scale.scalability"] = std::round(processes / linear * 1e6) / 1e6;
    }
  }
}

}  // namespace

std::string LkpStatKey(const std::string& benchmark, const std::string& metric) {
  static const auto* kKeys = new std::map<std::pair<std::string, std::string>, std::string>{
      {{"ebizzy", "records_per_sec"}, "ebizzy.throughput"},
      {{"netperf", "mbit_per_sec"}, "netperf.Throughput_Mbps"},
      {{"netperf", "trans_per_sec"}, "netperf.Throughput_tps"},
      {{"pipetest", "ops_per_sec"}, "perf-bench-sched-pipe.ops_per_sec"},
      {{"pft", "faults_per_sec"}, "pft.faults_per_sec"},
      {{"pft", "faults_per_cpu"}, "pft.faults_per_sec_per_cpu"},
      {{"pft", "wall_seconds"}, "pft.elapsed_time"},
      {{"pft", "system_seconds"}, "pft.sys_time"},
      {{"pft", "user_seconds"}, "pft.user_time"},
      // will-it-scale's parse: "workload" is every task's operations; per_process_ops (or
      // per_thread_ops in thread mode, LkpWillItScaleStats) one task's.
      {{"willitscale", "ops_per_sec"}, "will-it-scale.workload"},
      {{"willitscale", "ops_per_sec_per_task"}, "will-it-scale.per_process_ops"},
  };
  auto it = kKeys->find({benchmark, metric});
  if (it != kKeys->end()) return it->second;
  return absl::StrCat(LkpProgram(benchmark), ".", metric);
}

absl::StatusOr<LkpExport> ExportLkp(const ExportRun& run) {
  const v1::RunSpec& spec = run.run.spec();
  const std::string& benchmark = spec.benchmark();
  const std::string program = LkpProgram(benchmark);
  LkpExport out;
  bool any = false;
  for (const std::string& arm : ExportArmOrder(run)) {
    std::vector<const v1::Sample*> samples = CountedSamples(run, arm);
    if (samples.empty()) continue;
    if (arm.empty() || arm.front() == '.' || arm.find('/') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("arm: \"", arm, "\" cannot be an LKP result directory"));
    }
    any = true;
    const std::map<std::string, std::string> arm_params = ArmParams(spec, arm);
    std::vector<std::tuple<int64_t, uint32_t>> order;
    std::map<std::tuple<int64_t, uint32_t>, LkpRun> runs;
    for (const v1::Sample* s : samples) {
      const auto key = std::tuple(s->job_id(), s->iteration());
      auto [it, added] = runs.try_emplace(key);
      LkpRun& r = it->second;
      if (added) {
        order.push_back(key);
        r.first = s;
        r.params = arm_params;
        if (!s->param_name().empty()) r.params[s->param_name()] = s->param_value();
        r.param_dir = s->param_name().empty()
                          ? std::string("default")
                          : absl::StrCat(s->param_name(), "=", s->param_value());
        if (r.param_dir.find('/') != std::string::npos || r.param_dir.front() == '.') {
          return absl::InvalidArgumentError(absl::StrCat(
              "sweep.", s->param_name(), ": \"", s->param_value(), "\" cannot be a directory"));
        }
      }
      if (s->series().empty()) {
        r.stats[LkpStatKey(benchmark, s->metric())] = s->value();
      } else if (benchmark == "ebizzy" && s->metric() == "records_per_sec" &&
                 s->series().rfind("thread", 0) == 0) {
        int64_t index = 0;
        if (absl::SimpleAtoi(s->series().substr(6), &index))
          r.threads.emplace_back(index, s->value());
      }
    }
    // LKP's ebizzy parser's per-thread figures.
    for (auto& [key, r] : runs) {
      auto total = r.stats.find("ebizzy.throughput");
      if (r.threads.empty() || total == r.stats.end()) continue;
      std::vector<double> v;
      for (const auto& t : r.threads) v.push_back(t.second);
      r.stats["ebizzy.throughput.per_thread.min"] = *std::min_element(v.begin(), v.end());
      r.stats["ebizzy.throughput.per_thread.max"] = *std::max_element(v.begin(), v.end());
      if (total->second != 0) {
        r.stats["ebizzy.throughput.per_thread.stddev_percent"] =
            100.0 * LkpStddev(v) / total->second;
      }
    }
    if (benchmark == "willitscale") LkpWillItScaleStats(runs);
    // Number the runs of each result root and gather its matrix.
    std::map<std::string, LkpMatrix> matrices;
    std::map<std::string, std::vector<std::string>> sources;
    std::vector<std::string> roots;
    for (const auto& key : order) {
      const LkpRun& r = runs[key];
      const std::string root = absl::StrCat(arm, "/", r.param_dir);
      if (!sources.count(root)) roots.push_back(root);
      const size_t n = sources[root].size();
      const std::string dir = absl::StrCat(root, "/", n);
      LkpMatrix program_json;
      LkpMatrix& matrix = matrices[root];
      for (const auto& [stat, value] : r.stats) {
        program_json[stat].push_back(value);
        std::vector<double>& column = matrix[stat];
        // A key missing from earlier runs is 0 there, as LKP's matrix_fill_missing_zeros.
        column.resize(n, 0.0);
        column.push_back(value);
      }
      out.files.push_back({dir + "/stats.json", LkpStatsJson(r.stats)});
      out.files.push_back(
          {absl::StrCat(dir, "/", program, ".json"), LkpMatrixJson(program_json, {})});
      out.files.push_back({dir + "/job.yaml", LkpJobYaml(run.run, arm, r, program)});
      sources[root].push_back(dir + "/stats.json");
    }
    for (const std::string& root : roots) {
      LkpMatrix& matrix = matrices[root];
      const size_t n = sources[root].size();
      LkpStats avg, stddev;
      for (auto& [stat, column] : matrix) {
        column.resize(n, 0.0);
        avg[stat] = LkpMean(column);
        stddev[stat] = LkpStddev(column);
      }
      out.files.push_back({root + "/matrix.json", LkpMatrixJson(matrix, sources[root])});
      out.files.push_back({root + "/avg.json", LkpStatsJson(avg)});
      out.files.push_back({root + "/stddev.json", LkpStatsJson(stddev)});
    }
  }
  if (!any) {
    return absl::NotFoundError(
        absl::StrCat("RUN: run ", run.run.id(), " has no samples to export"));
  }
  return out;
}

}  // namespace tlbfleet::report
