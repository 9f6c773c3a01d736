// The two halves together: a fetcher (the agent's side) reading from the store (the
// controller's) through a transport that may corrupt bytes on the way.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/artifacts/artifact_fetcher.h"
#include "common/artifacts/artifact_for_test.h"
#include "common/files.h"
#include "common/temp_dir_for_test.h"
#include "controller/artifacts/artifact_store.h"
#include "controller/artifacts/paths.h"

namespace tlbfleet::artifacts {
namespace {

using ::testing::HasSubstr;

// What a transport does: the store's answers passed on, with one byte of the first chunk of
// each file named in `corrupt_once` flipped on the way.
class StoreTransit : public ArtifactChunkSource {
 public:
  explicit StoreTransit(ArtifactStore& store) : store_(store) {}
  absl::StatusOr<std::string> ManifestText(std::string_view id) override {
    absl::StatusOr<ArtifactManifest> m = store_.Manifest(id);
    if (!m.ok()) return m.status();
    return EncodeManifest(*m);
  }
  absl::StatusOr<std::string> ReadChunk(std::string_view id, std::string_view name, uint64_t offset,
                                        uint64_t max_bytes) override {
    absl::StatusOr<std::string> chunk = store_.ReadChunk(id, name, offset, max_bytes);
    if (chunk.ok() && !chunk->empty() && corrupt_once.erase(std::string(name)) > 0) {
      (*chunk)[0] ^= 0x80;
    }
    return chunk;
  }
  std::set<std::string> corrupt_once;

 private:
  ArtifactStore& store_;
};

class StoreFetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<ArtifactStore>> s =
        ArtifactStore::Open(paths::ArtifactDirForDatabase(controller_.File("db")), {});
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = *std::move(s);
    absl::StatusOr<UploadState> state = store_->BeginUpload(artifact_.manifest);
    ASSERT_TRUE(state.ok()) << state.status();
    for (const auto& [name, bytes] : artifact_.contents) {
      ASSERT_TRUE(store_->AppendChunk(state->upload_id, name, 0, bytes).ok());
    }
  }
  void Publish() { ASSERT_TRUE(store_->FinishUpload(artifact_.id()).ok()); }

  TempDir controller_{"tlbfleet-controller"};
  TempDir agent_{"tlbfleet-agent"};
  TestArtifact artifact_ = MakeSizedArtifact("build-1", 300'000);
  std::unique_ptr<ArtifactStore> store_;
};

TEST_F(StoreFetchTest, CorruptedInTransitIsRefusedThenFetchedAgain) {
  Publish();
  StoreTransit transit(*store_);
  transit.corrupt_once = {"System.map", "config"};
  ArtifactFetcher fetcher(agent_.path(), transit, {.chunk_bytes = 64 * 1024});
  absl::StatusOr<FetchedArtifact> got = fetcher.Fetch(artifact_.id());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->refetched_files, 2);
  EXPECT_EQ(got->bytes_fetched, 300'000u + 2 * 75'000u);  // System.map and config twice
  for (const auto& [name, bytes] : artifact_.contents) {
    EXPECT_EQ(*ReadFile(ArtifactDataFile(got->dir, name)), bytes) << name;
  }
  EXPECT_TRUE(store_->Verify(artifact_.id()).ok());  // the store's copy was never wrong
}

TEST_F(StoreFetchTest, AnUnpublishedUploadCannotBeFetched) {
  StoreTransit transit(*store_);
  ArtifactFetcher fetcher(agent_.path(), transit);
  EXPECT_TRUE(absl::IsNotFound(fetcher.Fetch(artifact_.id()).status()));
  EXPECT_FALSE(std::filesystem::exists(fetcher.ArtifactDir(artifact_.id())));
}

TEST_F(StoreFetchTest, ACorruptedStoreCopyIsQuarantinedByTheFirstFetchThatReadsItWhole) {
  Publish();
  const std::string path =
      ArtifactDataFile(paths::ObjectDir(store_->dir(), artifact_.id()), "config");
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1234);
    f.put('\x7f');
  }
  StoreTransit transit(*store_);
  ArtifactFetcher fetcher(agent_.path(), transit);
  absl::StatusOr<FetchedArtifact> got = fetcher.Fetch(artifact_.id());
  // The store checks the file as the read reaches its end: the fetch fails naming the file,
  // and the copy is never served again (not fetched and refused by every agent in turn).
  ASSERT_TRUE(absl::IsDataLoss(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("quarantined: file config"));
  EXPECT_FALSE(std::filesystem::exists(fetcher.ArtifactDir(artifact_.id())));
  EXPECT_TRUE(absl::IsNotFound(store_->Manifest(artifact_.id()).status()));
  EXPECT_TRUE(absl::IsNotFound(fetcher.Fetch(artifact_.id()).status()));
}

TEST_F(StoreFetchTest, ACopyThatRotsAfterItsCheckIsRefusedByTheFetcherThenQuarantinedByVerify) {
  Publish();
  StoreTransit transit(*store_);
  {
    TempDir first_agent{"tlbfleet-agent"};
    ArtifactFetcher first(first_agent.path(), transit);
    ASSERT_TRUE(first.Fetch(artifact_.id()).ok());  // checked whole by the store as served
  }
  const std::string path =
      ArtifactDataFile(paths::ObjectDir(store_->dir(), artifact_.id()), "config");
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1234);
    f.put('\x7f');
  }
  // Within the store's check interval the bytes go out as they are; the fetcher's checksum
  // refuses them, and Verify (on demand) quarantines the copy.
  ArtifactFetcher fetcher(agent_.path(), transit);
  absl::StatusOr<FetchedArtifact> got = fetcher.Fetch(artifact_.id());
  ASSERT_TRUE(absl::IsDataLoss(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("refused after 3 fetches: file config"));
  EXPECT_FALSE(std::filesystem::exists(fetcher.ArtifactDir(artifact_.id())));
  EXPECT_TRUE(absl::IsDataLoss(store_->Verify(artifact_.id())));
  EXPECT_TRUE(absl::IsNotFound(fetcher.Fetch(artifact_.id()).status()));
}

}  // namespace
}  // namespace tlbfleet::artifacts
