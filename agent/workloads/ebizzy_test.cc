#include "agent/workloads/ebizzy.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::workloads::ebizzy {
namespace {

using ::testing::Each;
using ::testing::Gt;
using ::testing::MatchesRegex;

const std::atomic<bool> kNeverStop{false};

// Counts what the record loop allocates and frees, delegating to a real allocator.
class CountingAllocator : public CopyAllocator {
 public:
  explicit CountingAllocator(MmapMode mode) : real_(NewCopyAllocator(mode)) {}
  void* Allocate(size_t size) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++allocations_;
    sizes_.insert(size);
    return real_->Allocate(size);
  }
  void Free(void* buffer, size_t size) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++frees_;
    real_->Free(buffer, size);
  }
  int allocations() const { return allocations_; }
  int frees() const { return frees_; }
  const std::set<size_t>& sizes() const { return sizes_; }

 private:
  std::unique_ptr<CopyAllocator> real_;
  std::mutex mu_;
  int allocations_ = 0;
  int frees_ = 0;
  std::set<size_t> sizes_;
};

class FailingAllocator : public CopyAllocator {
 public:
  void* Allocate(size_t) override {
    errno = ENOMEM;
    return nullptr;
  }
  void Free(void*, size_t) override {}
};

struct Mapping {
  uintptr_t start = 0;
  uintptr_t end = 0;
  std::string perms;
};

std::vector<Mapping> ReadMaps() {
  std::vector<Mapping> maps;
  std::ifstream in("/proc/self/maps");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string range;
    Mapping m;
    fields >> range >> m.perms;
    size_t dash = range.find('-');
    m.start = std::stoull(range.substr(0, dash), nullptr, 16);
    m.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    maps.push_back(m);
  }
  return maps;
}

// The mapping containing `p`, or one with empty perms if `p` is unmapped.
Mapping MappingOf(const void* p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  for (const Mapping& m : ReadMaps()) {
    if (m.start <= addr && addr < m.end) return m;
  }
  return {};
}

Options TinyOptions() {
  Options o;
  o.threads = 1;
  o.seconds = 1;
  o.chunks = 4;
  o.chunk_size = 4096;
  return o;
}

std::unique_ptr<Chunks> MakeChunks(const Options& o) {
  absl::StatusOr<std::unique_ptr<Chunks>> chunks =
      Chunks::Create(o.chunks, o.chunk_size, o.prevent_coalescing);
  EXPECT_TRUE(chunks.ok()) << chunks.status();
  return chunks.ok() ? std::move(*chunks) : nullptr;
}

TEST(ChunksTest, RecordsAreTheirIndices) {
  std::unique_ptr<Chunks> chunks = Chunks::Create(3, 1000, Coalescing::kNone).value();
  EXPECT_EQ(chunks->count(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    for (Record j = 0; j < 1000 / sizeof(Record); ++j) ASSERT_EQ(chunks->chunk(i)[j], j);
  }
}

TEST(ChunksTest, HolesLeaveUnmappedGapsBetweenChunks) {
  const size_t page = ::sysconf(_SC_PAGESIZE);
  std::unique_ptr<Chunks> chunks = Chunks::Create(3, 2 * page, Coalescing::kHoles).value();
  for (size_t i = 0; i + 1 < 3; ++i) {
    const char* after = reinterpret_cast<const char*>(chunks->chunk(i)) + 2 * page;
    EXPECT_EQ(MappingOf(after).perms, "") << "no hole after chunk " << i;
    EXPECT_EQ(MappingOf(chunks->chunk(i + 1)).perms, "rw-p");
  }
}

// The VmFlags line of /proc/self/smaps for the mapping holding `address`.
std::string VmFlagsOf(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find('-') < 17) {
      inside = lo <= a && a < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

// The classic tool's chunks are separate small mappings; ours are one, which THP "always"
// would back with huge pages. They are pinned to 4 KiB pages ("nh" = VM_NOHUGEPAGE).
TEST(ChunksTest, ChunksNeverGetTransparentHugePages) {
  std::unique_ptr<Chunks> chunks = Chunks::Create(10, 512 * 1024, Coalescing::kNone).value();
  std::string flags = VmFlagsOf(chunks->chunk(5));
  ASSERT_FALSE(flags.empty()) << "no smaps entry for the chunks";
  EXPECT_NE((flags + " ").find(" nh "), std::string::npos) << flags;
}

TEST(ChunksTest, PermissionsAlternate) {
  std::unique_ptr<Chunks> chunks = Chunks::Create(3, 4096, Coalescing::kPermissions).value();
  EXPECT_EQ(MappingOf(chunks->chunk(0)).perms, "r--p");
  EXPECT_EQ(MappingOf(chunks->chunk(1)).perms, "rw-p");
  EXPECT_EQ(MappingOf(chunks->chunk(2)).perms, "r--p");
}

TEST(RngTest, BelowStaysInRange) {
  Rng rng(42);
  for (int i = 0; i < 10000; ++i) ASSERT_LT(rng.Below(7), 7u);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(rng.Below(1), 0u);
}

// Regression: ebizzy 0.3's generator (`state *= 1103515245 + 12345` from state 0) never
// left 0, so every thread copied chunk 0 and searched key 0.
TEST(NextPickTest, VisitsManyChunksAndKeysEvenFromSeedZero) {
  Options o;  // 10 chunks of 65536 records
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}}) {
    Rng rng(seed);
    std::set<size_t> chunks;
    std::set<Record> keys;
    for (int i = 0; i < 10000; ++i) {
      Pick p = NextPick(rng, o);
      ASSERT_LT(p.chunk, o.chunks);
      ASSERT_EQ(p.copy_bytes, o.chunk_size);
      ASSERT_LT(p.key, o.chunk_size / sizeof(Record));
      chunks.insert(p.chunk);
      keys.insert(p.key);
    }
    EXPECT_EQ(chunks.size(), o.chunks) << "seed " << seed;
    EXPECT_GT(keys.size(), 9000u) << "seed " << seed;
  }
}

TEST(NextPickTest, ThreadsWithDifferentSeedsPickDifferently) {
  Options o;
  Rng a(7);
  Rng b(8);
  int same = 0;
  for (int i = 0; i < 1000; ++i) same += NextPick(a, o).key == NextPick(b, o).key;
  EXPECT_LT(same, 10);
}

TEST(NextPickTest, RandomSizeIsAWholeNumberOfRecordsUpToChunkSize) {
  Options o;
  o.chunk_size = 800;
  o.random_size = true;
  Rng rng(3);
  std::set<size_t> sizes;
  for (int i = 0; i < 5000; ++i) {
    Pick p = NextPick(rng, o);
    ASSERT_GE(p.copy_bytes, sizeof(Record));
    ASSERT_LE(p.copy_bytes, o.chunk_size);
    ASSERT_EQ(p.copy_bytes % sizeof(Record), 0u);
    ASSERT_LT(p.key, p.copy_bytes / sizeof(Record));
    sizes.insert(p.copy_bytes);
  }
  EXPECT_EQ(sizes.size(), 100u);  // every size from 1 to 100 records
}

TEST(SearcherTest, FreesEveryCopyItAllocates) {
  Options o = TinyOptions();
  std::unique_ptr<Chunks> chunks = MakeChunks(o);
  CountingAllocator allocator(MmapMode::kAlways);
  Searcher searcher(*chunks, o, allocator, 1);
  absl::StatusOr<uint64_t> records = searcher.Run(kNeverStop, 1000);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(*records, 1000u);
  EXPECT_EQ(allocator.allocations(), 1000);
  EXPECT_EQ(allocator.frees(), 1000);
  EXPECT_EQ(allocator.sizes(), std::set<size_t>{o.chunk_size});
}

TEST(SearcherTest, StopsWhenToldTo) {
  Options o = TinyOptions();
  std::unique_ptr<Chunks> chunks = MakeChunks(o);
  std::unique_ptr<CopyAllocator> allocator = NewCopyAllocator(o.mmap);
  Searcher searcher(*chunks, o, *allocator, 1);
  std::atomic<bool> stop{true};
  EXPECT_EQ(searcher.Run(stop).value(), 0u);
}

TEST(SearcherTest, AllocationFailureIsAStatus) {
  Options o = TinyOptions();
  std::unique_ptr<Chunks> chunks = MakeChunks(o);
  FailingAllocator allocator;
  Searcher searcher(*chunks, o, allocator, 1);
  absl::StatusOr<uint64_t> records = searcher.Run(kNeverStop, 10);
  EXPECT_EQ(records.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(CopyAllocatorTest, MmapAlwaysReallyUnmaps) {
  std::unique_ptr<CopyAllocator> allocator = NewCopyAllocator(MmapMode::kAlways);
  const size_t size = 16 * ::sysconf(_SC_PAGESIZE);
  void* p = allocator->Allocate(size);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(MappingOf(p).perms, "rw-p");
  allocator->Free(p, size);
  EXPECT_EQ(MappingOf(p).perms, "") << "copy buffer still mapped after Free";
}

TEST(CopyAllocatorTest, MmapAlwaysLoopDoesNotGrowTheAddressSpace) {
  Options o = TinyOptions();
  o.random_size = true;
  o.chunk_size = 64 * 1024;
  std::unique_ptr<Chunks> chunks = MakeChunks(o);
  std::unique_ptr<CopyAllocator> allocator = NewCopyAllocator(MmapMode::kAlways);
  Searcher searcher(*chunks, o, *allocator, 5);
  ASSERT_TRUE(searcher.Run(kNeverStop, 10).ok());  // let lazily created mappings settle
  const size_t before = ReadMaps().size();
  ASSERT_TRUE(searcher.Run(kNeverStop, 2000).ok());
  // 2000 copies that were never unmapped would add about 2000 mappings. A few new ones are
  // the test runtime's own (ASan's allocator maps lazily), not copies.
  EXPECT_LT(ReadMaps().size(), before + 100);
}

struct OptionCase {
  const char* name;
  void (*apply)(Options&);
};

class EachOptionTest : public ::testing::TestWithParam<OptionCase> {};

TEST_P(EachOptionTest, RunsAndFreesEveryCopy) {
  Options o = TinyOptions();
  o.chunk_size = 3 * 4096 + 24;  // not a whole number of pages
  GetParam().apply(o);
  std::unique_ptr<Chunks> chunks = MakeChunks(o);
  ASSERT_NE(chunks, nullptr);
  CountingAllocator allocator(o.mmap);
  Searcher searcher(*chunks, o, allocator, 11);
  absl::StatusOr<uint64_t> records = searcher.Run(kNeverStop, 300);
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(*records, 300u);
  EXPECT_EQ(allocator.frees(), 300);
}

INSTANTIATE_TEST_SUITE_P(
    Ebizzy, EachOptionTest,
    ::testing::Values(
        OptionCase{"defaults", [](Options&) {}},
        OptionCase{"mmap_never", [](Options& o) { o.mmap = MmapMode::kNever; }},
        OptionCase{"mmap_auto", [](Options& o) { o.mmap = MmapMode::kAuto; }},
        OptionCase{"random_size", [](Options& o) { o.random_size = true; }},
        OptionCase{"linear_search", [](Options& o) { o.linear_search = true; }},
        OptionCase{"touch_pages", [](Options& o) { o.touch_pages = true; }},
        OptionCase{"own_memcpy", [](Options& o) { o.own_memcpy = true; }},
        OptionCase{"permissions",
                   [](Options& o) { o.prevent_coalescing = Coalescing::kPermissions; }},
        OptionCase{"holes", [](Options& o) { o.prevent_coalescing = Coalescing::kHoles; }},
        OptionCase{"everything",
                   [](Options& o) {
                     o.mmap = MmapMode::kNever;
                     o.random_size = true;
                     o.linear_search = true;
                     o.own_memcpy = true;
                     o.prevent_coalescing = Coalescing::kHoles;
                   }}),
    [](const ::testing::TestParamInfo<OptionCase>& info) { return info.param.name; });

TEST(RunThreadsTest, RecordsInOneSecondWithTinyChunks) {
  Options o = TinyOptions();
  o.threads = 2;
  o.chunk_size = 64;
  absl::StatusOr<RunResult> result = RunThreads(o);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->records.size(), 2u);
  EXPECT_THAT(result->records, Each(Gt(0u)));
  EXPECT_GE(result->elapsed_seconds, 1.0);
  EXPECT_LT(result->elapsed_seconds, 10.0);
}

TEST(RunThreadsTest, MmapNeverRuns) {
  Options o = TinyOptions();
  o.mmap = MmapMode::kNever;
  absl::StatusOr<RunResult> result = RunThreads(o);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->records[0], 0u);
}

TEST(RunThreadsTest, AllocationFailureStopsTheRunEarly) {
  Options o = TinyOptions();
  o.threads = 2;
  o.seconds = 3600;
  FailingAllocator allocator;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<RunResult> result = RunThreads(o, &allocator);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

TEST(RunThreadsTest, MoreMemoryThanTheHostIsAStatusNotACrash) {
  Options o = TinyOptions();
  o.chunks = 1 << 20;
  o.chunk_size = size_t{1} << 30;
  absl::StatusOr<RunResult> result = RunThreads(o);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(EbizzyWorkloadTest, ReportsAggregateAndPerThreadRates) {
  LinkAllWorkloads();
  const Workload* w = Registry::Get().Find("ebizzy");
  ASSERT_NE(w, nullptr);
  Params params =
      ResolveParams(*w, {{"threads", "2"}, {"seconds", "1"}, {"chunk_size", "4096"}}).value();
  EXPECT_EQ(w->TimeoutSeconds(params), 32);
  absl::StatusOr<std::vector<Measurement>> result = w->Run(params);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->size(), 3u);
  const std::vector<std::string> series = {"", "thread0", "thread1"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*result)[i].metric, "records_per_sec");
    EXPECT_EQ((*result)[i].series, series[i]);
    EXPECT_EQ((*result)[i].unit, "records/s");
    EXPECT_EQ((*result)[i].better, Better::kHigher);
    EXPECT_GT((*result)[i].value, 0);
  }
  EXPECT_NEAR((*result)[0].value, (*result)[1].value + (*result)[2].value,
              1e-6 * (*result)[0].value);
  EXPECT_THAT(w->ClassicOutput(params, *result), MatchesRegex("[0-9]+ records/s [0-9]+ [0-9]+\n"));
}

TEST(EbizzyWorkloadTest, ChunksTimesChunkSizeBeyondTheAddressSpaceIsRefusedAtSubmit) {
  LinkAllWorkloads();
  const Workload& w = *Registry::Get().Find("ebizzy");
  absl::StatusOr<Params> p =
      ResolveParams(w, {{"chunks", "1048576"}, {"chunk_size", "1073741824"}});
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()),
              ::testing::HasSubstr("chunks: (chunks=1048576 + threads=1) x "
                                   "chunk_size=1073741824 = 1024 TiB, more than the 128 TiB"));
  EXPECT_TRUE(ResolveParams(w, {{"chunks", "1024"}, {"chunk_size", "1073741824"}}).ok());
}

TEST(EbizzyWorkloadTest, ClassicOutputTruncatesLikeEbizzy) {
  LinkAllWorkloads();
  const Workload* w = Registry::Get().Find("ebizzy");
  std::vector<Measurement> result(3);
  result[0] = {"records_per_sec", "", 1234.9, "records/s", Better::kHigher};
  result[1] = {"records_per_sec", "thread0", 617.9, "records/s", Better::kHigher};
  result[2] = {"records_per_sec", "thread1", 617.0, "records/s", Better::kHigher};
  EXPECT_EQ(w->ClassicOutput(Params(), result), "1234 records/s 617 617\n");
}

}  // namespace
}  // namespace tlbfleet::workloads::ebizzy
