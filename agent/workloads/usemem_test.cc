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
}

}  // namespace
}  // namespace tlbfleet::workloads::usemem
