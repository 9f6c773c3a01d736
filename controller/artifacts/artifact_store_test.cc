#include "controller/artifacts/artifact_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "common/artifacts/artifact_for_test.h"
#include "common/files.h"
#include "common/temp_dir_for_test.h"
#include "controller/artifacts/paths.h"

namespace tlbfleet::artifacts {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

// Sends what the store does not hold yet, in chunks of `chunk` bytes, and finishes.
absl::StatusOr<std::string> Upload(ArtifactStore& store, const TestArtifact& a,
                                   size_t chunk = 1000) {
  absl::StatusOr<UploadState> state = store.BeginUpload(a.manifest);
  if (!state.ok()) return state.status();
  if (state->published) return state->artifact_id;
  for (const auto& [name, bytes] : a.contents) {
    for (uint64_t at = state->received[name]; at < bytes.size(); at += chunk) {
      absl::StatusOr<uint64_t> held =
          store.AppendChunk(state->upload_id, name, at, std::string_view(bytes).substr(at, chunk));
      if (!held.ok()) return held.status();
    }
  }
  return store.FinishUpload(state->upload_id);
}

// All of file `name` of artifact `id`, read back in chunks as a fetcher would.
std::string ReadAll(ArtifactStore& store, const std::string& id, const std::string& name) {
  std::string out;
  for (;;) {
    absl::StatusOr<std::string> chunk = store.ReadChunk(id, name, out.size(), 700);
    if (!chunk.ok()) return "<" + chunk.status().ToString() + ">";
    if (chunk->empty()) return out;
    out += *chunk;
  }
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

class ArtifactStoreTest : public ::testing::Test {
 protected:
  ArtifactStore::Options Opts(uint64_t quota = 1'000'000) {
    ArtifactStore::Options o;
    o.quota_bytes = quota;
    o.clock = &clock_;
    o.disk = &disk_;
    return o;
  }
  // (Re)opens the store: what a controller restart does.
  ArtifactStore& Reopen(uint64_t quota = 1'000'000) {
    store_.reset();
    absl::StatusOr<std::unique_ptr<ArtifactStore>> s = ArtifactStore::Open(dir_, Opts(quota));
    EXPECT_TRUE(s.ok()) << s.status();
    store_ = s.ok() ? *std::move(s) : nullptr;
    return *store_;
  }

  TempDir tmp_;
  const std::string dir_ = paths::ArtifactDirForDatabase(tmp_.File("tlbfleet.db"));
  FakeClock clock_;
  FullDisk disk_;
  std::unique_ptr<ArtifactStore> store_;
};

TEST_F(ArtifactStoreTest, LivesBesideTheDatabase) {
  EXPECT_EQ(paths::ArtifactDirForDatabase("/var/lib/tlbfleet/tlbfleet.db"),
            "/var/lib/tlbfleet/tlbfleet.db.artifacts");
  ArtifactStore& store = Reopen();
  EXPECT_EQ(store.dir(), dir_);
  EXPECT_THAT(Entries(dir_),
              ElementsAre("incoming", "index", "lock", "objects", "quarantine", "trash"));
}

TEST_F(ArtifactStoreTest, TheSameBuildUploadedTwiceIsOneArtifact) {
  ArtifactStore& store = Reopen();
  TestArtifact a = MakeSizedArtifact("build-1", 5'000);
  absl::StatusOr<UploadState> first = store.BeginUpload(a.manifest);
  absl::StatusOr<UploadState> second = store.BeginUpload(a.manifest);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->upload_id, second->upload_id);
  EXPECT_EQ(first->artifact_id, a.id());

  absl::StatusOr<std::string> id = Upload(store, a);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, a.id());
  absl::StatusOr<UploadState> again = store.BeginUpload(a.manifest);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->published);
  EXPECT_EQ(again->received["bzImage"], a.contents["bzImage"].size());
  EXPECT_EQ(store.List().size(), 1u);
  EXPECT_EQ(store.UsedBytes(), 5'000u);

  absl::StatusOr<ArtifactManifest> m = store.Manifest(a.id());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(EncodeManifest(*m), EncodeManifest(a.manifest));
  for (const auto& [name, bytes] : a.contents) EXPECT_EQ(ReadAll(store, a.id(), name), bytes);
}

TEST_F(ArtifactStoreTest, AnUploadResumesAfterARestart) {
  TestArtifact a = MakeSizedArtifact("build-1", 10'000);
  {
    ArtifactStore& store = Reopen();
    absl::StatusOr<UploadState> state = store.BeginUpload(a.manifest);
    ASSERT_TRUE(state.ok());
    ASSERT_TRUE(store
                    .AppendChunk(state->upload_id, "bzImage", 0,
                                 std::string_view(a.contents["bzImage"]).substr(0, 3000))
                    .ok());
  }
  ArtifactStore& store = Reopen();  // the controller was killed mid-upload
  absl::StatusOr<UploadState> state = store.BeginUpload(a.manifest);
  ASSERT_TRUE(state.ok());
  EXPECT_FALSE(state->published);
  EXPECT_EQ(state->received["bzImage"], 3000u);
  EXPECT_EQ(state->received["config"], 0u);

  // A chunk at another offset than the store holds is refused, saying what it holds.
  absl::StatusOr<uint64_t> wrong = store.AppendChunk(state->upload_id, "bzImage", 0, "x");
  EXPECT_TRUE(absl::IsFailedPrecondition(wrong.status()));
  EXPECT_THAT(wrong.status().message(), HasSubstr("the store holds 3000 bytes"));
  // Finishing before everything arrived keeps the upload.
  absl::StatusOr<std::string> early = store.FinishUpload(state->upload_id);
  EXPECT_TRUE(absl::IsFailedPrecondition(early.status()));
  EXPECT_THAT(early.status().message(), HasSubstr("System.map: 0 of 2500 bytes received"));

  absl::StatusOr<std::string> id = Upload(store, a);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(ReadAll(store, *id, "bzImage"), a.contents["bzImage"]);
  EXPECT_THAT(Entries(paths::IncomingDir(dir_)), ElementsAre());
}

TEST_F(ArtifactStoreTest, AppendRefusesWhatTheManifestDoesNotAllow) {
  ArtifactStore& store = Reopen();
  TestArtifact a = MakeTestArtifact("b", {{"bzImage", "12345"}});
  absl::StatusOr<UploadState> state = store.BeginUpload(a.manifest);
  ASSERT_TRUE(state.ok());
  EXPECT_TRUE(
      absl::IsInvalidArgument(store.AppendChunk(state->upload_id, "vmlinux", 0, "1").status()));
  absl::StatusOr<uint64_t> past = store.AppendChunk(state->upload_id, "bzImage", 0, "123456");
  EXPECT_TRUE(absl::IsInvalidArgument(past.status()));
  EXPECT_THAT(past.status().message(), HasSubstr("go past its size, 5"));
  EXPECT_TRUE(
      absl::IsNotFound(store.AppendChunk(std::string(64, 'a'), "bzImage", 0, "1").status()));
  ArtifactStore::Options small = Opts();
  store_.reset();
  small.max_chunk_bytes = 2;
  absl::StatusOr<std::unique_ptr<ArtifactStore>> s = ArtifactStore::Open(dir_, small);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(
      absl::IsInvalidArgument((*s)->AppendChunk(state->upload_id, "bzImage", 0, "123").status()));
}

TEST_F(ArtifactStoreTest, BadManifestIsRefusedNamingTheField) {
  ArtifactStore& store = Reopen();
  TestArtifact a = MakeTestArtifact("b", {{"bzImage", "1"}});
  a.manifest.commit = "HEAD";
  absl::StatusOr<UploadState> state = store.BeginUpload(a.manifest);
  EXPECT_TRUE(absl::IsInvalidArgument(state.status()));
  EXPECT_THAT(state.status().message(), HasSubstr("manifest commit"));
}

TEST_F(ArtifactStoreTest, AChecksumMismatchIsRefusedAndTheUploadDiscarded) {
  ArtifactStore& store = Reopen();
  TestArtifact a = MakeSizedArtifact("build-1", 4'000);
  a.contents["config"][17] ^= 1;  // sent bytes differ from what the manifest says
  absl::StatusOr<std::string> id = Upload(store, a);
  ASSERT_TRUE(absl::IsDataLoss(id.status())) << id.status();
  EXPECT_THAT(id.status().message(), HasSubstr("refused: file config: 1000 bytes, sha256"));
  EXPECT_TRUE(absl::IsNotFound(store.Manifest(a.id()).status()));
  EXPECT_THAT(Entries(paths::ObjectsDir(dir_)), ElementsAre());
  EXPECT_THAT(Entries(paths::IncomingDir(dir_)), ElementsAre());
  EXPECT_THAT(Entries(paths::TrashDir(dir_)), ElementsAre());
  absl::StatusOr<UploadState> fresh = store.BeginUpload(a.manifest);  // starts from nothing
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->received["bzImage"], 0u);
}

TEST_F(ArtifactStoreTest, KilledBeforeFinishServesNothingAndResumes) {
  TestArtifact a = MakeSizedArtifact("build-1", 4'000);
  {
    ArtifactStore& store = Reopen();
    absl::StatusOr<UploadState> state = store.BeginUpload(a.manifest);
    ASSERT_TRUE(state.ok());
    for (const auto& [name, bytes] : a.contents) {
      ASSERT_TRUE(store.AppendChunk(state->upload_id, name, 0, bytes).ok());
    }
    // kill -9 here: every byte written, nothing renamed.
  }
  ArtifactStore& store = Reopen();
  EXPECT_TRUE(absl::IsNotFound(store.Manifest(a.id()).status()));
  EXPECT_TRUE(absl::IsNotFound(store.ReadChunk(a.id(), "bzImage", 0, 100).status()));
  EXPECT_THAT(Entries(paths::ObjectsDir(dir_)), ElementsAre());
  absl::StatusOr<UploadState> state = store.BeginUpload(a.manifest);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->received["bzImage"], 2'000u);
  absl::StatusOr<std::string> id = store.FinishUpload(state->upload_id);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(ReadAll(store, a.id(), "config"), a.contents["config"]);
}

TEST_F(ArtifactStoreTest, AHalfCopiedObjectIsQuarantinedOnOpenNotServed) {
  TestArtifact a = MakeSizedArtifact("build-1", 4'000);
  ASSERT_TRUE(Upload(Reopen(), a).ok());
  store_.reset();
  // Something (a restore from backup, a human) left an object with a short file.
  fs::resize_file(ArtifactDataFile(paths::ObjectDir(dir_, a.id()), "bzImage"), 10);
  ASSERT_TRUE(WriteFileAtomic(paths::TrashDir(dir_) + "/leftover", "x").ok());
  ArtifactStore& store = Reopen();
  EXPECT_TRUE(absl::IsNotFound(store.Manifest(a.id()).status()));
  EXPECT_EQ(store.UsedBytes(), 0u);
  ASSERT_EQ(Entries(paths::QuarantineDir(dir_)).size(), 1u);
  EXPECT_THAT(Entries(paths::QuarantineDir(dir_))[0], HasSubstr(a.id()));
  EXPECT_THAT(Entries(paths::TrashDir(dir_)), ElementsAre());
}

TEST_F(ArtifactStoreTest, DiskFullDuringAnAppendKeepsWhatWasHeld) {
  ArtifactStore& store = Reopen();
  TestArtifact a = MakeSizedArtifact("build-1", 4'000);
  absl::StatusOr<UploadState> state = store.BeginUpload(a.manifest);
  ASSERT_TRUE(state.ok());
  disk_.write_budget = 1'500;
  const std::string& image = a.contents["bzImage"];
  ASSERT_TRUE(store.AppendChunk(state->upload_id, "bzImage", 0, image.substr(0, 1000)).ok());
  absl::StatusOr<uint64_t> full =
      store.AppendChunk(state->upload_id, "bzImage", 1000, image.substr(1000, 1000));
  ASSERT_TRUE(absl::IsResourceExhausted(full.status())) << full.status();
  EXPECT_THAT(full.status().message(), HasSubstr("No space left on device"));
  EXPECT_EQ(fs::file_size(ArtifactDataFile(paths::IncomingUploadDir(dir_, a.id()), "bzImage")),
            1000u);  // the 500 bytes that fit were cut off again

  disk_.write_budget = -1;  // space freed: the uploader resumes from what the store says
  state = store.BeginUpload(a.manifest);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->received["bzImage"], 1000u);
  absl::StatusOr<std::string> id = Upload(store, a);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(ReadAll(store, *id, "bzImage"), image);
}

TEST_F(ArtifactStoreTest, DiskFullWhilePublishingPublishesNothing) {
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(step);
    ArtifactStore& store = Reopen();
    TestArtifact a = MakeSizedArtifact(absl::StrCat("build-", step), 4'000);
    disk_.fail_sync = step == 0;
    disk_.fail_rename = step == 1;
    disk_.fail_write_file = step == 2;  // the upload's manifest, at Begin
    absl::StatusOr<std::string> id = Upload(store, a);
    disk_.fail_sync = disk_.fail_rename = disk_.fail_write_file = false;
    ASSERT_TRUE(absl::IsResourceExhausted(id.status())) << id.status();
    EXPECT_TRUE(absl::IsNotFound(store.Manifest(a.id()).status()));
    EXPECT_THAT(Entries(paths::ObjectsDir(dir_)), ElementsAre());
    EXPECT_EQ(store.UsedBytes(), 0u);
  }
  // Nothing half-written comes back after a restart either.
  ArtifactStore& store = Reopen();
  EXPECT_THAT(Entries(paths::ObjectsDir(dir_)), ElementsAre());
  EXPECT_TRUE(store.List().empty());
}

TEST_F(ArtifactStoreTest, PublishingEvictsTheLeastRecentlyUsedUnpinned) {
  ArtifactStore& store = Reopen(/*quota=*/3'000);
  std::vector<TestArtifact> a;
  for (int i = 0; i < 5; ++i) a.push_back(MakeSizedArtifact(absl::StrCat("build-", i), 1'000, i));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Upload(store, a[i]).ok());
    clock_.Advance(absl::Minutes(5));
  }
  ASSERT_TRUE(store.Pin(a[0].id(), "run-7").ok());  // oldest, but a run needs it
  clock_.Advance(absl::Minutes(5));
  ASSERT_TRUE(store.ReadChunk(a[1].id(), "bzImage", 0, 10).ok());  // 1 is used again: 2 is oldest

  ASSERT_TRUE(Upload(store, a[3]).ok());
  auto ids = [&] {
    std::vector<std::string> out;
    for (const ArtifactInfo& info : store.List()) out.push_back(info.id);
    return out;
  };
  std::vector<std::string> want = {a[0].id(), a[1].id(), a[3].id()};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(ids(), want);
  EXPECT_EQ(store.UsedBytes(), 3'000u);
  EXPECT_THAT(Entries(paths::TrashDir(dir_)), ElementsAre());

  // Unpinned, 0 is the oldest again.
  ASSERT_TRUE(store.UnpinOwner("run-7").ok());
  clock_.Advance(absl::Minutes(5));
  ASSERT_TRUE(Upload(store, a[4]).ok());
  want = {a[1].id(), a[3].id(), a[4].id()};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(ids(), want);
}

TEST_F(ArtifactStoreTest, PinsSurviveARestart) {
  ArtifactStore* store = &Reopen(2'000);
  TestArtifact a = MakeSizedArtifact("a", 1'000, 1), b = MakeSizedArtifact("b", 1'000, 2),
               c = MakeSizedArtifact("c", 1'000, 3);
  ASSERT_TRUE(Upload(*store, a).ok());
  ASSERT_TRUE(store->Pin(a.id(), "run-1").ok());
  clock_.Advance(absl::Minutes(5));
  ASSERT_TRUE(Upload(*store, b).ok());
  store = &Reopen(2'000);
  ASSERT_EQ(store->List().size(), 2u);
  EXPECT_THAT(store->List()[a.id() < b.id() ? 0 : 1].pins, ElementsAre("run-1"));
  ASSERT_TRUE(Upload(*store, c).ok());  // b goes, though a is older
  EXPECT_TRUE(store->Manifest(a.id()).ok());
  EXPECT_TRUE(absl::IsNotFound(store->Manifest(b.id()).status()));
  EXPECT_TRUE(absl::IsNotFound(store->Pin(b.id(), "run-1")));
  EXPECT_TRUE(absl::IsInvalidArgument(store->Pin(a.id(), "run 1")));
  EXPECT_TRUE(store->Unpin(b.id(), "run-1").ok());  // idempotent
}

TEST_F(ArtifactStoreTest, LastUseSurvivesARestart) {
  ArtifactStore* store = &Reopen(2'000);
  TestArtifact a = MakeSizedArtifact("a", 1'000, 1), b = MakeSizedArtifact("b", 1'000, 2),
               c = MakeSizedArtifact("c", 1'000, 3);
  ASSERT_TRUE(Upload(*store, a).ok());
  clock_.Advance(absl::Minutes(5));
  ASSERT_TRUE(Upload(*store, b).ok());
  clock_.Advance(absl::Minutes(5));
  ASSERT_TRUE(store->Manifest(a.id()).ok());  // a fetch of a: now b is the older
  store = &Reopen(2'000);
  ASSERT_TRUE(Upload(*store, c).ok());
  EXPECT_TRUE(store->Manifest(a.id()).ok());
  EXPECT_TRUE(absl::IsNotFound(store->Manifest(b.id()).status()));
}

TEST_F(ArtifactStoreTest, AnArtifactOverTheQuotaIsRefused) {
  ArtifactStore& store = Reopen(/*quota=*/3'000);
  absl::StatusOr<UploadState> state = store.BeginUpload(MakeSizedArtifact("big", 3'001).manifest);
  ASSERT_TRUE(absl::IsResourceExhausted(state.status()));
  EXPECT_THAT(state.status().message(),
              HasSubstr("artifact of 3001 bytes is over the artifact quota of 3000 bytes"));
  EXPECT_THAT(Entries(paths::IncomingDir(dir_)), ElementsAre());
}

TEST_F(ArtifactStoreTest, AnArtifactThatCannotFitBesidePinnedOnesIsRefused) {
  ArtifactStore& store = Reopen(/*quota=*/3'000);
  TestArtifact a = MakeSizedArtifact("a", 2'000), b = MakeSizedArtifact("b", 1'500);
  ASSERT_TRUE(Upload(store, a).ok());
  ASSERT_TRUE(store.Pin(a.id(), "run-1").ok());
  absl::StatusOr<std::string> id = Upload(store, b);
  ASSERT_TRUE(absl::IsResourceExhausted(id.status())) << id.status();
  EXPECT_THAT(id.status().message(),
              HasSubstr("of 1500 bytes does not fit in the artifact quota of 3000 bytes: 2000 "
                        "bytes are pinned by runs, 0 unpinned"));
  EXPECT_TRUE(store.Manifest(a.id()).ok());  // nothing evicted for nothing
  EXPECT_TRUE(absl::IsNotFound(store.Manifest(b.id()).status()));
  EXPECT_THAT(Entries(paths::IncomingDir(dir_)), ElementsAre());
}

TEST_F(ArtifactStoreTest, ALoweredQuotaEvictsOnOpen) {
  ArtifactStore* store = &Reopen(3'000);
  TestArtifact a = MakeSizedArtifact("a", 1'000, 1), b = MakeSizedArtifact("b", 1'000, 2);
  ASSERT_TRUE(Upload(*store, a).ok());
  clock_.Advance(absl::Minutes(5));
  ASSERT_TRUE(Upload(*store, b).ok());
  store = &Reopen(1'500);
  EXPECT_EQ(store->UsedBytes(), 1'000u);
  EXPECT_TRUE(store->Manifest(b.id()).ok());
}

TEST_F(ArtifactStoreTest, VerifyQuarantinesACorruptedObject) {
  ArtifactStore& store = Reopen();
  TestArtifact a = MakeSizedArtifact("a", 4'000);
  ASSERT_TRUE(Upload(store, a).ok());
  ASSERT_TRUE(store.Pin(a.id(), "run-1").ok());
  EXPECT_TRUE(store.Verify(a.id()).ok());

  const std::string path = ArtifactDataFile(paths::ObjectDir(dir_, a.id()), "System.map");
  std::string bytes = *ReadFile(path);
  bytes[100] ^= 0x40;  // a bit flipped on disk, same size
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  absl::Status s = store.Verify(a.id());
  ASSERT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("quarantined: file System.map: 1000 bytes, sha256"));
  EXPECT_TRUE(absl::IsNotFound(store.Manifest(a.id()).status()));
  EXPECT_TRUE(absl::IsNotFound(store.ReadChunk(a.id(), "System.map", 0, 10).status()));
  EXPECT_EQ(store.UsedBytes(), 0u);
  EXPECT_THAT(Entries(paths::ObjectsDir(dir_)), ElementsAre());
  EXPECT_EQ(Entries(paths::QuarantineDir(dir_)).size(), 1u);
  EXPECT_TRUE(absl::IsNotFound(store.Verify(a.id())));
  // Still gone after a restart; the same build can be uploaded again.
  ArtifactStore& reopened = Reopen();
  EXPECT_TRUE(absl::IsNotFound(reopened.Manifest(a.id()).status()));
  EXPECT_TRUE(Upload(reopened, a).ok());
}

TEST_F(ArtifactStoreTest, BytesThatRotOnDiskAreQuarantinedWhenServedNotFetchedForever) {
  ArtifactStore& store = Reopen();
  TestArtifact a = MakeSizedArtifact("a", 4'000);
  ASSERT_TRUE(Upload(store, a).ok());
  ASSERT_TRUE(store.Pin(a.id(), "run-1").ok());
  const std::string good = ReadAll(store, a.id(), "System.map");
  ASSERT_EQ(good.size(), 1000u);

  const std::string path = ArtifactDataFile(paths::ObjectDir(dir_, a.id()), "System.map");
  std::string bytes = good;
  bytes[10] ^= 0x01;  // rotted after it was served once, same size
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  // Within the interval the file is not hashed again at every fetch (it was checked at the
  // first fetch's end): the rotted bytes still go out, and the fetcher refuses them.
  clock_.Advance(absl::Minutes(1));
  EXPECT_EQ(ReadAll(store, a.id(), "System.map"), bytes);
  // Once the interval has passed, the read reaching the end checks the file: quarantined,
  // never served again, and the same build can be uploaded again.
  clock_.Advance(absl::Minutes(10));
  const std::string after = ReadAll(store, a.id(), "System.map");
  EXPECT_THAT(after, HasSubstr("DATA_LOSS"));
  EXPECT_THAT(after, HasSubstr("quarantined: file System.map: 1000 bytes, sha256"));
  EXPECT_TRUE(absl::IsNotFound(store.Manifest(a.id()).status()));
  EXPECT_EQ(Entries(paths::QuarantineDir(dir_)).size(), 1u);
  EXPECT_EQ(store.UsedBytes(), 0u);
  EXPECT_TRUE(Upload(store, a).ok());
  EXPECT_EQ(ReadAll(store, a.id(), "System.map"), good);
}

TEST_F(ArtifactStoreTest, AReadThatStopsBeforeTheEndChecksNothing) {
  ArtifactStore& store = Reopen();
  TestArtifact a = MakeTestArtifact("a", {{"bzImage", "0123456789"}});
  ASSERT_TRUE(Upload(store, a).ok());
  const std::string path = ArtifactDataFile(paths::ObjectDir(dir_, a.id()), "bzImage");
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << "0123456780";
  }
  EXPECT_EQ(*store.ReadChunk(a.id(), "bzImage", 0, 4), "0123");
  EXPECT_TRUE(store.Manifest(a.id()).ok());
  EXPECT_TRUE(absl::IsDataLoss(store.ReadChunk(a.id(), "bzImage", 4, 100).status()));
  EXPECT_TRUE(absl::IsNotFound(store.Manifest(a.id()).status()));
}

TEST_F(ArtifactStoreTest, ReadChunkAtAndPastTheEnd) {
  ArtifactStore& store = Reopen();
  TestArtifact a = MakeTestArtifact("a", {{"bzImage", "0123456789"}});
  ASSERT_TRUE(Upload(store, a).ok());
  EXPECT_EQ(*store.ReadChunk(a.id(), "bzImage", 4, 3), "456");
  EXPECT_EQ(*store.ReadChunk(a.id(), "bzImage", 8, 100), "89");
  EXPECT_EQ(*store.ReadChunk(a.id(), "bzImage", 10, 100), "");
  EXPECT_TRUE(absl::IsOutOfRange(store.ReadChunk(a.id(), "bzImage", 11, 1).status()));
  EXPECT_TRUE(absl::IsNotFound(store.ReadChunk(a.id(), "vmlinux", 0, 1).status()));
}

TEST_F(ArtifactStoreTest, AnAbandonedUploadIsDiscarded) {
  ArtifactStore& store = Reopen();
  TestArtifact a = MakeSizedArtifact("a", 1'000), b = MakeSizedArtifact("b", 1'000);
  absl::StatusOr<UploadState> state = store.BeginUpload(a.manifest);
  ASSERT_TRUE(state.ok());
  clock_.Advance(absl::Hours(25));
  ASSERT_TRUE(store.BeginUpload(b.manifest).ok());
  EXPECT_TRUE(absl::IsNotFound(store.AppendChunk(state->upload_id, "bzImage", 0, "x").status()));
  EXPECT_THAT(Entries(paths::IncomingDir(dir_)), ElementsAre(b.id()));
  EXPECT_TRUE(absl::IsNotFound(store.AbortUpload(state->upload_id)));
  EXPECT_TRUE(store.AbortUpload(b.id()).ok());
  EXPECT_THAT(Entries(paths::IncomingDir(dir_)), ElementsAre());
}

TEST_F(ArtifactStoreTest, OneProcessPerDirectory) {
  Reopen();
  absl::StatusOr<std::unique_ptr<ArtifactStore>> second = ArtifactStore::Open(dir_, Opts());
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
  EXPECT_THAT(second.status().message(), HasSubstr("in use by another process (pid "));
  EXPECT_TRUE(absl::IsInvalidArgument(ArtifactStore::Open(tmp_.File("x"), Opts(0)).status()));
}

TEST_F(ArtifactStoreTest, ConcurrentUploadsAndReadsStayWithinTheQuota) {
  ArtifactStore& store = Reopen(/*quota=*/20'000);
  constexpr int kThreads = 4, kPerThread = 6;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        TestArtifact a = MakeSizedArtifact(absl::StrCat("t", t, "-", i), 3'000, t * 100 + i);
        absl::StatusOr<std::string> id = Upload(store, a, 700);
        if (!id.ok()) {
          ++failures;
          continue;
        }
        // Evicted already by another thread's publish is fine; wrong bytes are not.
        std::string got = ReadAll(store, *id, "bzImage");
        if (got != a.contents["bzImage"] && got.find("NOT_FOUND") == std::string::npos) ++failures;
        if (store.UsedBytes() > 20'000) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_LE(store.UsedBytes(), 20'000u);
  EXPECT_EQ(store.List().size(), 6u);
}

}  // namespace
}  // namespace tlbfleet::artifacts
