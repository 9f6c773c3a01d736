#include "agent/runner/outbox.h"

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "agent/runner/paths.h"
#include "common/temp_dir_for_test.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

// A finished job of `samples` samples, all from host "h1".
v1::SpooledJob Finished(const std::string& lease, int samples = 1) {
  v1::SpooledJob record;
  record.mutable_assignment()->set_lease_id(lease);
  record.mutable_assignment()->set_job_id(7);
  for (int i = 0; i < samples; ++i) {
    v1::Sample* sample = record.add_samples();
    sample->set_seq(static_cast<uint64_t>(i));
    sample->set_host("h1");
  }
  record.mutable_complete()->set_lease_id(lease);
  record.mutable_complete()->set_status(v1::JOB_STATUS_SUCCEEDED);
  return record;
}

class OutboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Spool> spool = Spool::Open(dir_.path());
    ASSERT_TRUE(spool.ok()) << spool.status();
    outbox_ = std::make_unique<Outbox>(*std::move(spool));
    outbox_->set_on_queued([this] { ++queued_signals_; });
  }
  bool Spooled(const std::string& lease) {
    return std::filesystem::exists(paths::SpoolFile(dir_.path(), lease));
  }
  std::vector<std::string> PopAll() {
    std::vector<std::string> leases;
    while (outbox_->HasQueued()) {
      if (std::optional<v1::SpooledJob> r = outbox_->PopNext()) {
        leases.push_back(r->assignment().lease_id());
      }
    }
    return leases;
  }

  TempDir dir_;
  std::unique_ptr<Outbox> outbox_;
  std::atomic<int> queued_signals_{0};
};

TEST_F(OutboxTest, AResultIsSpooledFirstAndSentOnlyOnceQueued) {
  outbox_->Keep(Finished("lease-a", 2));
  EXPECT_TRUE(Spooled("lease-a"));
  EXPECT_FALSE(outbox_->HasQueued());
  EXPECT_EQ(queued_signals_, 0);
  outbox_->Queue("lease-a");
  EXPECT_EQ(queued_signals_, 1) << "the sender waits for this";
  std::optional<v1::SpooledJob> next = outbox_->PopNext();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->samples_size(), 2);
  EXPECT_FALSE(outbox_->HasQueued());
  EXPECT_TRUE(Spooled("lease-a")) << "sent is not acknowledged";
  Outbox::Backlog backlog = outbox_->Pending();
  EXPECT_EQ(backlog.spooled, 1u);
  EXPECT_EQ(backlog.queued, 0u);
}

TEST_F(OutboxTest, AResultTheSpoolRefusesIsKeptInMemoryAndStillSent) {
  // The spool refuses a lease id that is no file name; a full disk would do the same.
  outbox_->Keep(Finished("no/file"));
  EXPECT_EQ(outbox_->Pending().in_memory, 1u);
  std::vector<v1::SpooledLease> summaries = outbox_->Summaries();
  ASSERT_EQ(summaries.size(), 1u);
  EXPECT_EQ(summaries[0].lease_id(), "no/file");
  outbox_->Queue("no/file");
  std::optional<v1::SpooledJob> next = outbox_->PopNext();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->assignment().lease_id(), "no/file");
  v1::CompletionAck ack;
  ack.set_lease_id("no/file");
  outbox_->OnCompletionAck(ack);
  EXPECT_EQ(outbox_->Pending().in_memory, 0u);
}

TEST_F(OutboxTest, AWelcomeQueuesEveryResultHeldOnceInLeaseOrder) {
  outbox_->Keep(Finished("lease-b"));
  outbox_->Keep(Finished("lease-a"));
  outbox_->Keep(Finished("no/file"));
  outbox_->Queue("lease-b");
  outbox_->Queue("lease-b");
  EXPECT_EQ(outbox_->QueueAllForResend(), 3u);
  EXPECT_EQ(PopAll(), (std::vector<std::string>{"lease-a", "lease-b", "no/file"}));
}

TEST_F(OutboxTest, OnlyAFinishedLeaseCanBeRequeued) {
  EXPECT_FALSE(outbox_->Requeue("lease-a"));
  EXPECT_FALSE(outbox_->HasQueued());
  outbox_->Keep(Finished("lease-a"));
  EXPECT_TRUE(outbox_->Requeue("lease-a"));
  EXPECT_EQ(PopAll(), (std::vector<std::string>{"lease-a"}));
}

TEST_F(OutboxTest, AcksAndRejectionsDropTheResultEverywhere) {
  outbox_->Keep(Finished("lease-a"));
  outbox_->Keep(Finished("lease-b"));
  outbox_->QueueAllForResend();
  v1::SampleAck stored;
  stored.set_lease_id("lease-a");
  stored.set_through_seq(0);
  outbox_->OnSampleAck(stored);
  EXPECT_TRUE(Spooled("lease-a")) << "samples stored; the completion is not acked yet";
  v1::CompletionAck acked;
  acked.set_lease_id("lease-a");
  outbox_->OnCompletionAck(acked);
  EXPECT_FALSE(Spooled("lease-a"));
  v1::SampleAck rejected;
  rejected.set_lease_id("lease-b");
  rejected.set_rejected(true);
  rejected.set_reason("lease expired");
  outbox_->OnSampleAck(rejected);
  EXPECT_FALSE(Spooled("lease-b"));
  EXPECT_FALSE(outbox_->HasQueued());
  Outbox::Backlog backlog = outbox_->Pending();
  EXPECT_EQ(backlog.spooled + backlog.in_memory + backlog.queued, 0u);
}

TEST_F(OutboxTest, AQueuedLeaseWhoseRecordIsGoneIsSkipped) {
  outbox_->Keep(Finished("lease-a"));
  outbox_->Queue("lease-a");
  std::filesystem::remove(paths::SpoolFile(dir_.path(), "lease-a"));  // acked elsewhere
  EXPECT_FALSE(outbox_->PopNext().has_value());
  EXPECT_FALSE(outbox_->HasQueued());
}

TEST(WriteRecordTest, SamplesGoInBatchesThenTheCompletion) {
  const v1::SpooledJob record = Finished("lease-a", 2 * kSamplesPerBatch + 5);
  std::vector<v1::AgentMessage> written;
  ASSERT_TRUE(WriteRecord(record, /*share_origin=*/false, [&](const v1::AgentMessage& m) {
    written.push_back(m);
    return true;
  }));
  ASSERT_EQ(written.size(), 4u);
  EXPECT_EQ(written[0].samples().samples_size(), kSamplesPerBatch);
  EXPECT_EQ(written[2].samples().samples_size(), 5);
  EXPECT_EQ(written[2].samples().samples(0).seq(), 2u * kSamplesPerBatch);
  EXPECT_EQ(written[1].samples().lease_id(), "lease-a");
  EXPECT_EQ(written[1].samples().job_id(), 7);
  EXPECT_EQ(written[0].samples().samples(0).host(), "h1");
  EXPECT_TRUE(written[3].has_complete());
}

TEST(WriteRecordTest, ASharedOriginIsSentOnceABatchAndAFailedWriteStops) {
  const v1::SpooledJob record = Finished("lease-a", kSamplesPerBatch + 1);
  std::vector<v1::AgentMessage> written;
  EXPECT_FALSE(WriteRecord(record, /*share_origin=*/true, [&](const v1::AgentMessage& m) {
    written.push_back(m);
    return written.size() < 2;
  }));
  ASSERT_EQ(written.size(), 2u) << "nothing after the failed write";
  EXPECT_EQ(written[0].samples().shared_origin().host(), "h1");
  EXPECT_EQ(written[0].samples().samples(0).host(), "");
}

}  // namespace
}  // namespace tlbfleet::agent
