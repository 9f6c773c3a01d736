#include "agent/workloads/ebizzy.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <mutex>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "catalogue/workloads/ebizzy.h"
#include "common/files.h"

namespace tlbfleet::workloads {
namespace ebizzy {
namespace {

constexpr size_t kRecordSize = sizeof(Record);
// glibc's DEFAULT_MMAP_MAX, restored after a mmap=never run (mallopt has no getter).
constexpr int kGlibcDefaultMmapMax = 65536;

size_t PageSize() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

class MmapAllocator : public CopyAllocator {
 public:
  void* Allocate(size_t size) override {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  void Free(void* buffer, size_t size) override { ::munmap(buffer, size); }
};

class MallocAllocator : public CopyAllocator {
 public:
  void* Allocate(size_t size) override { return std::malloc(size); }
  void Free(void* buffer, size_t size) override { std::free(buffer); }
};

// mmap=never as ebizzy -M does it: glibc's mmap limit is process-wide, so it is set for
// the run and put back afterwards (the workload runs in its own child process anyway).
class NoMallocMmapScope {
 public:
  explicit NoMallocMmapScope(bool active) : active_(active) {
    if (active_) ::mallopt(M_MMAP_MAX, 0);
  }
  ~NoMallocMmapScope() {
    if (active_) ::mallopt(M_MMAP_MAX, kGlibcDefaultMmapMax);
  }
  NoMallocMmapScope(const NoMallocMmapScope&) = delete;
  NoMallocMmapScope& operator=(const NoMallocMmapScope&) = delete;

 private:
  bool active_;
};

// ebizzy -l: a byte-at-a-time loop. The empty asm hides the index from the optimiser,
// which would otherwise recognise the loop and call the library memcpy after all.
void ByteCopy(void* dest, const void* src, size_t len) {
  auto* d = static_cast<unsigned char*>(dest);
  const auto* s = static_cast<const unsigned char*>(src);
  for (size_t i = 0; i < len; ++i) {
    asm("" : "+r"(i));
    d[i] = s[i];
  }
}

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t RandomSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

// Refuses runs that would need more memory than the host has, which would otherwise end in
// the OOM killer (with overcommit, mmap itself rarely fails) rather than in a clean error.
absl::Status CheckMemory(const Options& options) {
  const size_t page = PageSize();
  const long phys_pages = ::sysconf(_SC_PHYS_PAGES);
  if (phys_pages <= 0) return absl::OkStatus();
  const size_t stride = RoundUp(options.chunk_size, page) + page;
  const __int128 needed = static_cast<__int128>(options.chunks + options.threads) * stride;
  const __int128 have = static_cast<__int128>(phys_pages) * page;
  if (needed > have) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "ebizzy needs ", static_cast<int64_t>(needed >> 20),
        " MiB (chunks plus one copy per thread) but the host has ",
        static_cast<int64_t>(have >> 20), " MiB of RAM; use fewer chunks or a smaller chunk_size"));
  }
  return absl::OkStatus();
}

}  // namespace

Options OptionsFromParams(const Params& params) {
  Options o;
  o.threads = static_cast<int>(params.Int("threads"));
  o.seconds = params.Int("seconds");
  o.chunks = static_cast<size_t>(params.Int("chunks"));
  o.chunk_size = static_cast<size_t>(params.Int("chunk_size"));
  const std::string& mmap = params.Str("mmap");
  o.mmap = mmap == "never"  ? MmapMode::kNever
           : mmap == "auto" ? MmapMode::kAuto
                            : MmapMode::kAlways;
  o.random_size = params.Bool("random_size");
  o.linear_search = params.Bool("linear_search");
  o.touch_pages = params.Bool("touch_pages");
  o.own_memcpy = params.Bool("own_memcpy");
  const std::string& coalescing = params.Str("prevent_coalescing");
  o.prevent_coalescing = coalescing == "permissions" ? Coalescing::kPermissions
                         : coalescing == "holes"     ? Coalescing::kHoles
                                                     : Coalescing::kNone;
  return o;
}

// --- Chunks ------------------------------------------------------------------------------

Chunks::Chunks(char* base, size_t mapped, size_t count, size_t chunk_size, size_t stride)
    : base_(base), mapped_(mapped), count_(count), chunk_size_(chunk_size), stride_(stride) {}

Chunks::~Chunks() { ::munmap(base_, mapped_); }

absl::StatusOr<std::unique_ptr<Chunks>> Chunks::Create(size_t count, size_t chunk_size,
                                                       Coalescing coalescing) {
  if (count == 0 || chunk_size < kRecordSize) {
    return absl::InvalidArgumentError("ebizzy needs at least one chunk of at least one record");
  }
  const size_t page = PageSize();
  const size_t hole = coalescing == Coalescing::kHoles ? page : 0;
  const size_t stride = RoundUp(chunk_size, page) + hole;
  const size_t mapped = stride * count;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return ErrnoStatus(errno, absl::StrCat("ebizzy: mapping ", count, " chunks of ", chunk_size,
                                           " bytes (try fewer chunks or a smaller chunk_size)"));
  }
  // From here on the destructor unmaps everything, whatever fails below.
  std::unique_ptr<Chunks> chunks(
      new Chunks(static_cast<char*>(p), mapped, count, chunk_size, stride));
  // 4 KiB pages whatever the host's THP mode: one mapping of all chunks would otherwise get
  // huge pages under THP "always" (Debian's default), and the copies' TLB footprint would
  // depend on the host's setting. Best effort: kernels without THP refuse with EINVAL.
  (void)::madvise(p, mapped, MADV_NOHUGEPAGE);
  char* base = static_cast<char*>(p);
  const size_t records = chunk_size / kRecordSize;
  for (size_t i = 0; i < count; ++i) {
    Record* chunk = reinterpret_cast<Record*>(base + i * stride);
    for (size_t j = 0; j < records; ++j) chunk[j] = j;
    // Hole after every chunk but the last, so no two chunks share a VMA.
    if (hole != 0 && i + 1 < count && ::munmap(base + (i + 1) * stride - hole, hole) != 0) {
      return ErrnoStatus(errno, "ebizzy: unmapping the holes between chunks");
    }
    if (coalescing == Coalescing::kPermissions && i % 2 == 0 &&
        ::mprotect(chunk, RoundUp(chunk_size, page), PROT_READ) != 0) {
      return ErrnoStatus(errno, "ebizzy: making alternate chunks read-only (vm.max_map_count?)");
    }
  }
  return chunks;
}

// --- Allocators and random numbers -------------------------------------------------------

std::unique_ptr<CopyAllocator> NewCopyAllocator(MmapMode mode) {
  if (mode == MmapMode::kAlways) return std::make_unique<MmapAllocator>();
  return std::make_unique<MallocAllocator>();
}

uint64_t Rng::Next() { return SplitMix64(state_); }

uint64_t Rng::Below(uint64_t n) {
  // Lemire's multiply-shift: no division, bias below 2^-32 for the ranges used here.
  return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
}

Pick NextPick(Rng& rng, const Options& options) {
  Pick pick;
  pick.chunk = rng.Below(options.chunks);
  pick.copy_bytes = options.chunk_size;
  if (options.random_size) {
    pick.copy_bytes = (rng.Below(options.chunk_size / kRecordSize) + 1) * kRecordSize;
  }
  pick.key = rng.Below(pick.copy_bytes / kRecordSize);
  return pick;
}

// --- The record loop ---------------------------------------------------------------------

Searcher::Searcher(const Chunks& chunks, const Options& options, CopyAllocator& allocator,
                   uint64_t seed)
    : chunks_(chunks),
      options_(options),
      allocator_(allocator),
      rng_(seed),
      page_size_(PageSize()) {}

absl::StatusOr<uint64_t> Searcher::Run(const std::atomic<bool>& stop, uint64_t max_iterations) {
  uint64_t records = 0;
  while (records < max_iterations && !stop.load(std::memory_order_relaxed)) {
    if (absl::Status s = Iterate(); !s.ok()) return s;
    ++records;
  }
  return records;
}

absl::Status Searcher::Iterate() {
  const Pick pick = NextPick(rng_, options_);
  void* copy = allocator_.Allocate(pick.copy_bytes);
  if (copy == nullptr) {
    return ErrnoStatus(errno,
                       absl::StrCat("ebizzy: allocating a ", pick.copy_bytes, "-byte copy buffer"));
  }
  if (options_.touch_pages) {
    // volatile: the buffer is freed right after, and stores before free() are dead to GCC.
    auto* bytes = static_cast<volatile unsigned char*>(copy);
    for (size_t offset = 0; offset < pick.copy_bytes; offset += page_size_) bytes[offset] = 0xff;
  } else {
    if (options_.own_memcpy) {
      ByteCopy(copy, chunks_.chunk(pick.chunk), pick.copy_bytes);
    } else {
      std::memcpy(copy, chunks_.chunk(pick.chunk), pick.copy_bytes);
    }
    const Record* begin = static_cast<const Record*>(copy);
    const Record* end = begin + pick.copy_bytes / kRecordSize;
    const Record* found = options_.linear_search ? std::find(begin, end, pick.key)
                                                 : std::lower_bound(begin, end, pick.key);
    if (found == end || *found != pick.key || static_cast<Record>(found - begin) != pick.key) {
      allocator_.Free(copy, pick.copy_bytes);
      return absl::InternalError(absl::StrCat("ebizzy: key ", pick.key,
                                              " missing from the copy of chunk ", pick.chunk,
                                              " (memory corruption?)"));
    }
  }
  allocator_.Free(copy, pick.copy_bytes);
  return absl::OkStatus();
}

absl::StatusOr<RunResult> RunThreads(const Options& options, CopyAllocator* allocator) {
  if (absl::Status s = CheckMemory(options); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Chunks>> chunks =
      Chunks::Create(options.chunks, options.chunk_size, options.prevent_coalescing);
  if (!chunks.ok()) return chunks.status();
  std::unique_ptr<CopyAllocator> own_allocator;
  if (allocator == nullptr) {
    own_allocator = NewCopyAllocator(options.mmap);
    allocator = own_allocator.get();
  }
  NoMallocMmapScope no_mmap(options.mmap == MmapMode::kNever);

  const int n = options.threads;
  const uint64_t seed = RandomSeed();
  std::vector<Searcher> searchers;
  searchers.reserve(n);
  for (int i = 0; i < n; ++i) {
    // Rng mixes its state, so consecutive seeds still give unrelated streams.
    searchers.emplace_back(**chunks, options, *allocator, seed + static_cast<uint64_t>(i));
  }

  std::vector<absl::StatusOr<uint64_t>> results(n, uint64_t{0});
  std::latch ready(n);
  std::atomic<bool> go{false};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable failed_cv;
  bool failed = false;  // guarded by mu

  auto release_and_join = [&](std::vector<std::thread>& workers) {
    go.store(true);
    go.notify_all();
    stop.store(true);
    for (std::thread& t : workers) t.join();
  };

  std::vector<std::thread> workers;
  workers.reserve(n);
  for (int i = 0; i < n; ++i) {
    try {
      workers.emplace_back([&, i] {
        ready.count_down();
        go.wait(false);
        results[i] = searchers[i].Run(stop);
        if (!results[i].ok()) {
          std::lock_guard<std::mutex> lock(mu);
          failed = true;
          failed_cv.notify_one();
        }
      });
    } catch (const std::system_error& e) {
      release_and_join(workers);
      return absl::ResourceExhaustedError(
          absl::StrCat("ebizzy: cannot start thread ", i, " of ", n, ": ", e.what()));
    }
  }

  ready.wait();
  const auto start = std::chrono::steady_clock::now();
  go.store(true);
  go.notify_all();
  {
    std::unique_lock<std::mutex> lock(mu);
    failed_cv.wait_until(lock, start + std::chrono::seconds(options.seconds),
                         [&] { return failed; });
  }
  stop.store(true);
  for (std::thread& t : workers) t.join();
  const auto end = std::chrono::steady_clock::now();

  RunResult result;
  result.elapsed_seconds = std::chrono::duration<double>(end - start).count();
  for (absl::StatusOr<uint64_t>& r : results) {
    if (!r.ok()) return r.status();
    result.records.push_back(*r);
  }
  return result;
}

}  // namespace ebizzy

// --- The registered workload -------------------------------------------------------------

namespace {

using catalogue::ebizzy::kRecordsPerSec;

class Ebizzy : public Workload {
 public:
  Ebizzy() : Workload("ebizzy") {}

  absl::StatusOr<std::vector<Measurement>> Run(const Params& params) const override {
    absl::StatusOr<ebizzy::RunResult> run = ebizzy::RunThreads(ebizzy::OptionsFromParams(params));
    if (!run.ok()) return run.status();
    const double elapsed = run->elapsed_seconds > 0 ? run->elapsed_seconds : 1e-9;
    uint64_t total = 0;
    for (uint64_t r : run->records) total += r;
    std::vector<Measurement> out;
    out.push_back(Rate("", static_cast<double>(total) / elapsed));
    for (size_t i = 0; i < run->records.size(); ++i) {
      out.push_back(
          Rate(absl::StrCat("thread", i), static_cast<double>(run->records[i]) / elapsed));
    }
    return out;
  }

  std::string ClassicOutput(const Params& params,
                            const std::vector<Measurement>& result) const override {
    // ebizzy prints whole records/s: the aggregate, then each thread's.
    std::string total;
    std::string threads;
    for (const Measurement& m : result) {
      if (m.metric != kRecordsPerSec) continue;
      const std::string value = absl::StrCat(static_cast<uint64_t>(m.value));
      if (m.series.empty()) {
        total = value;
      } else {
        absl::StrAppend(&threads, " ", value);
      }
    }
    return absl::StrCat(total.empty() ? "0" : total, " records/s", threads, "\n");
  }

 private:
  static Measurement Rate(std::string series, double value) {
    Measurement m;
    m.metric = kRecordsPerSec;
    m.series = std::move(series);
    m.value = value;
    m.unit = "records/s";
    m.better = Better::kHigher;
    return m;
  }
};

}  // namespace

REGISTER_WORKLOAD(Ebizzy);

}  // namespace tlbfleet::workloads
