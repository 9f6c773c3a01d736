#include "agent/workloads/tlbflush.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/workloads/workload_util.h"
#include "catalogue/workloads/tlbflush.h"
#include "common/files.h"

namespace tlbfleet::workloads {
namespace tlbflush {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

size_t PageSize() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

// An anonymous private mapping, unmapped on destruction.
class Mapping {
 public:
  ~Mapping() {
    if (base_ != nullptr) ::munmap(base_, size_);
  }
  absl::Status Map(size_t size, const char* what) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return ErrnoStatus(errno, absl::StrCat("tlbflush: mapping ", size >> 20, " MiB for ", what));
    }
    base_ = static_cast<char*>(p);
    size_ = size;
    return absl::OkStatus();
  }
  char* base() const { return base_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
};

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Writes one byte per page, so that every page is really there before timing starts.
void FaultIn(char* base, size_t size, size_t step) {
  for (size_t offset = 0; offset < size; offset += step) base[offset] = 1;
}

// One reader: `accesses` random one-byte accesses per loop until `stop`; loops are counted
// only while `measuring` is set. The offsets are drawn up front, as in the original, so that
// the loop body is memory accesses only.
void Reader(char* region, const std::vector<uint64_t>& offsets, bool write, StartGate& gate,
            std::atomic<int>& running, const std::atomic<bool>& measuring,
            const std::atomic<bool>& stop, uint64_t& loops_out) {
  gate.Arrive();
  running.fetch_add(1);
  running.notify_all();
  uint64_t loops = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    if (write) {
      for (uint64_t offset : offsets) *static_cast<volatile char*>(region + offset) = 1;
    } else {
      for (uint64_t offset : offsets) {
        [[maybe_unused]] char x = *static_cast<const volatile char*>(region + offset);
      }
    }
    if (measuring.load(std::memory_order_relaxed)) ++loops;
  }
  loops_out = loops;
}

absl::Status Flush(FlushMode mode, char* piece, size_t size) {
  int rc = 0;
  switch (mode) {
    case FlushMode::kMunmap:
      rc = ::munmap(piece, size);
      break;
    case FlushMode::kMprotect:
      rc = ::mprotect(piece, size, PROT_READ);
      break;
    case FlushMode::kMadvise:
      rc = ::madvise(piece, size, MADV_DONTNEED);
      break;
  }
  return rc == 0 ? absl::OkStatus() : ErrnoStatus(errno, "tlbflush: flushing a piece");
}

}  // namespace

FlushSizeSampler::FlushSizeSampler(const FlushSizes& sizes, uint64_t seed)
    : sizes_(sizes), state_(seed) {
  double total = 0;
  for (const FlushSize& f : sizes_) cumulative_.push_back(total += f.weight);
}

int64_t FlushSizeSampler::Next() {
  // 53 random bits -> [0, total).
  const double u = static_cast<double>(SplitMix64(state_) >> 11) * 0x1.0p-53 * cumulative_.back();
  size_t i = static_cast<size_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), u) -
                                 cumulative_.begin());
  const FlushSize& f = sizes_[std::min(i, sizes_.size() - 1)];
  const uint64_t span = static_cast<uint64_t>(f.hi - f.lo) + 1;
  return f.lo + static_cast<int64_t>(SplitMix64(state_) % span);
}

Options OptionsFromParams(const Params& params) {
  Options o;
  o.threads = static_cast<int>(params.Int("threads"));
  o.entries = static_cast<size_t>(params.Int("entries"));
  o.accesses = static_cast<size_t>(params.Int("accesses"));
  o.write = params.Bool("write");
  o.huge_pages = params.Bool("huge_pages");
  const std::string& flush = params.Str("flush");
  o.flush = flush == "mprotect"  ? FlushMode::kMprotect
            : flush == "madvise" ? FlushMode::kMadvise
                                 : FlushMode::kMunmap;
  o.region_mb = static_cast<size_t>(params.Int("region_mb"));
  // Validated by the schema's canonicalizer: it parses.
  o.sizes = ParseFlushSizes(params.Str("flush_sizes")).value_or(FlushSizes{});
  return o;
}

absl::StatusOr<Result> RunOnce(const Options& options) {
  const size_t page = PageSize();
  const size_t region = options.region_mb << 20;
  const size_t piece = options.entries * page;
  const size_t pieces = std::max<size_t>(1, region / piece);
  // With drawn sizes the flushed region is the readers' size, cut as the draws fall.
  const size_t flushed = options.sizes.empty() ? pieces * piece : region;
  const uint64_t offsets_bytes = uint64_t{8} * options.accesses * options.threads;
  if (absl::Status s = CheckMemory(region + flushed + offsets_bytes, "tlbflush"); !s.ok()) {
    return s;
  }

  // The readers' region, 2 MiB aligned so that huge pages can back all of it.
  Mapping readers_mapping;
  if (absl::Status s = readers_mapping.Map(region + kHugePage, "the readers' region"); !s.ok()) {
    return s;
  }
  const size_t misalignment = reinterpret_cast<uintptr_t>(readers_mapping.base()) % kHugePage;
  char* readers_region =
      readers_mapping.base() + (misalignment == 0 ? 0 : kHugePage - misalignment);
  // Best effort: without THP support the region simply stays in small pages.
  ::madvise(readers_region, region, options.huge_pages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  FaultIn(readers_region, region, page);

  // The flushed region: huge pages would turn an n-page flush into a huge-page split.
  Mapping flushed_mapping;
  if (absl::Status s = flushed_mapping.Map(flushed, "the flushed pieces"); !s.ok()) return s;
  ::madvise(flushed_mapping.base(), flushed, MADV_NOHUGEPAGE);
  FaultIn(flushed_mapping.base(), flushed, page);

  const int n = options.threads;
  std::vector<std::vector<uint64_t>> offsets(n);
  std::random_device device;
  uint64_t seed = (static_cast<uint64_t>(device()) << 32) ^ device();
  // Drawn before timing starts, like the readers' offsets: the timed loop only flushes.
  std::vector<size_t> drawn;  // pages per flush
  if (!options.sizes.empty()) {
    FlushSizeSampler sampler(options.sizes, SplitMix64(seed));
    for (size_t used = 0;;) {
      const size_t pages = static_cast<size_t>(sampler.Next());
      if ((used + pages) * page > flushed) break;
      drawn.push_back(pages);
      used += pages;
    }
    if (drawn.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "flush_sizes: the first size drawn does not fit in region_mb=", options.region_mb));
    }
  }
  for (std::vector<uint64_t>& o : offsets) {
    o.resize(options.accesses);
    for (uint64_t& offset : o) offset = SplitMix64(seed) % region;
  }

  StartGate gate(n);
  std::atomic<int> running{0};
  std::atomic<bool> measuring{false};
  std::atomic<bool> stop{false};
  std::vector<uint64_t> loops(n, 0);
  std::vector<std::thread> readers;
  readers.reserve(n);
  auto stop_all = [&] {
    stop.store(true);
    gate.Open();
    for (std::thread& t : readers) t.join();
  };
  for (int i = 0; i < n; ++i) {
    try {
      readers.emplace_back(Reader, readers_region, std::cref(offsets[i]), options.write,
                           std::ref(gate), std::ref(running), std::cref(measuring), std::cref(stop),
                           std::ref(loops[i]));
    } catch (const std::system_error& e) {
      stop_all();
      return absl::ResourceExhaustedError(
          absl::StrCat("tlbflush: cannot start reader ", i, " of ", n, ": ", e.what()));
    }
  }
  // The original released its readers with a plain flag after sleep(1) and could start
  // flushing before they ran, or hang. Here: all readers exist, then all are running.
  gate.WaitAllArrived();
  gate.Open();
  for (int r = running.load(); r < n; r = running.load()) running.wait(r);

  Result result;
  result.threads = n;
  measuring.store(true);
  const auto start = std::chrono::steady_clock::now();
  absl::Status status;
  if (drawn.empty()) {
    for (size_t i = 0; i < pieces && status.ok(); ++i) {
      status = Flush(options.flush, flushed_mapping.base() + i * piece, piece);
      if (status.ok()) {
        ++result.flushes;
        result.pages += options.entries;
      }
    }
  } else {
    char* at = flushed_mapping.base();
    for (size_t i = 0; i < drawn.size() && status.ok(); ++i) {
      status = Flush(options.flush, at, drawn[i] * page);
      at += drawn[i] * page;
      if (status.ok()) {
        ++result.flushes;
        result.pages += drawn[i];
      }
    }
  }
  result.flush_seconds = SecondsSince(start);
  stop_all();
  if (!status.ok()) return status;
  for (uint64_t l : loops) result.accesses += l * options.accesses;
  return result;
}

double CostNsPerAccess(const Result& r) {
  return r.accesses == 0 ? 0 : r.flush_seconds * 1e9 * r.threads / static_cast<double>(r.accesses);
}

double AccessesPerThreadPerMs(const Result& r) {
  return r.flush_seconds <= 0
             ? 0
             : static_cast<double>(r.accesses) / r.threads / (r.flush_seconds * 1e3);
}

double NsPerFlush(const Result& r) {
  return r.flushes == 0 ? 0 : r.flush_seconds * 1e9 / static_cast<double>(r.flushes);
}

}  // namespace tlbflush

// --- The registered workload -------------------------------------------------------------

namespace {

using catalogue::tlbflush::kAccessRate;
using catalogue::tlbflush::kCost;
using catalogue::tlbflush::kFlushMs;
using catalogue::tlbflush::kFlushNs;

class Tlbflush : public Workload {
 public:
  Tlbflush() : Workload("tlbflush") {}

  absl::StatusOr<std::vector<Measurement>> Run(const Params& params) const override {
    absl::StatusOr<tlbflush::Result> r = tlbflush::RunOnce(tlbflush::OptionsFromParams(params));
    if (!r.ok()) return r.status();
    return std::vector<Measurement>{
        Measure(kCost, tlbflush::CostNsPerAccess(*r)),
        Measure(kAccessRate, tlbflush::AccessesPerThreadPerMs(*r)),
        Measure(kFlushNs, tlbflush::NsPerFlush(*r)),
        Measure(kFlushMs, r->flush_seconds * 1e3),
    };
  }

  std::string ClassicOutput(const Params& params,
                            const std::vector<Measurement>& result) const override {
    // munmap.c prints integer divisions of nanosecond counts; so do we.
    auto whole = [&](const MetricSpec& m) {
      return static_cast<uint64_t>(FindValue(result, m.name));
    };
    return absl::StrCat("munmap use ", whole(kFlushMs), "ms ", whole(kFlushNs),
                        "ns/time, memory access uses ", whole(kAccessRate),
                        " times/thread/ms, cost ", whole(kCost), "ns/time\n");
  }
};

}  // namespace

REGISTER_WORKLOAD(Tlbflush);

}  // namespace tlbfleet::workloads
