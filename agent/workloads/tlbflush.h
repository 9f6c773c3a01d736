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
#include "catalogue/workloads/tlbflush.h"

namespace tlbfleet::workloads::tlbflush {

enum class FlushMode { kMunmap, kMprotect, kMadvise };

// Recorded flush-size distributions (`flush_sizes`), from the catalogue's schema.
using catalogue::tlbflush::FlushSize;
using catalogue::tlbflush::FlushSizes;
using catalogue::tlbflush::FormatFlushSizes;
using catalogue::tlbflush::kMaxFlushSizeEntries;
using catalogue::tlbflush::kMaxFlushSizePages;
using catalogue::tlbflush::ParseFlushSizes;

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
