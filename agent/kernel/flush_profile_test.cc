#include "agent/kernel/flush_profile.h"

#include <event-parse.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "agent/kernel/mounts.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

TEST(FlushProfileTest, PagesBuckets) {
  EXPECT_EQ(PagesBucket(-1), "-1");
  EXPECT_EQ(PagesBucket(0), "0");
  EXPECT_EQ(PagesBucket(1), "1");
  EXPECT_EQ(PagesBucket(33), "33");
  EXPECT_EQ(PagesBucket(64), "64");
  EXPECT_EQ(PagesBucket(65), "65-128");
  EXPECT_EQ(PagesBucket(128), "65-128");  // bounds are inclusive
  EXPECT_EQ(PagesBucket(129), "129-256");
  EXPECT_EQ(PagesBucket(256), "129-256");
  EXPECT_EQ(PagesBucket(257), "257-512");
  EXPECT_EQ(PagesBucket(512), "257-512");
  EXPECT_EQ(PagesBucket(513), ">512");
  EXPECT_EQ(PagesBucket(int64_t{1} << 40), ">512");
  const std::vector<std::string>& all = PagesBuckets();
  ASSERT_EQ(all.size(), 1u + 65u + 4u);
  EXPECT_EQ(all.front(), "-1");
  EXPECT_EQ(all[1], "0");
  EXPECT_EQ(all[65], "64");
  EXPECT_EQ(all.back(), ">512");
}

std::map<std::string, double> ByName(const std::vector<v1::Sample>& samples) {
  std::map<std::string, double> out;
  for (const v1::Sample& s : samples) out[s.metric() + "/" + s.series()] = s.value();
  return out;
}

TEST(FlushProfileTest, HistogramSamples) {
  FlushHistogram h;
  h.Add(128, 3);
  h.Add(128, 3);
  h.Add(1, 0);
  h.Add(600, 4);
  h.lost = 2;
  std::vector<v1::Sample> samples = h.ToSamples();
  for (const v1::Sample& s : samples) {
    EXPECT_EQ(s.unit(), "events");
    EXPECT_EQ(s.better(), v1::BETTER_LOWER);
  }
  std::map<std::string, double> m = ByName(samples);
  EXPECT_EQ(m, (std::map<std::string, double>{
                   {"tlb_flush_events/total", 4},
                   {"tlb_flush_events/reason=0", 1},
                   {"tlb_flush_events/reason=3", 2},
                   {"tlb_flush_events/reason=4", 1},
                   {"tlb_flush_events/pages=-1", 0},  // always sent
                   {"tlb_flush_events/pages=1", 1},
                   {"tlb_flush_events/pages=65-128", 2},
                   {"tlb_flush_events/pages=>512", 1},
                   {"tlb_flush_lost/", 2},
               }));
  EXPECT_EQ(samples.front().series(), "total");
}

TEST(FlushProfileTest, LostEventsFromStats) {
  EXPECT_EQ(LostEventsFromStats("entries: 12\noverrun: 3\ncommit overrun: 1\nbytes: 4096\n"
                                "oldest event ts:  5.1\nnow ts:  6.2\ndropped events: 5\n"
                                "read events: 100\n"),
            9u);
  EXPECT_EQ(LostEventsFromStats(""), 0u);
}

// The format file of tlb:tlb_flush as kernel 6.18 prints it (x86-64).
constexpr char kTlbFlushFormat[] =
    "name: tlb_flush\n"
    "ID: 188\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:int reason;\toffset:8;\tsize:4;\tsigned:1;\n"
    "\tfield:unsigned long pages;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\n"
    "print fmt: \"pages:%ld reason:%s (%d)\", REC->pages, __print_symbolic(REC->reason, "
    "{ 0, \"flush on task switch\" }, { 1, \"remote shootdown\" }, { 2, \"local shootdown\" }, "
    "{ 3, \"local MM shootdown\" }, { 4, \"remote IPI send\" }, { 5, \"remote wrong CPU\" }), "
    "REC->reason\n";

class SyntheticEventTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tep_ = tep_alloc();
    ASSERT_NE(tep_, nullptr);
    tep_set_long_size(tep_, 8);
    ASSERT_EQ(tep_parse_event(tep_, kTlbFlushFormat, sizeof kTlbFlushFormat - 1, "tlb"), 0);
    event_ = tep_find_event_by_name(tep_, "tlb", "tlb_flush");
    ASSERT_NE(event_, nullptr);
  }
  void TearDown() override { tep_free(tep_); }

  absl::StatusOr<FlushEvent> Parse(int32_t reason, uint64_t pages) {
    unsigned char data[24] = {};
    uint16_t type = 188;
    std::memcpy(data, &type, 2);
    std::memcpy(data + 8, &reason, 4);
    std::memcpy(data + 16, &pages, 8);
    tep_record record;
    std::memset(&record, 0, sizeof record);
    record.data = data;
    record.size = sizeof data;
    return ParseFlushRecord(event_, &record);
  }

  tep_handle* tep_ = nullptr;
  tep_event* event_ = nullptr;
};

TEST_F(SyntheticEventTest, FullFlushIsMinusOne) {
  absl::StatusOr<FlushEvent> e = Parse(3, ~uint64_t{0});  // TLB_FLUSH_ALL = -1UL
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->pages, -1);
  EXPECT_EQ(e->reason, 3);
  EXPECT_EQ(PagesBucket(e->pages), "-1");
}

TEST_F(SyntheticEventTest, RangedFlush) {
  absl::StatusOr<FlushEvent> e = Parse(4, 128);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->pages, 128);
  EXPECT_EQ(e->reason, 4);
}

// On the real host, as root: record while this process maps, touches and unmaps memory.
TEST(FlushProfileRealHostTest, MunmapLoopIsSeen) {
  if (::geteuid() != 0) GTEST_SKIP() << "tracefs instances need root";
  Sysroot real;
  MountReport mounts;
  MountIfMissing(real, "tracefs", kTracefsDir, mounts);
  absl::StatusOr<std::unique_ptr<FlushProfileRecorder>> recorder = FlushProfileRecorder::Start();
  if (!recorder.ok()) {
    UndoMounts(mounts);
    GTEST_SKIP() << "tracefs unavailable: " << recorder.status();
  }
  const std::string instance = (*recorder)->instance_name();
  const size_t len = 512 * 1024;
  for (int i = 0; i < 200; ++i) {
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    std::memset(p, 1, len);
    ::munmap(p, len);
  }
  absl::StatusOr<FlushHistogram> h = (*recorder)->Stop();
  recorder->reset();
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_GT(h->total, 0u);
  uint64_t by_reason = 0;
  for (const auto& [reason, n] : h->by_reason) by_reason += n;
  EXPECT_EQ(by_reason, h->total);
  EXPECT_FALSE(real.IsDirectory(std::string(kTracefsDir) + "/instances/" + instance))
      << "instance " << instance << " left behind";
  UndoMounts(mounts);
}

// A crashed agent's instance (its pid is gone) is removed; a live process's stays.
TEST(FlushProfileRealHostTest, StaleInstancesOfDeadProcessesAreRemoved) {
  if (::geteuid() != 0) GTEST_SKIP() << "tracefs instances need root";
  Sysroot real;
  MountReport mounts;
  MountIfMissing(real, "tracefs", kTracefsDir, mounts);
  const std::string instances = std::string(kTracefsDir) + "/instances/";
  if (!real.IsDirectory(instances)) {
    UndoMounts(mounts);
    GTEST_SKIP() << "no tracefs at " << kTracefsDir;
  }
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
  const std::string stale = instances + "tlbfleet-" + std::to_string(dead) + "-0";
  const std::string live = instances + "tlbfleet-" + std::to_string(::getpid()) + "-999";
  ASSERT_EQ(::mkdir(stale.c_str(), 0700), 0) << std::strerror(errno);
  ASSERT_EQ(::mkdir(live.c_str(), 0700), 0) << std::strerror(errno);
  EXPECT_GE(CleanStaleTraceInstances(), 1);
  EXPECT_FALSE(real.IsDirectory(stale));
  EXPECT_TRUE(real.IsDirectory(live));
  ::rmdir(live.c_str());
  ::rmdir(stale.c_str());
  UndoMounts(mounts);
}

}  // namespace
}  // namespace tlbfleet::agent
