#include "agent/runner/spool.h"

#include <sys/stat.h>

#include <filesystem>

#include "agent/kernel/fake_sysroot_for_test.h"
#include "agent/runner/agent_id.h"
#include "agent/runner/paths.h"
#include "common/files.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

v1::SpooledJob Record(const std::string& lease, int samples) {
  v1::SpooledJob job;
  job.mutable_assignment()->set_lease_id(lease);
  job.mutable_assignment()->set_job_id(42);
  job.mutable_assignment()->set_benchmark("ebizzy");
  for (int i = 0; i < samples; ++i) {
    v1::Sample* s = job.add_samples();
    s->set_lease_id(lease);
    s->set_seq(static_cast<uint64_t>(i));
    s->set_metric("records_per_sec");
    s->set_value(1000 + i);
  }
  job.mutable_complete()->set_lease_id(lease);
  job.mutable_complete()->set_status(v1::JOB_STATUS_SUCCEEDED);
  job.mutable_complete()->set_sample_count(static_cast<uint64_t>(samples));
  return job;
}

TEST(SpoolTest, RoundTrip) {
  TempDir dir;
  absl::StatusOr<Spool> spool = Spool::Open(dir.path());
  ASSERT_TRUE(spool.ok()) << spool.status();
  v1::SpooledJob job = Record("lease-1", 3);
  ASSERT_TRUE(spool->Write(job).ok());
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/spool/lease-1.pb"));

  absl::StatusOr<v1::SpooledJob> back = spool->Read("lease-1");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*back, job));

  ASSERT_TRUE(spool->Write(Record("lease-0", 1)).ok());
  std::vector<v1::SpooledJob> all = spool->LoadAll();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].assignment().lease_id(), "lease-0");
  std::vector<v1::SpooledLease> summary = Spool::Summarize(all);
  EXPECT_EQ(summary[1].lease_id(), "lease-1");
  EXPECT_EQ(summary[1].job_id(), 42);
  EXPECT_EQ(summary[1].samples(), 3u);
  EXPECT_TRUE(summary[1].complete());

  ASSERT_TRUE(spool->Remove("lease-1").ok());
  EXPECT_TRUE(absl::IsNotFound(spool->Read("lease-1").status()));
  EXPECT_TRUE(spool->Remove("lease-1").ok());  // already gone is fine
  EXPECT_EQ(spool->LoadAll().size(), 1u);
}

TEST(SpoolTest, SurvivesReopen) {
  TempDir dir;
  ASSERT_TRUE(Spool::Open(dir.path())->Write(Record("a", 2)).ok());
  EXPECT_EQ(Spool::Open(dir.path())->LoadAll().size(), 1u);
}

TEST(SpoolTest, CorruptRecordIsMovedAsideNotFatal) {
  TempDir dir;
  absl::StatusOr<Spool> spool = Spool::Open(dir.path());
  ASSERT_TRUE(spool->Write(Record("good", 1)).ok());
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/spool/bad.pb", "\xff\xff\xff garbage").ok());
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/spool/empty.pb", "").ok());
  // Parses, but holds another lease: as good as corrupt.
  ASSERT_TRUE(
      WriteFileAtomic(dir.path() + "/spool/renamed.pb", Record("other", 1).SerializeAsString())
          .ok());

  std::vector<std::string> corrupt;
  std::vector<v1::SpooledJob> all = spool->LoadAll(&corrupt);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].assignment().lease_id(), "good");
  EXPECT_EQ(corrupt.size(), 3u);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/spool/bad.pb"));
  int moved = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() + "/spool/corrupt")) {
    EXPECT_EQ(entry.path().filename().string().rfind("bad.pb.", 0) == 0 ||
                  entry.path().filename().string().rfind("empty.pb.", 0) == 0 ||
                  entry.path().filename().string().rfind("renamed.pb.", 0) == 0,
              true)
        << entry.path();
    ++moved;
  }
  EXPECT_EQ(moved, 3);
  corrupt.clear();
  EXPECT_EQ(spool->LoadAll(&corrupt).size(), 1u);  // nothing left to complain about
  EXPECT_TRUE(corrupt.empty());
}

TEST(SpoolTest, IgnoresTempFilesOfAnInterruptedWrite) {
  TempDir dir;
  absl::StatusOr<Spool> spool = Spool::Open(dir.path());
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/spool/x.pb.tmp.123.456", "partial").ok());
  std::vector<std::string> corrupt;
  EXPECT_TRUE(spool->LoadAll(&corrupt).empty());
  EXPECT_TRUE(corrupt.empty());
}

TEST(SpoolTest, UsageCountsRecordsAndTheirBytesButNotTempFiles) {
  TempDir dir;
  absl::StatusOr<Spool> spool = Spool::Open(dir.path());
  EXPECT_EQ(spool->GetUsage().records, 0u);
  ASSERT_TRUE(spool->Write(Record("lease-1", 3)).ok());
  ASSERT_TRUE(spool->Write(Record("lease-2", 50)).ok());
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/spool/x.pb.tmp.123.456", "partial").ok());
  Spool::Usage usage = spool->GetUsage();
  EXPECT_EQ(usage.records, 2u);
  EXPECT_EQ(usage.bytes, std::filesystem::file_size(dir.path() + "/spool/lease-1.pb") +
                             std::filesystem::file_size(dir.path() + "/spool/lease-2.pb"));
  ASSERT_TRUE(spool->Remove("lease-2").ok());
  EXPECT_EQ(spool->GetUsage().records, 1u);
}

TEST(SpoolTest, UnsafeLeaseIdsAreRefused) {
  TempDir dir;
  absl::StatusOr<Spool> spool = Spool::Open(dir.path());
  EXPECT_TRUE(absl::IsInvalidArgument(spool->Write(Record("../../etc/passwd", 1))));
  EXPECT_TRUE(absl::IsInvalidArgument(spool->Write(Record("", 1))));
  EXPECT_TRUE(absl::IsInvalidArgument(spool->Write(Record(".hidden", 1))));
  EXPECT_TRUE(paths::ValidLeaseId("0f3a-77_b.2"));
}

TEST(AgentIdTest, CreatedOnceAndPersistent) {
  TempDir dir;
  std::string state = dir.path() + "/state";
  absl::StatusOr<std::string> first = LoadOrCreateAgentId(state);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->size(), 32u);
  EXPECT_EQ(first->find_first_not_of("0123456789abcdef"), std::string::npos);
  absl::StatusOr<std::string> second = LoadOrCreateAgentId(state);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(Trim(*ReadFile(state + "/agent-id")), *first);

  TempDir other;
  EXPECT_NE(*LoadOrCreateAgentId(other.path()), *first);
}

TEST(AgentIdTest, GarbageIsDataLossNotANewIdentity) {
  TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/agent-id", "not-an-id\n").ok());
  absl::StatusOr<std::string> id = LoadOrCreateAgentId(dir.path());
  EXPECT_TRUE(absl::IsDataLoss(id.status())) << id.status();
  EXPECT_EQ(*ReadFile(dir.path() + "/agent-id"), "not-an-id\n");
}

}  // namespace
}  // namespace tlbfleet::agent
