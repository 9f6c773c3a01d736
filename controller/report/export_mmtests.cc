#include "controller/report/export_mmtests.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "controller/report/results_csv.h"

namespace tlbfleet::report {
namespace {

namespace v1 = tlbfleet::v1;
using MmParams = std::map<std::string, std::string>;

// One job iteration: its aggregate figures and, for ebizzy, each thread's.
struct MmMeasurement {
  MmParams params;  // the arm's, with the swept value
  std::map<std::string, double> values;
  std::vector<std::pair<int64_t, double>> threads;  // thread index, value
};

// Measurements of one boot, by factor (the value in mmtests' file names), factors in order.
using MmFactors = std::vector<std::pair<std::string, std::vector<MmMeasurement>>>;

// The parameter a benchmark's mmtests logs are keyed by, when the run sweeps nothing.
std::string MmFactorParam(const std::string& benchmark) {
  if (benchmark == "ebizzy" || benchmark == "pft" || benchmark == "tlbflush") return "threads";
  if (benchmark == "hackbench") return "groups";
  if (benchmark == "netperf") return "message_size";
  if (benchmark == "usemem") return "processes";
  return "";  // pipetest: perfpipe's logs have no factor
}

// The metric without which a job iteration is not written (mmtests' default metric).
std::string MmPrimaryMetric(const std::string& benchmark, const MmParams& params) {
  if (benchmark == "ebizzy") return "records_per_sec";
  if (benchmark == "hackbench") return "time";
  if (benchmark == "netperf") {
    auto it = params.find("test");
    const std::string test = it == params.end() ? "" : it->second;
    return test == "tcp_rr" || test == "udp_rr" ? "trans_per_sec" : "mbit_per_sec";
  }
  if (benchmark == "pipetest") return "usecs_per_op";
  if (benchmark == "usemem") return "elapsed_seconds";
  if (benchmark == "pft") return "faults_per_sec";
  if (benchmark == "tlbflush") return "cost_ns";
  return "";
}

// Fixed notation with the fewest digits that read back as the stored double: the parsers
// skip netperf lines holding a letter and LKP's regexes want digits, so never "1e+06".
std::string MmFixed(double value) {
  char buf[512];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed);
  if (ec != std::errc()) return absl::StrFormat("%.17f", value);
  return std::string(buf, end);
}

std::string MmParam(const MmParams& params, const std::string& name, const std::string& otherwise) {
  auto it = params.find(name);
  return it == params.end() || it->second.empty() ? otherwise : it->second;
}

int64_t MmIntParam(const MmParams& params, const std::string& name, int64_t otherwise) {
  int64_t v = 0;
  return absl::SimpleAtoi(MmParam(params, name, ""), &v) ? v : otherwise;
}

double MmValue(const MmMeasurement& m, const std::string& metric) {
  auto it = m.values.find(metric);
  return it == m.values.end() ? 0.0 : it->second;
}

// Whole units, as the C tools print them (%u of a truncated double).
std::string MmWhole(double value) {
  return absl::StrCat(static_cast<int64_t>(value < 0 ? 0 : std::trunc(value)));
}

// ebizzy (mmtests' patched build): "TOTAL records/s T0 T1 ..." per run, one file each.
void WriteEbizzy(const MmFactors& factors, const std::string& logs,
                 std::vector<ExportFile>* files) {
  for (const auto& [factor, runs] : factors) {
    for (size_t i = 0; i < runs.size(); ++i) {
      std::string line = absl::StrCat(MmFixed(MmValue(runs[i], "records_per_sec")), " records/s");
      for (const auto& [index, value] : runs[i].threads)
        absl::StrAppend(&line, " ", MmFixed(value));
      files->push_back({absl::StrCat(logs, "/ebizzy-", factor, "-", i + 1, ".log"), line + "\n"});
    }
  }
}

// perf bench sched messaging, every iteration appended to one file per group count.
void WriteHackbench(const MmFactors& factors, const std::string& logs,
                    std::vector<ExportFile>* files) {
  for (const auto& [factor, runs] : factors) {
    std::string text;
    for (const MmMeasurement& m : runs) {
      const int64_t groups = MmIntParam(m.params, "groups", 10);
      const int64_t fds = MmIntParam(m.params, "fds", 20);
      const std::string tasks = MmParam(m.params, "mode", "processes");
      absl::StrAppend(&text, "# Running 'sched/messaging' benchmark:\n# ", fds,
                      " sender and receiver ", tasks, " per group\n# ", groups,
                      " groups == ", 2 * fds * groups, " ", tasks,
                      " run\n\n     Total time: ", MmFixed(MmValue(m, "time")), " [sec]\n");
    }
    files->push_back({absl::StrCat(logs, "/hackbench-", factor), text});
  }
}

std::string MmNetperfProtocol(const MmParams& params) {
  return absl::AsciiStrToUpper(MmParam(params, "test", "tcp_stream"));
}

// netperf 2.x's report of one test, one file per iteration (PROTOCOL-SIZE.N), and the files
// netperf-bench leaves beside them (protocols, units-PROTOCOL).
void WriteNetperf(const MmFactors& factors, const std::string& logs,
                  std::vector<ExportFile>* files) {
  std::string protocol;
  for (const auto& [factor, runs] : factors) {
    for (size_t i = 0; i < runs.size(); ++i) {
      const MmMeasurement& m = runs[i];
      protocol = MmNetperfProtocol(m.params);
      const std::string to = MmParam(m.params, "server", "127.0.0.1");
      const std::string secs = absl::StrFormat("%.2f", MmIntParam(m.params, "seconds", 10) * 1.0);
      std::string text;
      if (protocol == "TCP_RR" || protocol == "UDP_RR") {
        const std::string tps = MmFixed(MmValue(m, "trans_per_sec"));
        absl::StrAppend(
            &text, "MIGRATED ", protocol.substr(0, 3),
            " REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to ", to,
            " () port 0 AF_INET : first burst 0\n",
            "Local /Remote\nSocket Size   Request  Resp.   Elapsed  Trans.\n",
            "Send   Recv   Size     Size    Time     Rate\nbytes  Bytes  bytes    bytes   secs.    "
            "per sec\n\n",
            absl::StrFormat("%-6s %-6s %-8s %-7s %-8s %s\n", "0", "0", factor, factor, secs, tps),
            absl::StrFormat("%-6s %-6s\n", "0", "0"));
      } else if (protocol == "UDP_STREAM") {
        const std::string mbit = MmFixed(MmValue(m, "mbit_per_sec"));
        absl::StrAppend(
            &text, "MIGRATED UDP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to ", to,
            " () port 0 AF_INET\n", "Socket  Message  Elapsed      Messages\n",
            "Size    Size     Time         Okay Errors   Throughput\n",
            "bytes   bytes    secs            #      #   10^6bits/sec\n\n",
            absl::StrFormat("%6s %7s %7s %11s %6s %s\n", "0", factor, secs, "0", "0", mbit),
            absl::StrFormat("%6s %7s %7s %11s %6s %s\n", "0", "", secs, "0", "", mbit));
      } else {
        const std::string mbit = MmFixed(MmValue(m, "mbit_per_sec"));
        absl::StrAppend(&text, "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to ",
                        to, " () port 0 AF_INET\n", "Recv   Send    Send\n",
                        "Socket Socket  Message  Elapsed\n",
                        "Size   Size    Size     Time     Throughput\n",
                        "bytes  bytes   bytes    secs.    10^6bits/sec\n\n",
                        absl::StrFormat("%6s %6s %6s %8s %s\n", "0", "0", factor, secs, mbit));
      }
      files->push_back({absl::StrCat(logs, "/", protocol, "-", factor, ".", i + 1), text});
    }
  }
  if (!protocol.empty()) {
    files->push_back({logs + "/protocols", protocol + "\n"});
    const bool rr = protocol == "TCP_RR" || protocol == "UDP_RR";
    files->push_back({absl::StrCat(logs, "/units-", protocol), rr ? "k\n" : "m\n"});
  }
}

// perf bench sched pipe, one file per iteration (benchlog-FACTOR-_-N).
void WritePerfpipe(const MmFactors& factors, const std::string& logs,
                   std::vector<ExportFile>* files) {
  for (const auto& [factor, runs] : factors) {
    for (size_t i = 0; i < runs.size(); ++i) {
      const MmMeasurement& m = runs[i];
      const int64_t loops = MmIntParam(m.params, "loops", 1000000);
      const double usecs = MmValue(m, "usecs_per_op");
      const std::string text = absl::StrCat(
          "# Running 'sched/pipe' benchmark:\n# Executed ", loops,
          " pipe operations between two processes\n\n     Total time: ",
          absl::StrFormat("%.3f", usecs * static_cast<double>(loops) / 1e6), " [sec]\n\n",
          absl::StrFormat("%14s usecs/op\n%14s ops/sec\n", MmFixed(usecs),
                          MmWhole(MmValue(m, "ops_per_sec"))));
      files->push_back({absl::StrCat(logs, "/benchlog-", factor, "-_-", i + 1), text});
    }
  }
}

// GNU time's default report of the usemem run (time-FACTOR-N). tlbfleet does not measure the
// user and system time of usemem: they read 0.00 (docs/formats.md).
void WriteUsemem(const MmFactors& factors, const std::string& logs,
                 std::vector<ExportFile>* files) {
  for (const auto& [factor, runs] : factors) {
    for (size_t i = 0; i < runs.size(); ++i) {
      const double elapsed = MmValue(runs[i], "elapsed_seconds");
      const int64_t minutes = elapsed >= 60 ? static_cast<int64_t>(elapsed / 60) : 0;
      const double seconds = elapsed - 60.0 * static_cast<double>(minutes);
      const std::string secs = absl::StrCat(seconds < 10 ? "0" : "", MmFixed(seconds));
      files->push_back({absl::StrCat(logs, "/time-", factor, "-", i + 1),
                        absl::StrCat("0.00user 0.00system ", minutes, ":", secs,
                                     "elapsed 0%CPU (0avgtext+0avgdata 0maxresident)k\n"
                                     "0inputs+0outputs (0major+0minor)pagefaults 0swaps\n")});
    }
  }
}

// pft's header and one row per iteration, appended (pft-FACTOR.log), as mmtests' ExtractPft
// read it before pft left mmtests.
void WritePft(const MmFactors& factors, const std::string& logs, std::vector<ExportFile>* files) {
  for (const auto& [factor, runs] : factors) {
    std::string text = "  Gb  Thr CLine   User      System     Wall    flt/cpu/s fault/wsec\n";
    for (const MmMeasurement& m : runs) {
      absl::StrAppend(
          &text,
          absl::StrFormat(
              " %4d %4d %4d %8ss %8ss %8ss %s %s\n", MmIntParam(m.params, "size_mb", 128) >> 10,
              MmIntParam(m.params, "threads", 1), 1, MmFixed(MmValue(m, "user_seconds")),
              MmFixed(MmValue(m, "system_seconds")), MmFixed(MmValue(m, "wall_seconds")),
              MmFixed(MmValue(m, "faults_per_cpu")), MmFixed(MmValue(m, "faults_per_sec"))));
    }
    files->push_back({absl::StrCat(logs, "/pft-", factor, ".log"), text});
  }
}

// munmap.c's line per iteration, as tlbflush-bench appended it (whole numbers).
void WriteTlbflush(const MmFactors& factors, const std::string& logs,
                   std::vector<ExportFile>* files) {
  for (const auto& [factor, runs] : factors) {
    std::string text;
    for (const MmMeasurement& m : runs) {
      absl::StrAppend(&text, "munmap use ", MmWhole(MmValue(m, "flush_ms")), "ms ",
                      MmWhole(MmValue(m, "flush_ns")), "ns/time, memory access uses ",
                      MmWhole(MmValue(m, "accesses_per_thread_ms")), " times/thread/ms, cost ",
                      MmWhole(MmValue(m, "cost_ns")), "ns/time nr_entries ",
                      MmParam(m.params, "entries", "8"), "\n");
    }
    files->push_back({absl::StrCat(logs, "/tlbflush-", factor, ".log"), text});
  }
}

void MmWriteLogs(const std::string& benchmark, const MmFactors& factors, const std::string& logs,
                 std::vector<ExportFile>* files) {
  if (benchmark == "ebizzy") WriteEbizzy(factors, logs, files);
  if (benchmark == "hackbench") WriteHackbench(factors, logs, files);
  if (benchmark == "netperf") WriteNetperf(factors, logs, files);
  if (benchmark == "pipetest") WritePerfpipe(factors, logs, files);
  if (benchmark == "usemem") WriteUsemem(factors, logs, files);
  if (benchmark == "pft") WritePft(factors, logs, files);
  if (benchmark == "tlbflush") WriteTlbflush(factors, logs, files);
}

// What mmtests records of the machine and kernel, from what tlbfleet knows of the boot.
void MmWriteProvenance(const v1::Run& run, const std::string& arm, const std::string& mmtest,
                       const v1::Sample& s, const std::string& iter_dir,
                       std::vector<ExportFile>* files) {
  // uname -a's first three fields; tlbfleet keeps no kernel version string or machine type.
  files->push_back({iter_dir + "/kernel.version",
                    absl::StrCat("Linux ", s.host(), " ", s.kernel_release(), "\n")});
  const bool ok = run.state() == v1::RUN_STATE_SUCCEEDED;
  // Per boot times are not stored: every iter-N has the run's.
  files->push_back({iter_dir + "/tests-timestamp",
                    absl::StrCat("start :: ", run.created_unix(), "\ntest begin :: ", mmtest, " ",
                                 run.created_unix(), "\ntest end :: ", mmtest, " ",
                                 run.finished_unix(), " ", ok ? 0 : 1, "\n")});
  std::string ceiling = "unknown";
  if (s.ceiling_applied())
    ceiling = absl::StrCat(s.ceiling(), " (set)");
  else if (s.ceiling_observed())
    ceiling = absl::StrCat(s.ceiling(), " (observed)");
  std::string text;
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"tlbfleet run", run.id()},
           {"arm", arm},
           {"hostname", s.host()},
           {"agent_id", s.agent_id()},
           {"machine_id", s.machine_id()},
           {"microarch", s.microarch()},
           {"boot_id", s.boot_id()},
           {"boot_entry", s.boot_entry()},
           {"kernel_release", s.kernel_release()},
           {"kernel_cmdline", s.kernel_cmdline()},
           {"commit", s.commit()},
           {"build_id", s.build_id()},
           {"tlb_single_page_flush_ceiling", ceiling}}) {
    absl::StrAppend(&text, key, " :: ", value.empty() ? "unknown" : value, "\n");
  }
  files->push_back({iter_dir + "/tlbfleet-host", text});
}

// A name mmtests takes as a directory and as an entry of --names.
absl::Status MmCheckArmName(const std::string& arm) {
  if (arm.empty() || arm.front() == '.' || arm.find_first_of("/, \t\n") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "arm: \"", arm, "\" cannot be an mmtests name (a directory and an entry of --names)"));
  }
  return absl::OkStatus();
}

bool MmAllNumeric(const MmFactors& factors) {
  for (const auto& [factor, runs] : factors) {
    double ignored = 0;
    if (!absl::SimpleAtod(factor, &ignored)) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> MmtestsBenchmarkName(const std::string& benchmark,
                                                 const MmParams& params) {
  if (benchmark == "ebizzy" || benchmark == "usemem" || benchmark == "pft" ||
      benchmark == "tlbflush") {
    return benchmark;
  }
  if (benchmark == "pipetest") return std::string("perfpipe");
  if (benchmark == "hackbench") {
    const bool threads = MmParam(params, "mode", "processes") == "threads";
    const bool pipes = MmParam(params, "ipc", "socket") == "pipe";
    return absl::StrCat("hackbench-", threads ? "thread" : "process", "-",
                        pipes ? "pipes" : "sockets");
  }
  if (benchmark == "netperf") {
    const std::string test = MmParam(params, "test", "tcp_stream");
    const std::string family =
        MmParam(params, "server", "").find(':') != std::string::npos ? "ipv6" : "ipv4";
    std::string kind;
    if (test == "tcp_stream") kind = "tcp";
    if (test == "udp_stream") kind = "udp";
    if (test == "tcp_rr") kind = "tcp-rr";
    if (test == "udp_rr") kind = "udp-rr";
    if (!kind.empty()) return absl::StrCat("netperf-", family, "-", kind);
    return absl::InvalidArgumentError(
        absl::StrCat("params.test: netperf test \"", test, "\" has no mmtests parser"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "format: mmtests has no parser for benchmark \"", benchmark,
      "\" (mmtests exports ebizzy, hackbench, netperf, pipetest, usemem, pft, tlbflush)"));
}

absl::StatusOr<MmtestsExport> ExportMmtests(const ExportRun& run) {
  const v1::RunSpec& spec = run.run.spec();
  const std::string& benchmark = spec.benchmark();
  MmtestsExport out;
  // Without a sweep the logs are keyed by the arms' value of the benchmark's factor (ebizzy's
  // threads). mmtests compares rows of the same key only, so arms that differ in it are all
  // keyed "_" (no factor), which every parser reads as a label of its own.
  const std::string factor_param = MmFactorParam(benchmark);
  std::set<std::string> arm_factors;
  for (const std::string& arm : ExportArmOrder(run)) {
    arm_factors.insert(MmParam(ArmParams(spec, arm), factor_param, "_"));
  }
  const bool shared_factor = arm_factors.size() <= 1;
  if (!shared_factor && !factor_param.empty()) {
    out.warnings.push_back(absl::StrCat(
        "the arms differ in ", factor_param, " (", absl::StrJoin(arm_factors, ", "),
        ") and the run sweeps nothing: logs are keyed \"_\" so that mmtests compares the arms"));
  }
  for (const std::string& arm : ExportArmOrder(run)) {
    std::vector<const v1::Sample*> samples = CountedSamples(run, arm);
    if (samples.empty()) continue;
    if (absl::Status s = MmCheckArmName(arm); !s.ok()) return s;
    const MmParams arm_params = ArmParams(spec, arm);
    absl::StatusOr<std::string> mmtest = MmtestsBenchmarkName(benchmark, arm_params);
    if (!mmtest.ok()) return mmtest.status();
    const std::string primary = MmPrimaryMetric(benchmark, arm_params);

    // Boots in the order of their first job; job iterations in (job, iteration) order.
    std::vector<std::string> boots;
    std::map<std::string, const v1::Sample*> boot_first;
    std::map<std::tuple<int64_t, uint32_t>, MmMeasurement> measurements;
    std::vector<std::tuple<std::string, std::string, std::tuple<int64_t, uint32_t>>> order;
    for (const v1::Sample* s : samples) {
      const std::string boot = BootKey(*s);
      if (!boot_first.count(boot)) {
        boot_first[boot] = s;
        boots.push_back(boot);
      }
      const auto key = std::tuple(s->job_id(), s->iteration());
      auto [it, added] = measurements.try_emplace(key);
      if (added) {
        it->second.params = arm_params;
        if (!s->param_name().empty()) it->second.params[s->param_name()] = s->param_value();
        std::string factor = s->param_value();
        if (factor.empty()) {
          factor = factor_param.empty() || !shared_factor
                       ? "_"
                       : MmParam(it->second.params, factor_param, "_");
        }
        if (factor.find_first_of("- \t/") != std::string::npos) {
          return absl::InvalidArgumentError(
              absl::StrCat("sweep.", s->param_name(), ": value \"", factor,
                           "\" cannot be an mmtests file name part (no '-', '/' or blanks)"));
        }
        order.emplace_back(boot, factor, key);
      }
      if (s->series().empty()) {
        it->second.values[s->metric()] = s->value();
      } else if (s->series().rfind("thread", 0) == 0 && s->metric() == primary) {
        int64_t index = 0;
        if (absl::SimpleAtoi(s->series().substr(6), &index)) {
          it->second.threads.emplace_back(index, s->value());
        }
      }
    }

    for (size_t b = 0; b < boots.size(); ++b) {
      MmFactors factors;
      for (const auto& [boot, factor, key] : order) {
        if (boot != boots[b]) continue;
        MmMeasurement& m = measurements[key];
        auto value = m.values.find(primary);
        if (value == m.values.end() || !std::isfinite(value->second)) {
          out.warnings.push_back(absl::StrCat("arm ", arm, ", job ", std::get<0>(key),
                                              " iteration ", std::get<1>(key), ": no finite ",
                                              primary, "; not written"));
          continue;
        }
        std::sort(m.threads.begin(), m.threads.end());
        // A named copy: clang before 16 cannot capture a structured binding.
        const auto& wanted = factor;
        auto f = std::find_if(factors.begin(), factors.end(),
                              [&](const auto& entry) { return entry.first == wanted; });
        if (f == factors.end()) {
          factors.emplace_back(factor, std::vector<MmMeasurement>{});
          f = factors.end() - 1;
        }
        f->second.push_back(m);
      }
      if (MmAllNumeric(factors)) {
        std::stable_sort(factors.begin(), factors.end(), [](const auto& a, const auto& c) {
          double x = 0, y = 0;
          (void)absl::SimpleAtod(a.first, &x);  // AllNumeric: both parse
          (void)absl::SimpleAtod(c.first, &y);
          return x < y;
        });
      }
      std::set<size_t> counts;
      for (const auto& entry : factors) counts.insert(entry.second.size());
      if (benchmark == "ebizzy" && counts.size() > 1) {
        // ebizzy's parse-results reads every iteration number for every thread count.
        out.warnings.push_back(
            absl::StrCat("arm ", arm, ", iter-", b,
                         ": thread counts with different numbers of iterations; "
                         "mmtests' ebizzy parser reads the missing ones as empty"));
      }
      const std::string iter_dir = absl::StrCat(arm, "/iter-", b);
      MmWriteLogs(benchmark, factors, absl::StrCat(iter_dir, "/", *mmtest, "/logs"), &out.files);
      MmWriteProvenance(run.run, arm, *mmtest, *boot_first[boots[b]], iter_dir, &out.files);
    }
    out.names.push_back(arm);
    out.benchmarks.push_back(*mmtest);
  }
  if (out.names.empty()) {
    return absl::NotFoundError(
        absl::StrCat("RUN: run ", run.run.id(), " has no samples to export"));
  }
  return out;
}

}  // namespace tlbfleet::report
