#include "agent/workloads/usemem.h"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "agent/workloads/workload.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::workloads::usemem {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

// A directory of this test's own, so that leftovers are visible. Named by process and test:
// CTest runs the tests of this fixture in parallel processes, and a shared directory was
// removed by one test's TearDown while another was writing into it.
class UsememRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("usemem_test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  Options Tiny(int processes, size_t size_mb) {
    Options o;
    o.processes = processes;
    o.size_mb = size_mb;
    o.parent_dir = dir_.string();
    return o;
  }
  bool DirIsEmpty() const { return std::filesystem::is_empty(dir_); }

  std::filesystem::path dir_;
};

TEST_F(UsememRunTest, ReadsEveryByteAndRemovesItsFiles) {
  for (int processes : {1, 3}) {
    absl::StatusOr<Result> r = RunOnce(Tiny(processes, 3));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->bytes, 3u << 20) << processes;
    EXPECT_GT(r->seconds, 0);
    EXPECT_TRUE(DirIsEmpty()) << "sparse files left behind";
  }
}

TEST_F(UsememRunTest, MissingDirectoryIsAStatus) {
  Options o = Tiny(1, 1);
  o.parent_dir = (dir_ / "no" / "such").string();
  absl::StatusOr<Result> r = RunOnce(o);
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("usemem"));
}

TEST(UsememSizeTest, RamMultiples) {
  EXPECT_EQ(*ParseRamFactor("2x_ram"), 2);
  EXPECT_EQ(*ParseRamFactor(" 0.5x_ram "), 0.5);
  EXPECT_EQ(*ParseRamFactor(""), 0);
  for (const char* bad : {"2x", "2", "0x_ram", "-1x_ram", "65x_ram", "x_ram", "2xram"}) {
    absl::StatusOr<double> f = ParseRamFactor(bad);
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(f.status().message()), HasSubstr("2x_ram")) << bad;
  }
  Options o;
  o.ram_factor = 2;
  EXPECT_EQ(TotalBytes(o, uint64_t{8} << 30), uint64_t{16} << 30);
  o.ram_factor = 0;
  o.size_mb = 3;
  EXPECT_EQ(TotalBytes(o, uint64_t{8} << 30), uint64_t{3} << 20);
}

// Seed 004: "64 processes ... the total size of the files are 2*total_mem". On tmpfs
// without swap that is the OOM killer, so it is refused, saying why and what to do; on a
// disk file system (or with enough swap) it is fine.
TEST(UsememSizeTest, OverRamOnTmpfsWithoutSwapIsRefused) {
  MemoryFacts facts;
  facts.ram_bytes = uint64_t{8} << 30;
  facts.swap_free_bytes = 0;
  facts.tmpfs = true;
  facts.dir = "/tmp";
  absl::Status s = CheckFits(uint64_t{16} << 30, facts, "2x_ram");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "usemem: size 2x_ram = 16384 MiB of sparse files on tmpfs (/tmp) is more than RAM "
            "(8192 MiB) plus free swap (0 MiB): tmpfs pages leave RAM only through swap, so this "
            "would end in the OOM killer; put the files on a disk file system "
            "(TMPDIR=/var/tmp) or choose a smaller size");
  facts.swap_free_bytes = uint64_t{8} << 30;
  EXPECT_TRUE(CheckFits(uint64_t{16} << 30, facts, "2x_ram").ok()) << "swap takes the rest";
  facts.swap_free_bytes = 0;
  facts.tmpfs = false;
  EXPECT_TRUE(CheckFits(uint64_t{16} << 30, facts, "2x_ram").ok()) << "clean page cache";
}

// The real /dev/shm (tmpfs): 64x RAM is refused before any file is made.
TEST(UsememSizeTest, RealTmpfsRefusesBeforeCreatingAnything) {
  MemoryFacts facts = ReadMemoryFacts("/dev/shm");
  if (!facts.tmpfs || facts.ram_bytes == 0) GTEST_SKIP() << "no tmpfs at /dev/shm";
  Options o;
  o.ram_factor = 64;
  o.parent_dir = "/dev/shm";
  if (TotalBytes(o, facts.ram_bytes) <= facts.ram_bytes + facts.swap_free_bytes) {
    GTEST_SKIP() << "this host has more than 63x its RAM in free swap";
  }
  absl::StatusOr<Result> r = RunOnce(o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("64x_ram"));
}

TEST_F(UsememRunTest, RamMultipleIsSplitOverTheProcesses) {
  const MemoryFacts facts = ReadMemoryFacts(dir_.string());
  ASSERT_GT(facts.ram_bytes, 0u);
  Options o = Tiny(3, 1);
  o.ram_factor = static_cast<double>(uint64_t{6} << 20) / static_cast<double>(facts.ram_bytes);
  absl::StatusOr<Result> r = RunOnce(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->bytes, TotalBytes(o, facts.ram_bytes));
  EXPECT_NEAR(static_cast<double>(r->bytes), 6 << 20, 4096);
  EXPECT_TRUE(DirIsEmpty());
}

const Workload& Usemem() {
  LinkAllWorkloads();
  const Workload* w = Registry::Get().Find("usemem");
  EXPECT_NE(w, nullptr);
  return *w;
}

TEST(UsememWorkloadTest, ReportsMbPerSecAndElapsed) {
  const Workload& w = Usemem();
  Params params = ResolveParams(w, {{"processes", "2"}, {"size_mb", "4"}}).value();
  absl::StatusOr<std::vector<Measurement>> result = w.Run(params);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->size(), 2u);
  EXPECT_EQ((*result)[0].metric, "mb_per_sec");
  EXPECT_GT((*result)[0].value, 0);
  EXPECT_EQ((*result)[1].metric, "elapsed_seconds");
  EXPECT_GT((*result)[1].value, 0);
  // MB/s and elapsed describe the same 4 MiB.
  EXPECT_NEAR((*result)[0].value * (*result)[1].value, 4, 0.01);
  EXPECT_THAT(w.ClassicOutput(params, *result),
              MatchesRegex("4194304 bytes / [0-9]+ usecs = [0-9]+ KB/s\n[0-9.]+ MB/s\n"));
}

TEST(UsememWorkloadTest, BadInputIsRefusedWithTheParameterNamed) {
  const Workload& w = Usemem();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"processes", "0"}, {"processes", "4097"}, {"size_mb", "0"}, {"size_mb", "-1"}};
  for (const auto& [name, value] : bad) {
    absl::StatusOr<Params> p = ResolveParams(w, {{name, value}});
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << name << "=" << value;
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(name + ":"));
  }
  // Seed 004's setup, as written there.
  absl::StatusOr<Params> seed = ResolveParams(w, {{"processes", "64"}, {"size", "2.0x_ram"}});
  ASSERT_TRUE(seed.ok()) << seed.status();
  EXPECT_EQ(seed->Str("size"), "2x_ram");
  absl::StatusOr<Params> thin = ResolveParams(w, {{"processes", "300"}, {"size_mb", "1"}});
  EXPECT_EQ(thin.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(thin.status().message()),
              HasSubstr("size_mb: 1 MiB split over processes=300 is less than one 4 KiB page "
                        "per process (at least 2 MiB)"));
}

}  // namespace
}  // namespace tlbfleet::workloads::usemem
