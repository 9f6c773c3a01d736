#include "catalogue/workloads/pft.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tlbfleet::catalogue::pft {
namespace {

class Pft : public WorkloadSchema {
 public:
  std::string_view Name() const override { return "pft"; }
  std::string_view Description() const override {
    return "page-fault throughput: threads fault in 4 KiB pages of private anonymous memory "
           "(THP off) and free it";
  }
  const std::vector<ParamSpec>& Schema() const override { return schema_; }
  const std::vector<MetricSpec>& Metrics() const override { return metrics_; }
  std::string_view PrimaryMetric() const override { return kFaultsPerSec.name; }

  int64_t TimeoutSeconds(const Params& params) const override {
    // About 0.5 us per fault natively, 20 us under TCG: 256 faults per MiB.
    return 60 + params.Int("size_mb") / 100;
  }

  std::vector<std::string> MmtestsNames() const override { return {"pft"}; }
  void FromMmtests(const std::string& mmtest, MmtestsConfig& c, MmtestsSpec* s) const override {
    s->benchmark = "pft";
    if (std::optional<int64_t> v = c.Int("PFT_MAPPING_SIZE")) {
      s->params.emplace_back("size_mb", absl::StrCat(*v / (1 << 20)));
    }
    std::optional<std::string> max = c.Bound("PFT_MAX_CLIENTS");
    s->sweep =
        PolicySweep("threads", "topology", c.Bound("PFT_MIN_CLIENTS"), max.value_or("ncpus"));
    s->iterations = c.Int("PFT_ITERATIONS");
  }

 private:
  const std::vector<ParamSpec> schema_ = {
      IntParam("threads", "1", 1, 4096, "faulting threads"),
      IntParam("size_mb", "128", 1, 1 << 20, "MiB faulted in per iteration, split between threads"),
  };
  const std::vector<MetricSpec> metrics_ = {kFaultsPerSec, kFaultsPerCpu, kWall, kSystem, kUser};
};

}  // namespace

std::unique_ptr<WorkloadSchema> NewSchema() { return std::make_unique<Pft>(); }

}  // namespace tlbfleet::catalogue::pft
