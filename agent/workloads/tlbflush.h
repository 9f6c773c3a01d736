#pragma once
// tlbflush: Alex Shi's 2012 TLB range-flush benchmark (munmap.c, run by mmtests as
// "tlbflush"), written natively. Reader threads make random one-byte accesses to a shared,
// faulted-in region while the main thread flushes n-page pieces of a second region one after
// another (munmap, mprotect or madvise), so every flush must reach the readers' CPUs.
// The cost per access shows what the flushes do to the readers: with a range flush they
// keep most of their TLB entries, with a full flush they lose them all.
// See docs/workloads/tlbflush.md.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/workloads/workload.h"

namespace tlbfleet::workloads::tlbflush {

enum class FlushMode { kMunmap, kMprotect, kMadvise };

// A recorded distribution of flush sizes to replay instead of one fixed `entries` (seed mail
// 000: "a trace-driven benchmark"). Written "size:weight,size:weight,..." where a size is a
// page count or an inclusive range "65-128" (drawn uniformly within it) and a weight any
// positive number (percentages, counts): e.g. Dave Hansen's 2014 table as "1:56.92,2:13.78,
// 3:8.26,...". `tlbfleet profile RUN --flush-sizes` writes one from a stored flush profile.
struct FlushSize {
  int64_t lo = 1;  // pages, inclusive
  int64_t hi = 1;
  double weight = 1;
};
using FlushSizes = std::vector<FlushSize>;

inline constexpr int64_t kMaxFlushSizePages = int64_t{1} << 20;
inline constexpr size_t kMaxFlushSizeEntries = 4096;

// INVALID_ARGUMENT with what is wrong (without the parameter name). A full flush ("-1",
// "GLOBAL") is refused: it is the ceiling's decision, not a size a program asks for.
absl::StatusOr<FlushSizes> ParseFlushSizes(std::string_view text);
// Canonical spelling: entries sorted by size, weights in %g.
std::string FormatFlushSizes(const FlushSizes& sizes);

// Draws sizes in proportion to the weights. Not thread-safe.
class FlushSizeSampler {
 public:
  FlushSizeSampler(const FlushSizes& sizes, uint64_t seed);
  int64_t Next();

 private:
  const FlushSizes& sizes_;
  std::vector<double> cumulative_;
  uint64_t state_;
};

// One run's settings; the defaults are the schema's defaults.
struct Options {
  int threads = 1;          // reader threads
  size_t entries = 8;       // pages per flush
  size_t accesses = 512;    // random accesses per reader loop
  bool write = false;       // write instead of read
  bool huge_pages = false;  // back the readers' region with transparent huge pages
  FlushMode flush = FlushMode::kMunmap;
  size_t region_mb = 128;  // size of the readers' region and of the flushed region
  FlushSizes sizes;        // non-empty: replaces `entries`, one draw per flush
};

// `params` must have been resolved against the tlbflush schema.
Options OptionsFromParams(const Params& params);

struct Result {
  uint64_t flushes = 0;      // flush operations done (pieces of `entries` or drawn pages)
  uint64_t pages = 0;        // pages flushed in all
  double flush_seconds = 0;  // from the readers' release until the last flush returned
  uint64_t accesses = 0;     // memory accesses of all readers in that time
  int threads = 0;
};

// Maps and faults in both regions, starts the readers behind a barrier (every reader is
// running before the first flush is timed), flushes every piece once (with `sizes`: pieces
// of drawn sizes, one after another, until the next would not fit), stops the readers.
// RESOURCE_EXHAUSTED if the memory cannot be mapped (or exceeds RAM) or a thread cannot start.
absl::StatusOr<Result> RunOnce(const Options& options);

// The derived figures of the classic output.
double CostNsPerAccess(const Result& r);         // flush time x threads / accesses
double AccessesPerThreadPerMs(const Result& r);  // accesses / threads / ms
double NsPerFlush(const Result& r);

}  // namespace tlbfleet::workloads::tlbflush
