#include "catalogue/workloads/ebizzy.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tlbfleet::catalogue::ebizzy {
namespace {

// The x86-64 user address space with 4-level page tables.
constexpr __int128 kMaxUserBytes = __int128{1} << 47;

class Ebizzy : public WorkloadSchema {
 public:
  std::string_view Name() const override { return "ebizzy"; }
  std::string_view Description() const override {
    return "ebizzy 0.3: threads copy random memory chunks into fresh buffers and search them, "
           "like a web or database server; with mmap=always every copy ends in munmap, i.e. a "
           "TLB flush";
  }
  const std::vector<ParamSpec>& Schema() const override { return schema_; }
  const std::vector<MetricSpec>& Metrics() const override { return metrics_; }
  std::string_view PrimaryMetric() const override { return kRecordsPerSec; }
  const std::vector<ClassicFlag>& ClassicFlags() const override { return flags_; }

  absl::Status CheckCombination(const Params& params) const override {
    // What no x86-64 host can map; whether the host's RAM holds it is checked there.
    const int64_t chunks = params.Int("chunks");
    const int64_t size = params.Int("chunk_size");
    const __int128 bytes = static_cast<__int128>(chunks + params.Int("threads")) * size;
    if (bytes > kMaxUserBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunks: (chunks=", chunks, " + threads=", params.Int("threads"),
                       ") x chunk_size=", size, " = ", static_cast<int64_t>(bytes >> 40),
                       " TiB, more than the 128 TiB a process can map on x86-64"));
    }
    return absl::OkStatus();
  }

  int64_t TimeoutSeconds(const Params& params) const override {
    // Setup (writing every chunk) and joining the threads are short next to the run itself.
    return params.Int("seconds") * 2 + 30;
  }

  std::vector<std::string> MmtestsNames() const override { return {"ebizzy"}; }
  void FromMmtests(const std::string& mmtest, MmtestsConfig& c, MmtestsSpec* s) const override {
    s->benchmark = "ebizzy";
    // mmtests runs `ebizzy -S $DURATION -t $THREADS` without -m or -M: copy buffers come from
    // glibc's malloc, as in the published numbers; tlbfleet's own default is mmap=always.
    s->params.emplace_back("mmap", "auto");
    if (std::optional<int64_t> v = c.Int("EBIZZY_DURATION")) {
      s->params.emplace_back("seconds", absl::StrCat(*v));
    }
    s->sweep = PolicySweep("threads", "topology", c.Bound("EBIZZY_MIN_THREADS"),
                           c.Bound("EBIZZY_MAX_THREADS"));
    s->iterations = c.Int("EBIZZY_ITERATIONS");
  }

 private:
  const std::vector<ParamSpec> schema_ = {
      IntParam("threads", "1", 1, 4096, "worker threads"),
      IntParam("seconds", "10", 1, 86400, "how long the threads run"),
      IntParam("chunks", "10", 1, 1 << 20, "number of shared memory chunks"),
      IntParam("chunk_size", "524288", 8, int64_t{1} << 30,
               "bytes per chunk, and per copy (524288 = 128 pages per munmap)"),
      EnumParam("mmap", "always", {"always", "never", "auto"},
                "copy buffers: always = mmap/munmap each copy, never = malloc without mmap, auto = "
                "malloc as glibc sees fit (classic ebizzy's default)"),
      BoolParam("random_size", "copy and search a random-size prefix of the chunk"),
      BoolParam("linear_search", "linear instead of binary search"),
      BoolParam("touch_pages",
                "only write one byte per page of the fresh buffer: no copy, no search"),
      BoolParam("own_memcpy", "copy byte by byte instead of with the library memcpy"),
      EnumParam("prevent_coalescing", "none", {"none", "permissions", "holes"},
                "keep the chunks in separate VMAs: permissions = alternate chunks read-only, holes "
                "= an unmapped page between chunks"),
  };
  const std::vector<MetricSpec> metrics_ = {
      {kRecordsPerSec, "records/s", Better::kHigher,
       "records searched per second; series threadN for each thread"},
  };
  // ebizzy 0.3's getopt string "lmMn:pPRs:S:t:vzT".
  const std::vector<ClassicFlag> flags_ = {
      {"-t", "threads", "", "number of threads"},
      {"-S", "seconds", "", "number of seconds to run"},
      {"-n", "chunks", "", "number of memory chunks to allocate"},
      {"-s", "chunk_size", "", "size of memory chunks, in bytes"},
      {"-m", "mmap", "always", "always use mmap instead of malloc"},
      {"-M", "mmap", "never", "never use mmap"},
      {"-p", "prevent_coalescing", "permissions", "prevent mmap coalescing using permissions"},
      {"-P", "prevent_coalescing", "holes", "prevent mmap coalescing using holes"},
      {"-R", "random_size", "true", "randomize size of memory to copy and search"},
      {"-l", "own_memcpy", "true", "don't use library memcpy"},
      {"-z", "linear_search", "true", "linear search instead of binary search"},
      {"-T", "touch_pages", "true", "just touch the allocated pages"},
      {"-v", "", "", "be verbose (accepted and ignored)"},
  };
};

}  // namespace

std::unique_ptr<WorkloadSchema> NewSchema() { return std::make_unique<Ebizzy>(); }

}  // namespace tlbfleet::catalogue::ebizzy
