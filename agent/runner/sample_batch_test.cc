#include "agent/runner/sample_batch.h"

#include <gtest/gtest.h>

namespace tlbfleet::agent {
namespace {

v1::Sample Taken(const std::string& host, const std::string& boot_id, const std::string& peer) {
  v1::Sample s;
  s.set_metric("m");
  s.set_host(host);
  s.set_boot_id(boot_id);
  s.set_kernel_release("6.1.0-28-amd64");
  s.set_kernel_cmdline("BOOT_IMAGE=/vmlinuz ro quiet");
  s.set_microarch("IvyBridge");
  s.set_peer_host(peer);
  return s;
}

TEST(ShareOriginTest, MovesWhatEverySampleHasAndKeepsWhatDiffers) {
  v1::SampleBatch batch;
  *batch.add_samples() = Taken("h1", "boot-a", "");
  *batch.add_samples() = Taken("h1", "boot-a", "peer-1");
  *batch.add_samples() = Taken("h1", "boot-b", "peer-1");
  ShareOrigin(batch);
  EXPECT_EQ(batch.shared_origin().host(), "h1");
  EXPECT_EQ(batch.shared_origin().kernel_release(), "6.1.0-28-amd64");
  EXPECT_EQ(batch.shared_origin().kernel_cmdline(), "BOOT_IMAGE=/vmlinuz ro quiet");
  EXPECT_EQ(batch.shared_origin().microarch(), "IvyBridge");
  // Differing (boot id, peer) or empty everywhere (boot entry): left in the samples.
  EXPECT_EQ(batch.shared_origin().boot_id(), "");
  EXPECT_EQ(batch.shared_origin().peer_host(), "");
  EXPECT_EQ(batch.shared_origin().boot_entry(), "");
  const char* boots[] = {"boot-a", "boot-a", "boot-b"};
  const char* peers[] = {"", "peer-1", "peer-1"};
  for (int i = 0; i < 3; ++i) {
    const v1::Sample& s = batch.samples(i);
    EXPECT_EQ(s.host(), "") << i;
    EXPECT_EQ(s.kernel_release(), "") << i;
    EXPECT_EQ(s.kernel_cmdline(), "") << i;
    EXPECT_EQ(s.microarch(), "") << i;
    EXPECT_EQ(s.boot_id(), boots[i]) << i;
    EXPECT_EQ(s.peer_host(), peers[i]) << i;
    EXPECT_EQ(s.metric(), "m") << i;
  }
}

TEST(ShareOriginTest, ABuiltKernelsCommitAndBuildIdAreSharedToo) {
  v1::SampleBatch batch;
  for (int i = 0; i < 2; ++i) {
    v1::Sample s = Taken("h1", "boot-a", "");
    s.set_commit("c0ffee");
    s.set_build_id("1a2b3c4d5e6f7a8b");
    *batch.add_samples() = s;
  }
  ShareOrigin(batch);
  EXPECT_EQ(batch.shared_origin().commit(), "c0ffee");
  EXPECT_EQ(batch.shared_origin().build_id(), "1a2b3c4d5e6f7a8b");
  EXPECT_EQ(batch.samples(1).commit(), "");
  EXPECT_EQ(batch.samples(1).build_id(), "");
}

TEST(ShareOriginTest, AnEmptyBatchStaysEmpty) {
  v1::SampleBatch batch;
  ShareOrigin(batch);
  EXPECT_FALSE(batch.has_shared_origin());
  EXPECT_EQ(batch.samples_size(), 0);
}

}  // namespace
}  // namespace tlbfleet::agent
