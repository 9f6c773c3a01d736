#include "agent/workloads/tlbflush.h"

#include <map>
#include <string>
#include <vector>

#include "agent/workloads/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::workloads::tlbflush {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

Options Tiny() {
  Options o;
  o.threads = 2;
  o.entries = 4;
  o.accesses = 64;
  o.region_mb = 4;
  return o;
}

TEST(TlbflushRunTest, EveryPieceIsFlushedAndReadersAccessMemory) {
  for (FlushMode mode : {FlushMode::kMunmap, FlushMode::kMprotect, FlushMode::kMadvise}) {
    Options o = Tiny();
    o.flush = mode;
    absl::StatusOr<Result> r = RunOnce(o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->flushes, (4u << 20) / (4 * 4096)) << static_cast<int>(mode);
    EXPECT_GT(r->flush_seconds, 0);
    EXPECT_EQ(r->threads, 2);
    EXPECT_EQ(r->accesses % 64, 0u);
    EXPECT_GT(CostNsPerAccess(*r), 0);
    EXPECT_GT(NsPerFlush(*r), 0);
  }
}

TEST(TlbflushRunTest, WritersAndHugePagesRun) {
  Options o = Tiny();
  o.write = true;
  o.huge_pages = true;
  o.threads = 3;
  absl::StatusOr<Result> r = RunOnce(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->flushes, 0u);
}

TEST(TlbflushRunTest, PieceLargerThanTheRegionStillFlushesOnce) {
  Options o = Tiny();
  o.region_mb = 1;
  o.entries = 512;  // 2 MiB
  absl::StatusOr<Result> r = RunOnce(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->flushes, 1u);
}

TEST(TlbflushRunTest, MoreMemoryThanTheHostIsAStatusNotACrash) {
  Options o = Tiny();
  o.region_mb = size_t{1} << 30;  // 1 PiB
  absl::StatusOr<Result> r = RunOnce(o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(TlbflushDerivedTest, FiguresFollowTheOriginalFormulas) {
  Result r;
  r.flushes = 1000;
  r.flush_seconds = 0.5;
  r.accesses = 100'000'000;
  r.threads = 2;
  // mptime * t / (actime * p): 0.5e9 ns * 2 / 1e8 = 10 ns per access.
  EXPECT_DOUBLE_EQ(CostNsPerAccess(r), 10);
  EXPECT_DOUBLE_EQ(AccessesPerThreadPerMs(r), 100'000);
  EXPECT_DOUBLE_EQ(NsPerFlush(r), 500'000);
}

const Workload& Tlbflush() {
  LinkAllWorkloads();
  const Workload* w = Registry::Get().Find("tlbflush");
  EXPECT_NE(w, nullptr);
  return *w;
}

TEST(TlbflushWorkloadTest, ReportsPlausibleMetricsAndClassicLine) {
  const Workload& w = Tlbflush();
  Params params =
      ResolveParams(w,
                    {{"threads", "2"}, {"entries", "16"}, {"region_mb", "8"}, {"flush", "madvise"}})
          .value();
  absl::StatusOr<std::vector<Measurement>> result = w.Run(params);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->size(), 4u);
  EXPECT_EQ((*result)[0].metric, w.PrimaryMetric());
  EXPECT_EQ((*result)[0].better, Better::kLower);
  for (const Measurement& m : *result) EXPECT_GT(m.value, 0) << m.metric;
  EXPECT_THAT(w.ClassicOutput(params, *result),
              MatchesRegex("munmap use [0-9]+ms [0-9]+ns/time, memory access uses [0-9]+ "
                           "times/thread/ms, cost [0-9]+ns/time\n"));
}

TEST(TlbflushWorkloadTest, ClassicLineTruncatesLikeMunmapC) {
  const Workload& w = Tlbflush();
  std::vector<Measurement> result = {
      {"cost_ns", "", 7.9, "ns/access", Better::kLower},
      {"accesses_per_thread_ms", "", 123456.7, "accesses/thread/ms", Better::kHigher},
      {"flush_ns", "", 2500.2, "ns/flush", Better::kLower},
      {"flush_ms", "", 81.9, "ms", Better::kLower},
  };
  EXPECT_EQ(w.ClassicOutput(Params(), result),
            "munmap use 81ms 2500ns/time, memory access uses 123456 times/thread/ms, cost "
            "7ns/time\n");
}

TEST(TlbflushWorkloadTest, BadInputIsRefusedWithTheParameterNamed) {
  const Workload& w = Tlbflush();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"threads", "0"},    {"threads", "4097"}, {"entries", "0"},       {"entries", "1048577"},
      {"region_mb", "-1"}, {"accesses", "0"},   {"flush", "shootdown"}, {"write", "maybe"},
  };
  for (const auto& [name, value] : bad) {
    absl::StatusOr<Params> p = ResolveParams(w, {{name, value}});
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << name << "=" << value;
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(name + ":"));
  }
  EXPECT_TRUE(ResolveParams(w, {{"entries", "1048576"}, {"threads", "4096"}}).ok());
}

TEST(FlushSizesTest, ParseAndCanonicalSpelling) {
  absl::StatusOr<FlushSizes> s = ParseFlushSizes(" 2:13.78, 1:56.92,65-128:3 ,33:3.11");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 4u);
  EXPECT_EQ(s->front().lo, 1);
  EXPECT_EQ(s->back().lo, 65);
  EXPECT_EQ(s->back().hi, 128);
  EXPECT_EQ(FormatFlushSizes(*s), "1:56.92,2:13.78,33:3.11,65-128:3");
  EXPECT_TRUE(ParseFlushSizes("")->empty());
}

TEST(FlushSizesTest, BadDistributionsSayWhy) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"-1:2.2,1:56.92", "a full flush is the ceiling's decision"},
      {"GLOBAL:2.2", "a full flush is the ceiling's decision"},
      {"1", "want size:weight"},
      {"0:5", "page count in [1, 1048576]"},
      {"9-3:1", "page count in [1, 1048576]"},
      {"4:0", "positive number"},
      {"4:x", "positive number"},
      {"1-8:1,8:1", "overlap"},
  };
  for (const auto& [text, why] : bad) {
    absl::StatusOr<FlushSizes> s = ParseFlushSizes(text);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(why)) << text;
  }
}

// 3:1 weights, a fixed seed, 20,000 draws: within 1.5 points of 75 % (about 4.5 sigma).
TEST(FlushSizesTest, DrawsFollowTheWeights) {
  FlushSizes sizes = *ParseFlushSizes("1:3,10-12:1");
  FlushSizeSampler sampler(sizes, 42);
  int ones = 0;
  std::map<int64_t, int> seen;
  for (int i = 0; i < 20000; ++i) {
    int64_t n = sampler.Next();
    ++seen[n];
    ones += n == 1;
  }
  EXPECT_NEAR(ones / 20000.0, 0.75, 0.015);
  EXPECT_EQ(seen.size(), 4u) << "1, 10, 11 and 12, and nothing else";
  EXPECT_EQ(seen.count(10) + seen.count(11) + seen.count(12), 3u);
}

TEST(TlbflushRunTest, RecordedSizesAreReplayed) {
  Options o = Tiny();
  o.sizes = *ParseFlushSizes("1:1,8:1");
  absl::StatusOr<Result> r = RunOnce(o);
  ASSERT_TRUE(r.ok()) << r.status();
  // 4 MiB = 1024 pages, cut into 1- and 8-page pieces until the next would not fit.
  EXPECT_GT(r->flushes, 1024u / 8);
  EXPECT_LE(r->pages, 1024u);
  EXPECT_GT(r->pages, 1024u - 8);
  EXPECT_LT(r->pages, r->flushes * 8) << "some 1-page flushes";
  EXPECT_GT(r->pages, r->flushes) << "some 8-page flushes";
}

TEST(TlbflushWorkloadTest, FlushSizesAreCheckedAtResolveTime) {
  const Workload& w = Tlbflush();
  absl::StatusOr<Params> p = ResolveParams(w, {{"flush_sizes", "2:1, 1:3"}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Str("flush_sizes"), "1:3,2:1");
  absl::StatusOr<Params> bad = ResolveParams(w, {{"flush_sizes", "-1:1"}});
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("flush_sizes: '-1:1'"));
  absl::StatusOr<Params> big = ResolveParams(w, {{"flush_sizes", "1:1,600:1"}, {"region_mb", "2"}});
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(big.status().message()),
              HasSubstr("flush_sizes: the largest size, 600 pages, does not fit in "
                        "region_mb=2 (512 pages)"));
}

}  // namespace
}  // namespace tlbfleet::workloads::tlbflush
