#pragma once
// ebizzy 0.3, written natively. Each worker thread loops: pick a random chunk of shared
// memory, allocate a private buffer, copy the chunk into it, search the copy for a random
// key, free the buffer. With mmap=always every freed copy is a real munmap, i.e. a TLB
// flush on every CPU that runs the process: the load the x86 range-flush ceiling is tuned
// for. See docs/workloads/ebizzy.md.
//
// This header exposes the pieces of the workload so that tests can drive the record loop
// one iteration at a time; the agent and tlbfleet-bench only use the registered Workload.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/workloads/workload.h"

namespace tlbfleet::workloads::ebizzy {

// How copy buffers are allocated.
enum class MmapMode {
  kAlways,  // mmap + munmap for every copy (ebizzy -m)
  kNever,   // malloc + free, with glibc told never to use mmap (ebizzy -M)
  kAuto,    // malloc + free, glibc picks (ebizzy's default)
};

// How the shared chunks are kept from merging into one VMA.
enum class Coalescing {
  kNone,
  kPermissions,  // even chunks read-only, odd chunks read-write (ebizzy -p)
  kHoles,        // one unmapped page between neighbouring chunks (ebizzy -P)
};

// One run's settings; the defaults are the schema's defaults.
struct Options {
  int threads = 1;
  int64_t seconds = 10;
  size_t chunks = 10;
  size_t chunk_size = 512 * 1024;  // bytes
  MmapMode mmap = MmapMode::kAlways;
  bool random_size = false;    // copy a random prefix of [1, chunk_size / 8] records
  bool linear_search = false;  // instead of binary search
  bool touch_pages = false;    // write one byte per page of the buffer; no copy, no search
  bool own_memcpy = false;     // byte-wise copy loop instead of the library memcpy
  Coalescing prevent_coalescing = Coalescing::kNone;
};

// `params` must have been resolved against the ebizzy schema.
Options OptionsFromParams(const Params& params);

using Record = uint64_t;

// The shared memory chunks. Chunk i holds the records 0, 1, 2, ..., so any prefix of it is
// sorted (binary search works on a copy of a random-size prefix) and key k sits at index k
// (a search that lands elsewhere proves the copy is corrupt). Immutable after Create, so
// any number of threads may read it.
class Chunks {
 public:
  // RESOURCE_EXHAUSTED if the memory cannot be mapped or protected (e.g. more VMAs than
  // vm.max_map_count allows).
  static absl::StatusOr<std::unique_ptr<Chunks>> Create(size_t count, size_t chunk_size,
                                                        Coalescing coalescing);
  ~Chunks();
  Chunks(const Chunks&) = delete;
  Chunks& operator=(const Chunks&) = delete;

  size_t count() const { return count_; }
  size_t chunk_size() const { return chunk_size_; }
  const Record* chunk(size_t i) const {
    return reinterpret_cast<const Record*>(base_ + i * stride_);
  }

 private:
  Chunks(char* base, size_t mapped, size_t count, size_t chunk_size, size_t stride);

  char* base_;
  size_t mapped_;  // bytes from base_, holes included (munmap of a hole is harmless)
  size_t count_;
  size_t chunk_size_;
  size_t stride_;  // distance between chunk starts
};

// Allocates the per-iteration copy buffers. Implementations are thread-safe.
class CopyAllocator {
 public:
  virtual ~CopyAllocator() = default;
  // nullptr on failure, with errno set.
  virtual void* Allocate(size_t size) = 0;
  // `size` is the size passed to Allocate.
  virtual void Free(void* buffer, size_t size) = 0;
};

// kAlways: mmap/munmap. kNever and kAuto: malloc/free (RunThreads sets glibc's
// M_MMAP_MAX to 0 for kNever).
std::unique_ptr<CopyAllocator> NewCopyAllocator(MmapMode mode);

// splitmix64. Replaces ebizzy 0.3's `state *= 1103515245 + 12345`, which, starting from
// state 0, stays 0 forever: every thread copied chunk 0 and searched key 0. Not
// thread-safe: one per thread.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform in [0, n); n > 0.
  uint64_t Below(uint64_t n);

 private:
  uint64_t state_;
};

// What one iteration of the record loop works on.
struct Pick {
  size_t chunk = 0;       // in [0, options.chunks)
  size_t copy_bytes = 0;  // chunk_size, or a random multiple of 8 with random_size
  Record key = 0;         // in [0, copy_bytes / 8)
};
Pick NextPick(Rng& rng, const Options& options);

// One worker thread's state and loop. Not thread-safe; `chunks`, `options` and `allocator`
// must outlive it.
class Searcher {
 public:
  Searcher(const Chunks& chunks, const Options& options, CopyAllocator& allocator, uint64_t seed);

  // Runs iterations until `stop` is set or `max_iterations` have run, and returns the
  // number of records read (one per iteration). RESOURCE_EXHAUSTED if a copy buffer cannot
  // be allocated; INTERNAL if a key is missing from its copy (memory corruption).
  absl::StatusOr<uint64_t> Run(const std::atomic<bool>& stop,
                               uint64_t max_iterations = std::numeric_limits<uint64_t>::max());

 private:
  absl::Status Iterate();

  const Chunks& chunks_;
  const Options& options_;
  CopyAllocator& allocator_;
  Rng rng_;
  size_t page_size_;
};

struct RunResult {
  std::vector<uint64_t> records;  // per thread
  double elapsed_seconds = 0;     // from the common start until every thread stopped
};

// Runs options.threads Searchers for options.seconds: they start together once all are
// created and stop on a shared deadline; the first error stops them all and is returned.
// `allocator` overrides the one options.mmap asks for (tests); nullptr for the normal one.
absl::StatusOr<RunResult> RunThreads(const Options& options, CopyAllocator* allocator = nullptr);

}  // namespace tlbfleet::workloads::ebizzy
