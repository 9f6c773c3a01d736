#include "catalogue/workloads/hackbench.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tlbfleet::catalogue::hackbench {
namespace {

class Hackbench : public WorkloadSchema {
 public:
  std::string_view Name() const override { return "hackbench"; }
  std::string_view Description() const override {
    return "hackbench: groups of senders and receivers exchanging messages over pipes or Unix "
           "sockets, as threads or processes; measures scheduler and IPC cost";
  }
  const std::vector<ParamSpec>& Schema() const override { return schema_; }
  const std::vector<MetricSpec>& Metrics() const override { return metrics_; }
  std::string_view PrimaryMetric() const override { return kTime.name; }
  const std::vector<ClassicFlag>& ClassicFlags() const override { return flags_; }

  absl::Status CheckCombination(const Params& params) const override {
    // What no Linux host can run; the host's own limits are checked there before starting.
    const int64_t groups = params.Int("groups");
    const int64_t fds = params.Int("fds");
    const int64_t tasks = 2 * groups * fds;
    if (tasks > kMaxTasks) {
      return absl::InvalidArgumentError(absl::StrCat(
          "groups: groups=", groups, " x fds=", fds, " x 2 = ", tasks,
          " tasks, more than any Linux host can have (PID_MAX_LIMIT, ", kMaxTasks, ")"));
    }
    if (params.Str("mode") == "threads" && tasks > kMaxDescriptors) {
      return absl::InvalidArgumentError(
          absl::StrCat("groups: groups=", groups, " x fds=", fds, " x 2 = ", tasks,
                       " descriptors in one process (thread mode), more than the kernel's default "
                       "fs.nr_open (",
                       kMaxDescriptors, "); use mode: process"));
    }
    return absl::OkStatus();
  }

  int64_t TimeoutSeconds(const Params& params) const override {
    // 50 us per message is slow even under TCG; the defaults send 400,000 messages.
    const double messages = static_cast<double>(params.Int("groups")) * params.Int("fds") *
                            params.Int("fds") * params.Int("loops");
    const double bytes = messages * params.Int("datasize");
    return 60 + static_cast<int64_t>(messages * 50e-6 + bytes / 50e6);
  }

  // hackbench's shellpack.yaml: summarise Multiops, DecimalPlaces 4.
  MmtestsSummaryStyle MmtestsSummary() const override { return {"Multiops", 4}; }
  // mmtests 0.15's names (processes), and today's hackbench-{process,thread}-{pipes,sockets}.
  std::vector<std::string> MmtestsNames() const override {
    return {"hackbench-pipes",           "hackbench-sockets",      "hackbench-process-pipes",
            "hackbench-process-sockets", "hackbench-thread-pipes", "hackbench-thread-sockets"};
  }
  void FromMmtests(const std::string& mmtest, MmtestsConfig& c, MmtestsSpec* s) const override {
    s->benchmark = "hackbench";
    s->params.emplace_back("ipc", absl::EndsWith(mmtest, "-pipes") ? "pipe" : "socket");
    if (absl::StartsWith(mmtest, "hackbench-thread-")) s->params.emplace_back("mode", "threads");
    // Today's shellpack runs `perf bench sched messaging`, whose 20 fds per group and 100-byte
    // messages are the workload's defaults.
    if (!c.List("MMTESTS_THREAD_CUTOFF").empty()) {
      c.Warn("MMTESTS_THREAD_CUTOFF",
             "mmtests' cap on the sweep is not applied; set HACKBENCH_MAX_GROUPS instead");
    }
    if (std::optional<int64_t> v = c.Int("HACKBENCH_LOOPS")) {
      s->params.emplace_back("loops", absl::StrCat(*v));
    }
    std::vector<std::string> groups = c.List("HACKBENCH_GROUPS");
    std::optional<std::string> cap = c.Bound("HACKBENCH_MAX_GROUPS");
    if (!groups.empty()) {
      s->sweep = absl::StrCat("{groups: {values: [", absl::StrJoin(groups, ", "), "]",
                              cap.has_value() ? absl::StrCat(", max: ", *cap) : "", "}}");
    } else {
      s->sweep = PolicySweep("groups", "topology", c.Bound("HACKBENCH_MIN_GROUPS"),
                             cap.value_or("4*ncpus"));
    }
    s->iterations = c.Int("HACKBENCH_ITERATIONS");
  }

 private:
  const std::vector<ParamSpec> schema_ = {
      IntParam("groups", "10", 1, 4096, "groups of senders and receivers"),
      IntParam("fds", "20", 1, 1024, "senders (and receivers) per group"),
      IntParam("loops", "100", 1, 1'000'000'000, "messages each sender sends to each receiver"),
      IntParam("datasize", "100", 1, 1 << 20, "bytes per message"),
      EnumParam("ipc", "socket", {"socket", "pipe"}, "Unix stream socket pairs or pipes"),
      EnumParam("mode", "processes", {"processes", "threads"}, "tasks as processes or threads"),
  };
  const std::vector<MetricSpec> metrics_ = {kTime};
  // rt-tests hackbench's options (-F/--fifo and --inherit-sched are not supported).
  const std::vector<ClassicFlag> flags_ = {
      {"-g,--groups", "groups", "", "number of groups of senders and receivers"},
      {"-f,--fds", "fds", "", "number of file descriptors (senders) per group"},
      {"-l,--loops", "loops", "", "how many messages each sender sends"},
      {"-s,--datasize", "datasize", "", "message size in bytes"},
      {"-p,--pipe", "ipc", "pipe", "use pipes instead of sockets"},
      {"-T,--threads", "mode", "threads", "use threads"},
      {"-P,--processes", "mode", "processes", "use processes (the default)"},
  };
};

}  // namespace

std::unique_ptr<WorkloadSchema> NewSchema() { return std::make_unique<Hackbench>(); }

}  // namespace tlbfleet::catalogue::hackbench
