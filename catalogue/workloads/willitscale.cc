#include "catalogue/workloads/willitscale.h"

#include "absl/strings/str_cat.h"

namespace tlbfleet::catalogue::willitscale {

const std::vector<std::string>& TestNames() {
  static const auto* kTests =
      new std::vector<std::string>{"tlb_flush1", "tlb_flush2", "tlb_flush3"};
  return *kTests;
}

std::string_view TestDescription(std::string_view test) {
  // will-it-scale's own descriptions (its "testcase:" line), so that logs read the same.
  if (test == "tlb_flush1") return "TLB flush of separate file private mapping";
  if (test == "tlb_flush2") return "TLB flush of anonymous memory private mapping";
  if (test == "tlb_flush3") return "TLB flush of separate file shared mapping";
  return "";
}

namespace {

class WillItScale : public WorkloadSchema {
 public:
  std::string_view Name() const override { return kName; }
  std::string_view Description() const override {
    return "will-it-scale's TLB flush tests (tlb_flush1-3, as LKP runs them): each task writes "
           "a page and drops it with MADV_DONTNEED, page after page; operations per second";
  }
  const std::vector<ParamSpec>& Schema() const override { return schema_; }
  const std::vector<MetricSpec>& Metrics() const override { return metrics_; }
  std::string_view PrimaryMetric() const override { return kOpsPerSec.name; }
  const std::vector<ClassicFlag>& ClassicFlags() const override { return flags_; }

  int64_t TimeoutSeconds(const Params& params) const override {
    // The run is timed by the clock, not by the work: warm-up and measured seconds, plus
    // starting and stopping up to 2048 tasks (and their 128 MiB files for tlb_flush1 and 3).
    return 60 + params.Int("warmup") + params.Int("duration") + params.Int("tasks") / 10;
  }

  absl::Status CheckCombination(const Params& params) const override {
    if (params.Bool("smt") && params.Bool("no_affinity")) {
      // will-it-scale refuses -m with -n: SMT placement is a kind of affinity.
      return absl::InvalidArgumentError(
          "smt: places tasks on hardware threads, which no_affinity: true forbids");
    }
    return absl::OkStatus();
  }

 private:
  const std::vector<ParamSpec> schema_ = {
      EnumParam("test", "tlb_flush2", TestNames(),
                "tlb_flush1: private mapping of a 128 MiB file; tlb_flush2: 1 MiB of anonymous "
                "memory; tlb_flush3: shared mapping of a 128 MiB file"),
      EnumParam("mode", "process", {"process", "thread"},
                "tasks as processes (one mm each) or threads of one process (one mm: every "
                "MADV_DONTNEED must flush the other tasks' CPUs too)"),
      IntParam("tasks", "1", 1, kMaxTasks, "parallel copies of the test (will-it-scale's -t)"),
      IntParam("duration", "5", 1, 86400,
               "measured seconds, averaged (will-it-scale's -s; LKP: runtime - 5)"),
      IntParam("warmup", "6", 0, 3600,
               "one-second samples discarded first (will-it-scale discards 6: "
               "WARMUP_ITERATIONS 5, counted from 0)"),
      BoolParam("no_affinity",
                "leave tasks unbound (will-it-scale's -n; by default task i is bound to core "
                "i mod cores, as will-it-scale does with hwloc)"),
      BoolParam("smt", "bind to hardware threads instead of cores (will-it-scale's -m)"),
  };
  const std::vector<MetricSpec> metrics_ = {kOpsPerSec, kOpsPerSecPerTask};
  const std::vector<ClassicFlag> flags_ = {
      {"-t", "tasks", "", "number of threads or processes to run"},
      {"-s", "duration", "", "number of iterations (seconds) to run"},
      {"-m", "smt", "true", "affinitize tasks on SMT threads (default cores)"},
      {"-n", "no_affinity", "true", "no affinity"},
  };
};

}  // namespace

std::unique_ptr<WorkloadSchema> NewSchema() { return std::make_unique<WillItScale>(); }

}  // namespace tlbfleet::catalogue::willitscale
