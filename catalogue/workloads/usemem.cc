#include "catalogue/workloads/usemem.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
