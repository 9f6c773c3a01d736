#include "controller/report/import_mmtests_results.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace tlbfleet::report {
namespace {

namespace v1 = tlbfleet::v1;
using MmiParams = std::map<std::string, std::string>;

// One benchmark iteration read from the logs: factor (the key in the log's name), the figures
// by tlbfleet metric, and ebizzy's per-thread figures.
struct MmiMeasure {
  std::string factor;
  std::map<std::string, double> values;
  std::vector<double> threads;
};

// What a benchmark directory of mmtests is for tlbfleet.
struct MmiBenchmark {
  std::string benchmark;
  MmiParams params;
};

absl::Status MmiLineError(const std::string& path, size_t line, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": ", what));
}

std::vector<absl::string_view> MmiLines(const std::string& content) {
  return absl::StrSplit(content, '\n');
}

std::vector<absl::string_view> MmiFields(absl::string_view line) {
  return absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
}

bool MmiNumber(absl::string_view text, double* value) {
  return absl::SimpleAtod(text, value) && std::isfinite(*value);
}

// The digits (and one '.') a field starts with: munmap.c's "12ms", pft's "0.01s".
bool MmiLeadingNumber(absl::string_view text, double* value) {
  size_t end = 0;
  while (end < text.size() && (absl::ascii_isdigit(text[end]) || text[end] == '.')) ++end;
  return end > 0 && MmiNumber(text.substr(0, end), value);
}

// tlbfleet's benchmark and parameters of an mmtests benchmark directory (the inverse of
// MmtestsBenchmarkName in export_mmtests.h).
std::optional<MmiBenchmark> MmiBenchmarkOf(const std::string& mmtest) {
  if (mmtest == "ebizzy" || mmtest == "usemem" || mmtest == "pft" || mmtest == "tlbflush") {
    return MmiBenchmark{mmtest, {}};
  }
  if (mmtest == "perfpipe") return MmiBenchmark{"pipetest", {}};
  std::vector<std::string> parts = absl::StrSplit(mmtest, '-');
  if (parts.size() == 3 && parts[0] == "hackbench" &&
      (parts[1] == "process" || parts[1] == "thread") &&
      (parts[2] == "pipes" || parts[2] == "sockets")) {
    return MmiBenchmark{"hackbench",
                        {{"mode", parts[1] == "thread" ? "threads" : "processes"},
                         {"ipc", parts[2] == "pipes" ? "pipe" : "socket"}}};
  }
  if (parts.size() >= 3 && parts[0] == "netperf" && (parts[1] == "ipv4" || parts[1] == "ipv6")) {
    const std::string kind = absl::StrJoin(parts.begin() + 2, parts.end(), "-");
    static const auto* kTests = new std::map<std::string, std::string>{
        {"tcp", "tcp_stream"}, {"udp", "udp_stream"}, {"tcp-rr", "tcp_rr"}, {"udp-rr", "udp_rr"}};
    auto it = kTests->find(kind);
    if (it != kTests->end()) return MmiBenchmark{"netperf", {{"test", it->second}}};
  }
  return std::nullopt;
}

// The parameter mmtests keys a benchmark's logs by (export_mmtests.cc's MmFactorParam).
std::string MmiFactorParam(const std::string& benchmark) {
  if (benchmark == "ebizzy" || benchmark == "pft" || benchmark == "tlbflush") return "threads";
  if (benchmark == "hackbench") return "groups";
  if (benchmark == "netperf") return "message_size";
  if (benchmark == "usemem") return "processes";
  return "";
}

// "PREFIX-FACTOR-N" + suffix, the names of one file per iteration; false when `name` is not one.
bool MmiSplitName(absl::string_view name, absl::string_view prefix, absl::string_view suffix,
                  std::string* factor) {
  if (!absl::ConsumePrefix(&name, prefix) || !absl::ConsumeSuffix(&name, suffix)) return false;
  const size_t dash = name.rfind('-');
  if (dash == absl::string_view::npos || dash == 0) return false;
  uint32_t n = 0;
  if (!absl::SimpleAtoi(name.substr(dash + 1), &n)) return false;
  *factor = std::string(name.substr(0, dash));
  return true;
}

// ebizzy-F-N.log: "TOTAL records/s T0 T1 ..." (mmtests' patched ebizzy).
absl::Status MmiEbizzy(const std::string& path, const std::string& name, const std::string& text,
                       std::vector<MmiMeasure>* out) {
  MmiMeasure m;
  if (!MmiSplitName(name, "ebizzy-", ".log", &m.factor)) return absl::OkStatus();
  std::vector<absl::string_view> lines = MmiLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<absl::string_view> f = MmiFields(lines[i]);
    if (f.size() < 2 || f[1] != "records/s") continue;
    double total = 0;
    if (!MmiNumber(f[0], &total)) {
      return MmiLineError(path, i + 1, absl::StrCat("\"", f[0], "\" is not a number of records/s"));
    }
    m.values["records_per_sec"] = total;
    for (size_t t = 2; t < f.size(); ++t) {
      double v = 0;
      if (!MmiNumber(f[t], &v)) {
        return MmiLineError(
            path, i + 1,
            absl::StrCat("thread ", t - 2, ": \"", f[t], "\" is not a number of records/s"));
      }
      m.threads.push_back(v);
    }
    out->push_back(std::move(m));
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": no \"TOTAL records/s ...\" line (mmtests' ebizzy log)"));
}

// hackbench-F: perf bench sched messaging's "Total time: T [sec]" per iteration, appended (or
// hackbench's own "Time: T").
absl::Status MmiHackbench(const std::string& path, const std::string& name, const std::string& text,
                          std::vector<MmiMeasure>* out) {
  absl::string_view rest = name;
  if (!absl::ConsumePrefix(&rest, "hackbench-") || rest.empty()) return absl::OkStatus();
  std::vector<absl::string_view> lines = MmiLines(text);
  size_t found = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<absl::string_view> f = MmiFields(lines[i]);
    size_t at = 0;
    if (f.size() >= 3 && f[0] == "Total" && f[1] == "time:") at = 2;
    if (f.size() >= 2 && f[0] == "Time:") at = 1;
    if (at == 0) continue;
    double v = 0;
    if (!MmiNumber(f[at], &v)) {
      return MmiLineError(path, i + 1, absl::StrCat("\"", f[at], "\" is not a time in seconds"));
    }
    out->push_back({std::string(rest), {{"time", v}}, {}});
    ++found;
  }
  if (found == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no \"Total time: T [sec]\" line"));
  }
  return absl::OkStatus();
}

// PROTOCOL-F.N: netperf's report; the figures are the numeric rows.
absl::Status MmiNetperf(const std::string& path, const std::string& name, const std::string& text,
                        std::vector<MmiMeasure>* out) {
  const size_t dash = name.find('-'), dot = name.rfind('.');
  if (dash == std::string::npos || dot == std::string::npos || dot < dash) return absl::OkStatus();
  const std::string protocol = name.substr(0, dash);
  if (protocol != "TCP_STREAM" && protocol != "UDP_STREAM" && protocol != "TCP_RR" &&
      protocol != "UDP_RR") {
    return absl::OkStatus();
  }
  std::vector<std::pair<size_t, std::vector<absl::string_view>>> rows;
  std::vector<absl::string_view> lines = MmiLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<absl::string_view> f = MmiFields(lines[i]);
    double ignored = 0;
    if (!f.empty() && MmiNumber(f[0], &ignored)) rows.emplace_back(i + 1, std::move(f));
  }
  const bool rr = protocol == "TCP_RR" || protocol == "UDP_RR";
  // TCP_STREAM: the 5th column; UDP_STREAM: what the receiver got, the last column of the
  // second row; RR: the 6th column of the first row.
  size_t row = protocol == "UDP_STREAM" && rows.size() >= 2 ? 1 : 0;
  if (rows.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no result row (netperf's report)"));
  }
  const std::vector<absl::string_view>& f = rows[row].second;
  const size_t column = protocol == "TCP_STREAM" ? 4 : rr ? 5 : f.size() - 1;
  double v = 0;
  if (column >= f.size() || !MmiNumber(f[column], &v)) {
    return MmiLineError(
        path, rows[row].first,
        absl::StrCat("no ", rr ? "transaction rate" : "throughput", " in column ", column + 1));
  }
  out->push_back(
      {name.substr(dash + 1, dot - dash - 1), {{rr ? "trans_per_sec" : "mbit_per_sec", v}}, {}});
  return absl::OkStatus();
}

// benchlog-F-_-N: perf bench sched pipe's "U usecs/op" and "O ops/sec".
absl::Status MmiPerfpipe(const std::string& path, const std::string& name, const std::string& text,
                         std::vector<MmiMeasure>* out) {
  MmiMeasure m;
  if (!MmiSplitName(name, "benchlog-", "", &m.factor)) return absl::OkStatus();
  if (absl::EndsWith(m.factor, "-_")) m.factor.resize(m.factor.size() - 2);
  std::vector<absl::string_view> lines = MmiLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<absl::string_view> f = MmiFields(lines[i]);
    if (f.size() != 2 || (f[1] != "usecs/op" && f[1] != "ops/sec")) continue;
    double v = 0;
    if (!MmiNumber(f[0], &v)) {
      return MmiLineError(path, i + 1, absl::StrCat("\"", f[0], "\" is not a number"));
    }
    m.values[f[1] == "usecs/op" ? "usecs_per_op" : "ops_per_sec"] = v;
  }
  if (!m.values.count("usecs_per_op")) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no \"U usecs/op\" line"));
  }
  out->push_back(std::move(m));
  return absl::OkStatus();
}

// time-F-N: GNU time's "...user ...system [H:]M:S.SSelapsed ..." report.
absl::Status MmiUsemem(const std::string& path, const std::string& name, const std::string& text,
                       std::vector<MmiMeasure>* out) {
  MmiMeasure m;
  if (!MmiSplitName(name, "time-", "", &m.factor)) return absl::OkStatus();
  std::vector<absl::string_view> lines = MmiLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    for (absl::string_view field : MmiFields(lines[i])) {
      if (!absl::ConsumeSuffix(&field, "elapsed")) continue;
      double seconds = 0;
      for (absl::string_view part : absl::StrSplit(field, ':')) {
        double v = 0;
        if (!MmiNumber(part, &v)) {
          return MmiLineError(path, i + 1,
                              absl::StrCat("\"", field, "elapsed\" is not [H:]M:S elapsed"));
        }
        seconds = seconds * 60 + v;
      }
      m.values["elapsed_seconds"] = seconds;
      out->push_back(std::move(m));
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": no \"M:SSelapsed\" field (GNU time's report)"));
}

// pft-F.log: a header, then "Gb Thr CLine User System Wall flt/cpu/s fault/wsec" rows.
absl::Status MmiPft(const std::string& path, const std::string& name, const std::string& text,
                    std::vector<MmiMeasure>* out) {
  absl::string_view rest = name;
  if (!absl::ConsumePrefix(&rest, "pft-") || !absl::ConsumeSuffix(&rest, ".log")) {
    return absl::OkStatus();
  }
  std::vector<absl::string_view> lines = MmiLines(text);
  size_t found = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<absl::string_view> f = MmiFields(lines[i]);
    double ignored = 0;
    if (f.empty() || !MmiNumber(f[0], &ignored)) continue;  // the header
    if (f.size() != 8) {
      return MmiLineError(path, i + 1,
                          absl::StrCat(f.size(),
                                       " columns; pft's rows have 8 (Gb Thr CLine User "
                                       "System Wall flt/cpu/s fault/wsec)"));
    }
    MmiMeasure m{std::string(rest), {}, {}};
    static const char* kNames[] = {"user_seconds", "system_seconds", "wall_seconds",
                                   "faults_per_cpu", "faults_per_sec"};
    for (size_t c = 3; c < 8; ++c) {
      double v = 0;
      if (!MmiLeadingNumber(f[c], &v)) {
        return MmiLineError(path, i + 1,
                            absl::StrCat("column ", c + 1, ": \"", f[c], "\" is not a number"));
      }
      m.values[kNames[c - 3]] = v;
    }
    out->push_back(std::move(m));
    ++found;
  }
  if (found == 0) return absl::InvalidArgumentError(absl::StrCat(path, ": no pft result row"));
  return absl::OkStatus();
}

// tlbflush-F.log: munmap.c's "munmap use Xms Yns/time, memory access uses Z times/thread/ms,
// cost Wns/time" per iteration.
absl::Status MmiTlbflush(const std::string& path, const std::string& name, const std::string& text,
                         std::vector<MmiMeasure>* out) {
  absl::string_view rest = name;
  if (!absl::ConsumePrefix(&rest, "tlbflush-") || !absl::ConsumeSuffix(&rest, ".log")) {
    return absl::OkStatus();
  }
  std::vector<absl::string_view> lines = MmiLines(text);
  size_t found = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<absl::string_view> f = MmiFields(lines[i]);
    if (f.empty() || f[0] != "munmap") continue;
    // munmap use Xms Yns/time, memory access uses Z times/thread/ms, cost Wns/time
    static const std::pair<size_t, const char*> kFields[] = {
        {2, "flush_ms"}, {3, "flush_ns"}, {7, "accesses_per_thread_ms"}, {10, "cost_ns"}};
    MmiMeasure m{std::string(rest), {}, {}};
    for (const auto& [index, metric] : kFields) {
      double v = 0;
      if (index >= f.size() || !MmiLeadingNumber(f[index], &v)) {
        return MmiLineError(
            path, i + 1,
            absl::StrCat("not munmap.c's line (no ", metric, " in field ", index + 1, ")"));
      }
      m.values[metric] = v;
    }
    out->push_back(std::move(m));
    ++found;
  }
  if (found == 0) return absl::InvalidArgumentError(absl::StrCat(path, ": no \"munmap use\" line"));
  return absl::OkStatus();
}

absl::Status MmiParseLog(const std::string& benchmark, const std::string& path,
                         const std::string& name, const std::string& text,
                         std::vector<MmiMeasure>* out) {
  if (benchmark == "ebizzy") return MmiEbizzy(path, name, text, out);
  if (benchmark == "hackbench") return MmiHackbench(path, name, text, out);
  if (benchmark == "netperf") return MmiNetperf(path, name, text, out);
  if (benchmark == "pipetest") return MmiPerfpipe(path, name, text, out);
  if (benchmark == "usemem") return MmiUsemem(path, name, text, out);
  if (benchmark == "pft") return MmiPft(path, name, text, out);
  if (benchmark == "tlbflush") return MmiTlbflush(path, name, text, out);
  return absl::OkStatus();
}

// The iteration number a log's name ends with (ebizzy-4-2.log: 2), for ordering; 0 for the
// files that hold every iteration.
uint32_t MmiFileIteration(const std::string& name) {
  absl::string_view s = name;
  absl::ConsumeSuffix(&s, ".log");
  const size_t cut = s.find_last_of("-.");
  uint32_t n = 0;
  if (cut != absl::string_view::npos && absl::SimpleAtoi(s.substr(cut + 1), &n)) return n;
  return 0;
}

// What mmtests (and tlbfleet's export) recorded of one iter-N: the machine and the kernel.
struct MmiBootFacts {
  std::map<std::string, std::string> host;  // tlbfleet-host, "unknown" dropped
  std::string hostname, kernel_release;
  int64_t start = 0, end = 0;
  bool failed = false;
};

absl::StatusOr<MmiBootFacts> MmiReadBoot(const ImportFiles& files, const std::string& iter_dir) {
  MmiBootFacts b;
  if (auto it = files.find(iter_dir + "/kernel.version"); it != files.end()) {
    std::vector<absl::string_view> f = MmiFields(MmiLines(it->second)[0]);
    if (f.size() >= 3 && f[0] == "Linux") {
      b.hostname = std::string(f[1]);
      b.kernel_release = std::string(f[2]);
    } else if (f.size() == 1) {
      b.kernel_release = std::string(f[0]);  // uname -r
    }
  }
  if (auto it = files.find(iter_dir + "/tests-timestamp"); it != files.end()) {
    std::vector<absl::string_view> lines = MmiLines(it->second);
    for (size_t i = 0; i < lines.size(); ++i) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(lines[i], " :: ");
      std::vector<absl::string_view> f = MmiFields(kv.second);
      int64_t t = 0;
      if (kv.first == "start" && !f.empty()) {
        if (!absl::SimpleAtoi(f[0], &t)) {
          return MmiLineError(iter_dir + "/tests-timestamp", i + 1, "start: not a Unix time");
        }
        if (b.start == 0 || t < b.start) b.start = t;
      } else if ((kv.first == "test begin" || kv.first == "test end") && f.size() >= 2) {
        if (!absl::SimpleAtoi(f[1], &t)) {
          return MmiLineError(iter_dir + "/tests-timestamp", i + 1,
                              absl::StrCat(kv.first, ": not a Unix time"));
        }
        if (kv.first == "test begin" && (b.start == 0 || t < b.start)) b.start = t;
        if (kv.first == "test end") {
          b.end = std::max(b.end, t);
          if (f.size() >= 3 && f[2] != "0") b.failed = true;
        }
      }
    }
  }
  if (auto it = files.find(iter_dir + "/tlbfleet-host"); it != files.end()) {
    for (absl::string_view line : MmiLines(it->second)) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, " :: ");
      if (kv.first.empty() || kv.second == "unknown") continue;
      b.host[std::string(kv.first)] = std::string(kv.second);
    }
  }
  return b;
}

void MmiSetProvenance(const MmiBootFacts& b, v1::Sample* s) {
  auto get = [&](const char* key) {
    auto it = b.host.find(key);
    return it == b.host.end() ? std::string() : it->second;
  };
  s->set_host(get("hostname").empty() ? b.hostname : get("hostname"));
  s->set_kernel_release(get("kernel_release").empty() ? b.kernel_release : get("kernel_release"));
  s->set_agent_id(get("agent_id"));
  s->set_machine_id(get("machine_id"));
  s->set_microarch(get("microarch"));
  s->set_boot_id(get("boot_id"));
  s->set_boot_entry(get("boot_entry"));
  s->set_kernel_cmdline(get("kernel_cmdline"));
  s->set_commit(get("commit"));
  s->set_build_id(get("build_id"));
  // "N (set)" or "N (observed)" (export_mmtests.cc).
  std::vector<std::string> ceiling = absl::StrSplit(get("tlb_single_page_flush_ceiling"), ' ');
  int64_t value = 0;
  if (ceiling.size() == 2 && absl::SimpleAtoi(ceiling[0], &value)) {
    s->set_ceiling(value);
    s->set_ceiling_applied(ceiling[1] == "(set)");
    s->set_ceiling_observed(ceiling[1] == "(observed)");
  }
}

// Measurements of one iter-N of one arm, in file order (factor, then iteration).
struct MmiIter {
  std::string dir;
  std::string mmtest;
  std::vector<MmiMeasure> measures;
  MmiBootFacts boot;
};

bool MmiNumericLess(const std::string& a, const std::string& b) {
  double x = 0, y = 0;
  if (absl::SimpleAtod(a, &x) && absl::SimpleAtod(b, &y) && x != y) return x < y;
  return a < b;
}

}  // namespace

absl::StatusOr<ImportedRun> ImportMmtestsResults(const ImportFiles& files) {
  // ARM -> iter index -> (mmtest -> files under its logs/).
  std::map<std::string, std::map<int64_t, std::map<std::string, std::vector<std::string>>>> arms;
  for (const auto& [path, content] : files) {
    std::vector<std::string> parts = absl::StrSplit(path, '/');
    if (parts.size() < 5 || parts[3] != "logs") continue;
    absl::string_view iter = parts[1];
    int64_t n = 0;
    if (!absl::ConsumePrefix(&iter, "iter-") || !absl::SimpleAtoi(iter, &n) || n < 0) continue;
    arms[parts[0]][n][parts[2]].push_back(path);
  }
  if (arms.empty()) {
    return absl::InvalidArgumentError(
        "DIR: not an mmtests results directory (no ARM/iter-N/BENCH/logs/ under it)");
  }
  ImportedRun run;
  std::string benchmark;
  std::vector<std::pair<std::string, std::vector<MmiIter>>> parsed;
  for (const auto& [arm, iters] : arms) {
    // Every iteration directory from iter-0 to the last: a gap is a copy that lost one.
    for (int64_t i = 0; i <= iters.rbegin()->first; ++i) {
      if (!iters.count(i)) {
        return absl::InvalidArgumentError(
            absl::StrCat(arm, "/iter-", i, ": missing (", arm, " has iter-0 to iter-",
                         iters.rbegin()->first, "; every iteration directory is needed)"));
      }
    }
    std::vector<MmiIter> arm_iters;
    MmiParams arm_params;
    for (const auto& [n, benches] : iters) {
      if (benches.size() != 1) {
        std::vector<std::string> names;
        for (const auto& entry : benches) names.push_back(entry.first);
        return absl::InvalidArgumentError(
            absl::StrCat(arm, "/iter-", n, ": more than one benchmark (",
                         absl::StrJoin(names, ", "), "); import one benchmark per directory"));
      }
      const std::string& mmtest = benches.begin()->first;
      std::optional<MmiBenchmark> bench = MmiBenchmarkOf(mmtest);
      if (!bench.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            arm, "/iter-", n, "/", mmtest,
            ": tlbfleet has no workload for this mmtests benchmark (it imports ebizzy, "
            "hackbench-*, netperf-*, perfpipe, usemem, pft, tlbflush)"));
      }
      if (benchmark.empty()) benchmark = bench->benchmark;
      if (bench->benchmark != benchmark) {
        return absl::InvalidArgumentError(absl::StrCat(arm, "/iter-", n, "/", mmtest, ": ",
                                                       bench->benchmark, ", not ", benchmark,
                                                       " as the other arms; one run is one "
                                                       "benchmark"));
      }
      arm_params = bench->params;
      MmiIter it;
      it.dir = absl::StrCat(arm, "/iter-", n);
      it.mmtest = mmtest;
      std::vector<std::string> logs = benches.begin()->second;
      std::stable_sort(logs.begin(), logs.end(), [](const std::string& a, const std::string& b) {
        return MmiFileIteration(a.substr(a.rfind('/') + 1)) <
               MmiFileIteration(b.substr(b.rfind('/') + 1));
      });
      for (const std::string& path : logs) {
        const std::string name = path.substr(path.rfind('/') + 1);
        if (absl::Status s = MmiParseLog(benchmark, path, name, files.at(path), &it.measures);
            !s.ok()) {
          return s;
        }
      }
      if (it.measures.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(it.dir, "/", mmtest, "/logs: no log of ", mmtest, " that tlbfleet reads"));
      }
      absl::StatusOr<MmiBootFacts> boot = MmiReadBoot(files, it.dir);
      if (!boot.ok()) return boot.status();
      it.boot = *std::move(boot);
      arm_iters.push_back(std::move(it));
    }
    v1::ArmSpec* spec_arm = run.spec.add_arms();
    spec_arm->set_name(arm);
    for (const auto& [k, v] : arm_params) (*spec_arm->mutable_params())[k] = v;
    parsed.emplace_back(arm, std::move(arm_iters));
  }

  // One factor everywhere is the run's parameter (export_mmtests.cc keys logs by it when the
  // run sweeps nothing); several are a sweep of the benchmark's factor parameter.
  std::set<std::string> factors;
  for (const auto& [arm, iters] : parsed) {
    for (const MmiIter& it : iters) {
      for (const MmiMeasure& m : it.measures) factors.insert(m.factor);
    }
  }
  const std::string factor_param = MmiFactorParam(benchmark);
  const bool swept = factors.size() > 1 ||
                     (factors.size() == 1 && *factors.begin() != "_" && factor_param.empty());
  std::string sweep_param = factor_param.empty() ? "factor" : factor_param;
  if (swept) {
    std::vector<std::string> values(factors.begin(), factors.end());
    std::sort(values.begin(), values.end(), MmiNumericLess);
    run.spec.mutable_sweep()->set_param(sweep_param);
    for (const std::string& v : values) run.spec.mutable_sweep()->add_values(v);
    if (factors.count("_")) {
      run.warnings.push_back(
          "some logs have no factor (\"_\") and others have one: those read "
          "as the sweep value \"_\"");
    }
  } else if (*factors.begin() != "_") {
    (*run.spec.mutable_params())[factor_param] = *factors.begin();
  }
  run.spec.set_benchmark(benchmark);

  int64_t job = 0;
  for (const auto& [arm_name, iters] : parsed) {
    // A named copy: clang before 16 cannot capture a structured binding.
    const std::string& arm = arm_name;
    std::map<std::string, uint32_t> iteration_of;  // factor -> iterations so far
    for (const MmiIter& it : iters) {
      if (it.boot.start > 0 && (run.started_unix == 0 || it.boot.start < run.started_unix)) {
        run.started_unix = it.boot.start;
      }
      run.finished_unix = std::max(run.finished_unix, it.boot.end);
      run.failed = run.failed || it.boot.failed;
      for (const MmiMeasure& m : it.measures) {
        ++job;
        const uint32_t iteration = ++iteration_of[m.factor];
        auto add = [&](const std::string& metric, double value, const std::string& series) {
          v1::Sample& s = run.samples.emplace_back();
          s.set_job_id(job);
          s.set_arm(arm);
          if (swept) {
            s.set_param_name(sweep_param);
            s.set_param_value(m.factor);
          }
          s.set_iteration(iteration);
          s.set_metric(metric);
          s.set_series(series);
          s.set_value(value);
          SetMetricFacts(benchmark, &s);
          MmiSetProvenance(it.boot, &s);
          s.set_seq(static_cast<uint64_t>(run.samples.size() - 1));
        };
        for (const auto& [metric, value] : m.values) add(metric, value, "");
        for (size_t t = 0; t < m.threads.size(); ++t) {
          add("records_per_sec", m.threads[t], absl::StrCat("thread", t));
        }
      }
    }
  }
  std::vector<std::string> names;
  for (const auto& [arm, iters] : parsed) names.push_back(arm);
  run.spec.set_name(absl::StrCat("mmtests ", benchmark, ": ", absl::StrJoin(names, ",")));
  return run;
}

}  // namespace tlbfleet::report
