#include "catalogue/workloads/tlbflush.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/files.h"

namespace tlbfleet::catalogue::tlbflush {

absl::StatusOr<FlushSizes> ParseFlushSizes(std::string_view text) {
  FlushSizes sizes;
  if (Trim(text).empty()) return sizes;
  const std::string want =
      "want size:weight,... (a page count or a range like 65-128, and a positive weight)";
  for (absl::string_view entry :
       absl::StrSplit(absl::string_view(text.data(), text.size()), ',', absl::SkipWhitespace())) {
    const std::string e = Trim(std::string_view(entry.data(), entry.size()));
    const size_t colon = e.find(':');
    if (colon == std::string::npos)
      return absl::InvalidArgumentError(absl::StrCat("'", e, "': ", want));
    const std::string size = Trim(std::string_view(e).substr(0, colon));
    const std::string weight = Trim(std::string_view(e).substr(colon + 1));
    if (size == "-1" || size == "GLOBAL" || size == "global") {
      return absl::InvalidArgumentError(
          absl::StrCat("'", e,
                       "': a full flush is the ceiling's decision, not a size a program asks for; "
                       "record the distribution under a ceiling above every size (e.g. ceiling: "
                       "2147483647), or give the sizes those flushes had"));
    }
    FlushSize f;
    const size_t dash = size.find('-');
    const bool ok_size = dash == std::string::npos
                             ? absl::SimpleAtoi(size, &f.lo) && (f.hi = f.lo, true)
                             : absl::SimpleAtoi(size.substr(0, dash), &f.lo) &&
                                   absl::SimpleAtoi(size.substr(dash + 1), &f.hi);
    if (!ok_size || f.lo < 1 || f.hi < f.lo || f.hi > kMaxFlushSizePages) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", e, "': the size must be a page count in [1, ", kMaxFlushSizePages,
                       "] or a range lo-hi within it"));
    }
    if (!absl::SimpleAtod(weight, &f.weight) || !(f.weight > 0) || !std::isfinite(f.weight)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", e, "': the weight must be a positive number"));
    }
    sizes.push_back(f);
    if (sizes.size() > kMaxFlushSizeEntries) {
      return absl::InvalidArgumentError(
          absl::StrCat("more than ", kMaxFlushSizeEntries, " entries"));
    }
  }
  std::sort(sizes.begin(), sizes.end(), [](const FlushSize& a, const FlushSize& b) {
    return std::tie(a.lo, a.hi) < std::tie(b.lo, b.hi);
  });
  for (size_t i = 1; i < sizes.size(); ++i) {
    if (sizes[i].lo <= sizes[i - 1].hi) {
      return absl::InvalidArgumentError(absl::StrCat("sizes ", FormatFlushSizes({sizes[i - 1]}),
                                                     " and ", FormatFlushSizes({sizes[i]}),
                                                     " overlap"));
    }
  }
  return sizes;
}

std::string FormatFlushSizes(const FlushSizes& sizes) {
  std::vector<std::string> parts;
  for (const FlushSize& f : sizes) {
    parts.push_back(absl::StrCat(f.lo == f.hi ? absl::StrCat(f.lo) : absl::StrCat(f.lo, "-", f.hi),
                                 ":", absl::StrFormat("%g", f.weight)));
  }
  return absl::StrJoin(parts, ",");
}

namespace {

class Tlbflush : public WorkloadSchema {
 public:
  std::string_view Name() const override { return "tlbflush"; }
  std::string_view Description() const override {
    return "Alex Shi's TLB range-flush benchmark: reader threads make random accesses to a "
           "shared region while the main thread munmaps (or mprotects, or madvises) n-page "
           "pieces of another, flushing the readers' TLBs";
  }
  const std::vector<ParamSpec>& Schema() const override { return schema_; }
  const std::vector<MetricSpec>& Metrics() const override { return metrics_; }
  std::string_view PrimaryMetric() const override { return kCost.name; }
  const std::vector<ClassicFlag>& ClassicFlags() const override { return flags_; }

  absl::Status CheckCombination(const Params& params) const override {
    absl::StatusOr<FlushSizes> sizes = ParseFlushSizes(params.Str("flush_sizes"));
    if (!sizes.ok() || sizes->empty()) return absl::OkStatus();
    const int64_t largest = sizes->back().hi;
    const int64_t region_pages = params.Int("region_mb") * (int64_t{1} << 20) / 4096;
    if (largest > region_pages) {
      return absl::InvalidArgumentError(absl::StrCat(
          "flush_sizes: the largest size, ", largest, " pages, does not fit in region_mb=",
          params.Int("region_mb"), " (", region_pages, " pages); raise region_mb"));
    }
    return absl::OkStatus();
  }

  int64_t TimeoutSeconds(const Params& params) const override {
    // Faulting in 2 x region_mb and one flush per piece: well under a second per 128 MiB on
    // real hardware, tens of seconds under TCG.
    return 60 + params.Int("region_mb");
  }

  std::vector<std::string> MmtestsNames() const override { return {"tlbflush"}; }
  void FromMmtests(const std::string& mmtest, MmtestsConfig& c, MmtestsSpec* s) const override {
    s->benchmark = "tlbflush";
    // mmtests draws each iteration's entries below the maximum; the mmtests policy does too.
    if (std::optional<int64_t> v = c.Int("TLBFLUSH_MAX_ENTRIES")) {
      s->params.emplace_back("entries", absl::StrCat("{policy: mmtests, max: ", *v, "}"));
    }
    std::optional<std::string> max = c.Bound("TLBFLUSH_MAX_THREADS");
    s->sweep =
        PolicySweep("threads", "fib", c.Bound("TLBFLUSH_MIN_THREADS"), max.value_or("2*ncpus"));
    s->iterations = c.Int("TLBFLUSH_ITERATIONS");
  }

 private:
  const std::vector<ParamSpec> schema_ = {
      IntParam("threads", "1", 1, 4096, "reader threads"),
      IntParam("entries", "8", 1, 1 << 20, "pages per flush (per munmap/mprotect/madvise)"),
      IntParam("accesses", "512", 1, 65536, "random one-byte accesses per reader loop"),
      BoolParam("write", "readers write instead of read"),
      BoolParam("huge_pages", "back the readers' region with transparent huge pages"),
      EnumParam("flush", "munmap", {"munmap", "mprotect", "madvise"},
                "how the main thread flushes each piece: munmap, mprotect(PROT_READ) or "
                "madvise(MADV_DONTNEED)"),
      IntParam("region_mb", "128", 1, 1 << 20,
               "MiB of the readers' region, and of the region cut into flushed pieces"),
      StringParam(
          "flush_sizes", "",
          [](std::string_view v) -> absl::StatusOr<std::string> {
            absl::StatusOr<FlushSizes> sizes = ParseFlushSizes(v);
            if (!sizes.ok()) return sizes.status();
            return FormatFlushSizes(*sizes);
          },
          "a recorded distribution of flush sizes to replay instead of `entries`: "
          "\"size:weight,...\" (sizes in pages or ranges lo-hi), e.g. from `tlbfleet profile "
          "RUN --flush-sizes`"),
  };
  const std::vector<MetricSpec> metrics_ = {kCost, kAccessRate, kFlushNs, kFlushMs};
  // munmap.c's getopt string "n:l:p:w:ht:"; -h is tlbfleet-bench's help, -l was unused.
  const std::vector<ClassicFlag> flags_ = {
      {"-n", "entries", "", "flush entries number (pages per munmap)"},
      {"-p", "accesses", "", "accessed pages per loop"},
      {"-w", "write", "", "1 = write, 0 = read"},
      {"-t", "threads", "", "thread number"},
  };
};

}  // namespace

std::unique_ptr<WorkloadSchema> NewSchema() { return std::make_unique<Tlbflush>(); }

}  // namespace tlbfleet::catalogue::tlbflush
