#include "catalogue/workloads/pipetest.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tlbfleet::catalogue::pipetest {
namespace {

class Pipetest : public WorkloadSchema {
 public:
  std::string_view Name() const override { return "pipetest"; }
  std::string_view Description() const override {
    return "two processes ping-pong one byte over a pair of pipes, like perf bench sched pipe";
  }
  const std::vector<ParamSpec>& Schema() const override { return schema_; }
  const std::vector<MetricSpec>& Metrics() const override { return metrics_; }
  std::string_view PrimaryMetric() const override { return kUsecsPerOp.name; }
  const std::vector<ClassicFlag>& ClassicFlags() const override { return flags_; }

  int64_t TimeoutSeconds(const Params& params) const override {
    // A round trip is 4 system calls and 2 context switches: ~10 us here, ~100 us under TCG
    // with page-table isolation.
    return 60 + params.Int("loops") / 10'000;
  }

  // "pipetest" of mmtests 0.15, and today's "perfpipe" (`perf bench sched pipe -l LOOPS`, the
  // same ping-pong, summarised in usecs/op as our primary metric).
  std::vector<std::string> MmtestsNames() const override { return {"pipetest", "perfpipe"}; }
  // perfpipe's shellpack.yaml: summarise Normalisedops, DecimalPlaces 4.
  MmtestsSummaryStyle MmtestsSummary() const override { return {"Normalisedops", 4}; }
  void FromMmtests(const std::string& mmtest, MmtestsConfig& c, MmtestsSpec* s) const override {
    s->benchmark = "pipetest";
    const std::string prefix = mmtest == "perfpipe" ? "PERFPIPE" : "PIPETEST";
    if (std::optional<int64_t> v = c.Int(prefix + "_LOOPS")) {
      s->params.emplace_back("loops", absl::StrCat(*v));
    }
    s->iterations = c.Int(prefix + "_ITERATIONS");
    if (mmtest == "perfpipe") {
      c.Warn("PERFPIPE_BINDING",
             "pipetest does not pin its two processes (mmtests binds them across SMT siblings "
             "or sockets); they run where the scheduler puts them");
    }
  }

 private:
  const std::vector<ParamSpec> schema_ = {
      IntParam("loops", "1000000", 1, 1'000'000'000, "round trips"),
  };
  const std::vector<MetricSpec> metrics_ = {kUsecsPerOp, kOpsPerSec};
  const std::vector<ClassicFlag> flags_ = {
      {"-l,--loop", "loops", "", "specify number of loops"},
  };
};

}  // namespace

std::unique_ptr<WorkloadSchema> NewSchema() { return std::make_unique<Pipetest>(); }

}  // namespace tlbfleet::catalogue::pipetest
