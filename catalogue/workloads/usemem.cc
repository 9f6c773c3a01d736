#include "catalogue/workloads/usemem.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace tlbfleet::catalogue::usemem {

absl::StatusOr<double> ParseRamFactor(std::string_view text) {
  const std::string t(absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())));
  if (t.empty()) return 0.0;
  double factor = 0;
  absl::string_view number(t);
  if (!absl::ConsumeSuffix(&number, "x_ram") || !absl::SimpleAtod(number, &factor) ||
      !(factor > 0) || factor > kMaxRamFactor) {
    return absl::InvalidArgumentError(
        absl::StrCat("want \"\" (use size_mb) or a multiple of the host's RAM like \"2x_ram\" or "
                     "\"0.5x_ram\" (above 0, at most ",
                     kMaxRamFactor, "), not '", t, "'"));
  }
  return factor;
}

namespace {

// mmtests' "large stride" (bin/generate-stride-range --stride-large) for bounds known at
// import, when the maximum is at most 32 (above, the walk depends on the host's CPU count).
std::vector<int64_t> UsememLargeStride(int64_t min, int64_t max) {
  std::vector<int64_t> values = {min, max};
  auto seq = [&](int64_t from, int64_t step, int64_t to) {
    for (int64_t v = from; v <= to; v += step) values.push_back(v);
  };
  if (max > 8) {
    seq(min, 2, 8);
    seq(12, 6, max);
  } else {
    seq(min, 2, max);
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  values.erase(
      std::remove_if(values.begin(), values.end(), [&](int64_t v) { return v < min || v > max; }),
      values.end());
  return values;
}

class Usemem : public WorkloadSchema {
 public:
  std::string_view Name() const override { return "usemem"; }
  std::string_view Description() const override {
    return "usemem: processes map sparse files and read them, filling the page cache and "
           "forcing reclaim";
  }
  const std::vector<ParamSpec>& Schema() const override { return schema_; }
  const std::vector<MetricSpec>& Metrics() const override { return metrics_; }
  std::string_view PrimaryMetric() const override { return kMbPerSec.name; }
  const std::vector<ClassicFlag>& ClassicFlags() const override { return flags_; }

  absl::Status CheckCombination(const Params& params) const override {
    // Every process needs a page of its own; RAM and swap are checked on the host.
    const double factor = ParseRamFactor(params.Str("size")).value_or(0);
    const int64_t processes = params.Int("processes");
    if (factor == 0 && params.Int("size_mb") * 256 < processes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "size_mb: ", params.Int("size_mb"), " MiB split over processes=", processes,
          " is less than one 4 KiB page per process (at least ", (processes + 255) / 256, " MiB)"));
    }
    return absl::OkStatus();
  }

  int64_t TimeoutSeconds(const Params& params) const override {
    // Reading page cache runs at GB/s natively; 50 MB/s is a slow emulated host. A size in
    // RAM multiples is timed for a 64 GiB host: set job_timeout_seconds for larger ones.
    const double factor = ParseRamFactor(params.Str("size")).value_or(0);
    const int64_t mb = factor > 0 ? static_cast<int64_t>(factor * 65536) : params.Int("size_mb");
    return 60 + mb / 50;
  }

  std::vector<std::string> MmtestsNames() const override { return {"usemem"}; }
  void FromMmtests(const std::string& mmtest, MmtestsConfig& c, MmtestsSpec* s) const override {
    s->benchmark = "usemem";
    // mmtests' usemem (vm-scalability's) splits USEMEM_WORKLOAD_SIZE into anonymous memory and
    // a read-only file mapping; ours maps and reads files only, so the whole size becomes
    // page cache, and what the config stresses through swap is stressed through reclaim.
    if (std::optional<double> f = c.RamFactor("USEMEM_WORKLOAD_SIZE")) {
      s->params.emplace_back("size", absl::StrFormat("\"%gx_ram\"", *f));
    } else if (std::optional<int64_t> bytes = c.Int("USEMEM_WORKLOAD_SIZE")) {
      s->params.emplace_back("size_mb", absl::StrCat(std::max<int64_t>(1, *bytes >> 20)));
    }
    if (std::optional<int64_t> anon = c.Int("USEMEM_PERCENTAGE_ANON"); anon && *anon != 0) {
      c.Warn("USEMEM_PERCENTAGE_ANON",
             absl::StrCat(*anon,
                          "% anonymous in mmtests; tlbfleet's usemem maps files only, so the "
                          "whole size is read as page cache"));
    }
    if (std::optional<int64_t> loops = c.Int("USEMEM_LOOPS"); loops && *loops != 1) {
      c.Warn("USEMEM_LOOPS", absl::StrCat("usemem -r ", *loops,
                                          " repeats the pass; tlbfleet's usemem reads once "
                                          "per iteration (use more iterations)"));
    }
    c.Warn("USEMEM_FAKE_SWAP_MB", "a scsi_debug swap device is machine set-up; not made");
    // mmtests' threads become processes: ours are processes, one file each.
    std::optional<std::string> min = c.Bound("USEMEM_MIN_THREADS");
    std::optional<std::string> max = c.Bound("USEMEM_MAX_THREADS");
    int64_t lo = 0;
    int64_t hi = 0;
    if (max.has_value() && absl::SimpleAtoi(min.value_or("1"), &lo) &&
        absl::SimpleAtoi(*max, &hi) && lo >= 1 && lo <= hi && hi <= 32) {
      s->sweep =
          absl::StrCat("{processes: [", absl::StrJoin(UsememLargeStride(lo, hi), ", "), "]}");
    } else {
      // Above 32, or bounds of ncpus: mmtests' large stride needs the host, topology is closest.
      s->sweep = PolicySweep("processes", "topology", min, max.value_or("ncpus"));
    }
    s->iterations = c.Int("USEMEM_ITERATIONS");
  }

 private:
  const std::vector<ParamSpec> schema_ = {
      IntParam("processes", "1", 1, 4096, "reading processes, one sparse file each"),
      IntParam("size_mb", "256", 1, 1 << 20, "MiB of sparse files in total, split evenly"),
      StringParam(
          "size", "",
          [](std::string_view v) -> absl::StatusOr<std::string> {
            absl::StatusOr<double> f = ParseRamFactor(v);
            if (!f.ok()) return f.status();
            return *f == 0 ? std::string() : absl::StrFormat("%gx_ram", *f);
          },
          "the total as a multiple of the host's RAM (\"2x_ram\"), split evenly; replaces "
          "size_mb"),
  };
  const std::vector<MetricSpec> metrics_ = {kMbPerSec, kElapsed};
  const std::vector<ClassicFlag> flags_ = {
      {"-n", "processes", "", "number of processes"},
  };
};

}  // namespace

std::unique_ptr<WorkloadSchema> NewSchema() { return std::make_unique<Usemem>(); }

}  // namespace tlbfleet::catalogue::usemem
