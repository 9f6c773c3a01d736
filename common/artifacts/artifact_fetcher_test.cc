#include "common/artifacts/artifact_fetcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "absl/synchronization/notification.h"
#include "common/artifacts/artifact_for_test.h"
#include "common/files.h"
#include "common/temp_dir_for_test.h"

namespace tlbfleet::artifacts {
namespace {

using ::testing::HasSubstr;

// The staged file `name` of artifact `a`, read back.
std::string Staged(const ArtifactFetcher& fetcher, const TestArtifact& a, const std::string& name) {
  absl::StatusOr<std::string> bytes = ReadFile(ArtifactDataFile(fetcher.ArtifactDir(a.id()), name));
  return bytes.ok() ? *bytes : "<" + std::string(bytes.status().message()) + ">";
}

class ArtifactFetcherTest : public ::testing::Test {
 protected:
  ArtifactFetcher::Options SmallChunks() {
    ArtifactFetcher::Options o;
    o.chunk_bytes = 1000;
    o.disk = &disk_;
    return o;
  }

  TempDir staging_;
  MemoryChunkSource source_;
  FullDisk disk_;
  TestArtifact artifact_ = MakeSizedArtifact("build-1", 10'000);
};

TEST_F(ArtifactFetcherTest, FetchesVerifiesAndStages) {
  source_.Add(artifact_);
  ArtifactFetcher fetcher(staging_.path(), source_, SmallChunks());
  absl::StatusOr<FetchedArtifact> got = fetcher.Fetch(artifact_.id());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->dir, staging_.File(artifact_.id()));
  EXPECT_EQ(got->bytes_fetched, 10'000u);
  EXPECT_EQ(got->refetched_files, 0);
  EXPECT_FALSE(got->already_present);
  EXPECT_EQ(EncodeManifest(got->manifest), EncodeManifest(artifact_.manifest));
  for (const auto& [name, bytes] : artifact_.contents)
    EXPECT_EQ(Staged(fetcher, artifact_, name), bytes);
  EXPECT_FALSE(std::filesystem::exists(fetcher.PartialDir(artifact_.id())));

  // Fetched once: a second call reads nothing from the source.
  const int reads = source_.reads();
  got = fetcher.Fetch(artifact_.id());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->already_present);
  EXPECT_EQ(source_.reads(), reads);
}

TEST_F(ArtifactFetcherTest, CorruptedInTransitIsRefusedAndFetchedAgain) {
  source_.Add(artifact_);
  source_.CorruptNextChunks(1);
  ArtifactFetcher fetcher(staging_.path(), source_, SmallChunks());
  absl::StatusOr<FetchedArtifact> got = fetcher.Fetch(artifact_.id());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->refetched_files, 1);
  for (const auto& [name, bytes] : artifact_.contents)
    EXPECT_EQ(Staged(fetcher, artifact_, name), bytes);
}

TEST_F(ArtifactFetcherTest, CorruptedEveryTimeIsRefusedAndNothingStaged) {
  source_.Add(artifact_);
  source_.CorruptNextChunks(1'000'000);
  ArtifactFetcher fetcher(staging_.path(), source_, SmallChunks());
  absl::StatusOr<FetchedArtifact> got = fetcher.Fetch(artifact_.id());
  ASSERT_TRUE(absl::IsDataLoss(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("refused after 3 fetches: file System.map: "));
  EXPECT_FALSE(std::filesystem::exists(fetcher.ArtifactDir(artifact_.id())));
  EXPECT_FALSE(std::filesystem::exists(fetcher.PartialDir(artifact_.id())));
}

TEST_F(ArtifactFetcherTest, ManifestCorruptedInTransitIsCheckedAgainstTheId) {
  source_.Add(artifact_);
  source_.CorruptNextManifests(1);
  ArtifactFetcher fetcher(staging_.path(), source_, SmallChunks());
  EXPECT_TRUE(fetcher.Fetch(artifact_.id()).ok());

  TestArtifact other = MakeSizedArtifact("build-2", 100);
  source_.Add(other);
  source_.CorruptNextManifests(3);
  absl::StatusOr<FetchedArtifact> got = fetcher.Fetch(other.id());
  EXPECT_TRUE(absl::IsDataLoss(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("the manifest arrived with sha256"));
}

TEST_F(ArtifactFetcherTest, ResumesWhereALostConnectionLeftIt) {
  source_.Add(artifact_);
  source_.FailReadsAfter(4);
  ArtifactFetcher fetcher(staging_.path(), source_, SmallChunks());
  absl::StatusOr<FetchedArtifact> got = fetcher.Fetch(artifact_.id());
  ASSERT_TRUE(absl::IsUnavailable(got.status())) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("file bzImage at offset 1000: connection lost"));
  EXPECT_FALSE(std::filesystem::exists(fetcher.ArtifactDir(artifact_.id())));

  // A new fetcher (an agent restarted) goes on from the 3500 bytes it holds: all of
  // System.map, 1000 of bzImage.
  source_.FailReadsAfter(-1);
  ArtifactFetcher again(staging_.path(), source_, SmallChunks());
  got = again.Fetch(artifact_.id());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->bytes_fetched, 6'500u);
  for (const auto& [name, bytes] : artifact_.contents)
    EXPECT_EQ(Staged(again, artifact_, name), bytes);
}

TEST_F(ArtifactFetcherTest, DiskFullKeepsWholeChunksAndResumes) {
  source_.Add(artifact_);
  disk_.write_budget = 2'300;  // System.map's third chunk (500 bytes) does not fit
  ArtifactFetcher fetcher(staging_.path(), source_, SmallChunks());
  absl::StatusOr<FetchedArtifact> got = fetcher.Fetch(artifact_.id());
  ASSERT_TRUE(absl::IsResourceExhausted(got.status())) << got.status();
  EXPECT_FALSE(std::filesystem::exists(fetcher.ArtifactDir(artifact_.id())));
  // The half-written chunk was cut off: the partial file holds two whole chunks.
  std::error_code ec;
  EXPECT_EQ(std::filesystem::file_size(
                ArtifactDataFile(fetcher.PartialDir(artifact_.id()), "System.map"), ec),
            2'000u);

  disk_.write_budget = -1;
  got = fetcher.Fetch(artifact_.id());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->bytes_fetched, 8'000u);
  EXPECT_EQ(got->refetched_files, 0);
}

TEST_F(ArtifactFetcherTest, DiskFullAtFsyncStagesNothing) {
  source_.Add(artifact_);
  disk_.fail_sync = true;
  ArtifactFetcher fetcher(staging_.path(), source_, SmallChunks());
  EXPECT_TRUE(absl::IsResourceExhausted(fetcher.Fetch(artifact_.id()).status()));
  EXPECT_FALSE(std::filesystem::exists(fetcher.ArtifactDir(artifact_.id())));
  disk_.fail_sync = false;
  EXPECT_TRUE(fetcher.Fetch(artifact_.id()).ok());
}

TEST_F(ArtifactFetcherTest, AStaleLongerPartialFileStartsOver) {
  source_.Add(artifact_);
  ArtifactFetcher fetcher(staging_.path(), source_, SmallChunks());
  const std::string partial = fetcher.PartialDir(artifact_.id());
  ASSERT_TRUE(MakeDirs(ArtifactDataDir(partial)).ok());
  ASSERT_TRUE(WriteFileAtomic(ArtifactDataFile(partial, "config"), std::string(50'000, 'x')).ok());
  absl::StatusOr<FetchedArtifact> got = fetcher.Fetch(artifact_.id());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Staged(fetcher, artifact_, "config"), artifact_.contents.at("config"));
}

TEST_F(ArtifactFetcherTest, RefusesABadIdAndAnUnknownArtifact) {
  ArtifactFetcher fetcher(staging_.path(), source_, SmallChunks());
  EXPECT_TRUE(absl::IsInvalidArgument(fetcher.Fetch("../etc").status()));
  EXPECT_TRUE(absl::IsNotFound(fetcher.Fetch(artifact_.id()).status()));
}

// A source whose first ReadChunk waits until released, to hold a fetch in flight.
class BlockingSource : public MemoryChunkSource {
 public:
  absl::StatusOr<std::string> ReadChunk(std::string_view id, std::string_view name, uint64_t offset,
                                        uint64_t max_bytes) override {
    if (!entered.HasBeenNotified()) entered.Notify();
    release.WaitForNotification();
    return MemoryChunkSource::ReadChunk(id, name, offset, max_bytes);
  }
  absl::Notification entered;
  absl::Notification release;
};

TEST_F(ArtifactFetcherTest, ASecondFetchOfTheSameIdIsRefusedWhileTheFirstRuns) {
  BlockingSource source;
  source.Add(artifact_);
  ArtifactFetcher fetcher(staging_.path(), source, SmallChunks());
  absl::StatusOr<FetchedArtifact> first;
  std::thread t([&] { first = fetcher.Fetch(artifact_.id()); });
  source.entered.WaitForNotification();
  EXPECT_TRUE(absl::IsAborted(fetcher.Fetch(artifact_.id()).status()));
  source.release.Notify();
  t.join();
  EXPECT_TRUE(first.ok()) << first.status();
}

}  // namespace
}  // namespace tlbfleet::artifacts
