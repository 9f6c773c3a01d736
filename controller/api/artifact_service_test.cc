// ArtifactService end to end in one process: the real store in a temp dir, the service on a
// real gRPC server on loopback, the agent's client (common/artifacts/artifact_rpc.h) uploading
// real files and ArtifactFetcher fetching them back, with the agent stream's authentication.

#include "controller/api/artifact_service.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/artifacts/artifact_fetcher.h"
#include "common/artifacts/artifact_for_test.h"
#include "common/artifacts/artifact_rpc.h"
#include "common/files.h"
#include "common/temp_dir_for_test.h"
#include "controller/api/auth.h"
#include "controller/api/credentials.h"
#include "controller/artifacts/artifact_store.h"
#include "controller/store/auth_store.h"

namespace tlbfleet::api {
namespace {

using artifacts::ArtifactStore;
using artifacts::TestArtifact;
using ::testing::HasSubstr;

constexpr uint64_t kMiB = uint64_t{1} << 20;

// The store as it is, except that AppendChunk answers UNAVAILABLE (writing nothing) on the
// calls numbered in `unavailable_appends` (1-based): a controller that went away mid-upload.
class FlakyStore final : public ArtifactStore {
 public:
  explicit FlakyStore(ArtifactStore& store) : store_(store) {}

  std::set<int> unavailable_appends;
  bool always_unavailable = false;
  std::atomic<int> appends{0};

  absl::StatusOr<artifacts::UploadState> BeginUpload(
      const artifacts::ArtifactManifest& manifest) override {
    return store_.BeginUpload(manifest);
  }
  absl::StatusOr<uint64_t> AppendChunk(std::string_view upload_id, std::string_view file,
                                       uint64_t offset, std::string_view bytes) override {
    const int n = ++appends;
    if (always_unavailable || unavailable_appends.count(n) > 0) {
      return absl::UnavailableError("the controller is restarting");
    }
    return store_.AppendChunk(upload_id, file, offset, bytes);
  }
  absl::StatusOr<std::string> FinishUpload(std::string_view upload_id) override {
    return store_.FinishUpload(upload_id);
  }
  absl::Status AbortUpload(std::string_view upload_id) override {
    return store_.AbortUpload(upload_id);
  }
  absl::StatusOr<artifacts::ArtifactManifest> Manifest(std::string_view id) override {
    return store_.Manifest(id);
  }
  absl::StatusOr<std::string> ReadChunk(std::string_view id, std::string_view file, uint64_t offset,
                                        uint64_t max_bytes) override {
    return store_.ReadChunk(id, file, offset, max_bytes);
  }
  absl::Status Verify(std::string_view id) override { return store_.Verify(id); }
  absl::Status Pin(std::string_view id, std::string_view owner) override {
    return store_.Pin(id, owner);
  }
  absl::Status Unpin(std::string_view id, std::string_view owner) override {
    return store_.Unpin(id, owner);
  }
  absl::Status UnpinOwner(std::string_view owner) override { return store_.UnpinOwner(owner); }
  std::vector<artifacts::ArtifactInfo> List() const override { return store_.List(); }
  uint64_t UsedBytes() const override { return store_.UsedBytes(); }
  const std::string& dir() const override { return store_.dir(); }

 private:
  ArtifactStore& store_;
};

// What a network that flips bits does: one byte of the first chunk of each file named in
// `corrupt_once` flipped on the way from the gRPC source to the fetcher.
class CorruptingSource final : public artifacts::ArtifactChunkSource {
 public:
  explicit CorruptingSource(artifacts::ArtifactChunkSource& inner) : inner_(inner) {}
  absl::StatusOr<std::string> ManifestText(std::string_view id) override {
    return inner_.ManifestText(id);
  }
  absl::StatusOr<std::string> ReadChunk(std::string_view id, std::string_view name, uint64_t offset,
                                        uint64_t max_bytes) override {
    absl::StatusOr<std::string> chunk = inner_.ReadChunk(id, name, offset, max_bytes);
    if (chunk.ok() && !chunk->empty() && corrupt_once.erase(std::string(name)) > 0) {
      (*chunk)[chunk->size() / 2] ^= 0x04;
    }
    return chunk;
  }
  std::set<std::string> corrupt_once;

 private:
  artifacts::ArtifactChunkSource& inner_;
};

// An artifact directory as the agent's builder leaves it (manifest + files/).
void WriteArtifactDir(const std::string& dir, const TestArtifact& artifact) {
  ASSERT_TRUE(MakeDirs(artifacts::ArtifactDataDir(dir)).ok());
  ASSERT_TRUE(WriteFileAtomic(artifacts::ArtifactManifestFile(dir),
                              artifacts::EncodeManifest(artifact.manifest))
                  .ok());
  for (const auto& [name, bytes] : artifact.contents) {
    ASSERT_TRUE(WriteFileAtomic(artifacts::ArtifactDataFile(dir, name), bytes).ok());
  }
}

class ArtifactServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto auth_store = store::AuthStore::Open(dir_.path() + "/fleet.db");
    ASSERT_TRUE(auth_store.ok()) << auth_store.status();
    auth_store_ = *std::move(auth_store);
    AuthOptions auth_options;
    auth_options.loopback_only = true;
    auth_ = std::make_unique<Authenticator>(*auth_store_, auth_options);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  // A token in the database (which also ends development mode).
  std::string CreateToken(const std::string& name, v1::Role role) {
    NewToken t = MakeToken(name, role, auth_->Now(), 0);
    EXPECT_TRUE(auth_store_->InsertToken(t.record).ok());
    return t.token;
  }

  // The store (quota `quota`), the service over it (through `flaky_`), a server and a stub.
  void Start(uint64_t quota = uint64_t{10} << 30, bool require_client_certificate = false) {
    ArtifactStore::Options store_options;
    store_options.quota_bytes = quota;
    auto store = ArtifactStore::Open(dir_.path() + "/fleet.db.artifacts", store_options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    flaky_ = std::make_unique<FlakyStore>(*store_);
    ArtifactServiceImpl::Options options;
    options.quota_bytes = quota;
    options.require_client_certificate = require_client_certificate;
    options.on_call = [this](const std::string& method, const std::string& code) {
      absl::MutexLock lock(&calls_mu_);
      calls_.push_back(method + " " + code);
    };
    service_ = std::make_unique<ArtifactServiceImpl>(*flaky_, *auth_, options);
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_TRUE(server_ != nullptr);
    ASSERT_NE(port, 0);
    stub_ = v1::ArtifactService::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                             grpc::InsecureChannelCredentials()));
  }

  // Credentials and a deadline, as the agent adds them.
  static artifacts::PrepareContext As(const std::string& token) {
    return [token](grpc::ClientContext& context) {
      if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    };
  }

  // An artifact written where a builder would leave it.
  std::string BuilderDir(const TestArtifact& artifact) {
    const std::string dir = builder_.path() + "/" + artifact.id();
    WriteArtifactDir(dir, artifact);
    return dir;
  }

  // The bytes the store holds of an upload in progress.
  uint64_t HeldBytes(const TestArtifact& artifact) {
    absl::StatusOr<artifacts::UploadState> state = store_->BeginUpload(artifact.manifest);
    EXPECT_TRUE(state.ok()) << state.status();
    uint64_t held = 0;
    if (state.ok()) {
      for (const auto& [file, bytes] : state->received) held += bytes;
    }
    return held;
  }

  void ExpectFetchedBytes(const artifacts::FetchedArtifact& got, const TestArtifact& artifact) {
    ASSERT_EQ(got.manifest.files.size(), artifact.contents.size());
    for (const auto& [name, bytes] : artifact.contents) {
      absl::StatusOr<std::string> fetched = ReadFile(artifacts::ArtifactDataFile(got.dir, name));
      ASSERT_TRUE(fetched.ok()) << fetched.status();
      EXPECT_TRUE(*fetched == bytes) << name << " differs";
    }
  }

  TempDir dir_{"tlbfleet-artifact-service"};
  TempDir builder_{"tlbfleet-builder"};
  TempDir agent_{"tlbfleet-agent"};
  std::unique_ptr<store::AuthStore> auth_store_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<ArtifactStore> store_;
  std::unique_ptr<FlakyStore> flaky_;
  std::unique_ptr<ArtifactServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<v1::ArtifactService::Stub> stub_;
  absl::Mutex calls_mu_;
  std::vector<std::string> calls_ ABSL_GUARDED_BY(calls_mu_);
};

TEST_F(ArtifactServiceTest, UploadThenFetchGivesTheSameBytesAndASecondUploadSendsNothing) {
  const std::string agent = CreateToken("builder-1", v1::ROLE_AGENT);
  Start();
  // 3 MiB over three files: bzImage 1.5 MiB (two chunks), System.map and config 0.75 MiB.
  TestArtifact artifact = artifacts::MakeSizedArtifact("build-1", 3 * kMiB);
  const std::string dir = BuilderDir(artifact);

  absl::StatusOr<artifacts::UploadResult> up = artifacts::UploadArtifact(*stub_, As(agent), dir);
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(up->artifact_id, artifact.id());
  EXPECT_EQ(up->bytes_sent, 3 * kMiB);
  EXPECT_FALSE(up->already_published);
  EXPECT_EQ(flaky_->appends.load(), 4);  // no chunk over 1 MiB, none sent twice

  std::unique_ptr<artifacts::ArtifactChunkSource> source =
      artifacts::MakeGrpcChunkSource(stub_, As(agent));
  artifacts::ArtifactFetcher fetcher(agent_.path(), *source);
  absl::StatusOr<artifacts::FetchedArtifact> got = fetcher.Fetch(artifact.id());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->bytes_fetched, 3 * kMiB);
  EXPECT_EQ(got->refetched_files, 0);
  ExpectFetchedBytes(*got, artifact);

  // Already published: nothing sent, nothing finished.
  absl::StatusOr<artifacts::UploadResult> again = artifacts::UploadArtifact(*stub_, As(agent), dir);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->already_published);
  EXPECT_EQ(again->bytes_sent, 0u);
  EXPECT_EQ(again->artifact_id, artifact.id());
  EXPECT_EQ(flaky_->appends.load(), 4);
  absl::MutexLock lock(&calls_mu_);
  EXPECT_THAT(calls_, ::testing::Contains("ArtifactService/FinishUpload OK").Times(1));
}

TEST_F(ArtifactServiceTest, AnInterruptedUploadResumesAndSendsOnlyTheRest) {
  const std::string agent = CreateToken("builder-1", v1::ROLE_AGENT);
  Start();
  TestArtifact artifact = artifacts::MakeSizedArtifact("build-2", 3 * kMiB);
  const std::string dir = BuilderDir(artifact);

  // Cancelled after two chunks: System.map (0.75 MiB, files go in name order) and the first
  // MiB of bzImage.
  int polls = 0;
  absl::StatusOr<artifacts::UploadResult> first =
      artifacts::UploadArtifact(*stub_, As(agent), dir, [&polls] { return ++polls > 2; });
  ASSERT_EQ(first.status().code(), absl::StatusCode::kCancelled) << first.status();
  EXPECT_THAT(first.status().message(), HasSubstr(artifact.id()));
  const uint64_t held = HeldBytes(artifact);
  EXPECT_EQ(held, 3 * kMiB / 4 + kMiB);
  EXPECT_FALSE(store_->Manifest(artifact.id()).ok());  // nothing published yet

  absl::StatusOr<artifacts::UploadResult> second =
      artifacts::UploadArtifact(*stub_, As(agent), dir);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->bytes_sent, 3 * kMiB - held);
  EXPECT_FALSE(second->already_published);
  EXPECT_EQ(flaky_->appends.load(), 4);  // two, then the other two

  std::unique_ptr<artifacts::ArtifactChunkSource> source =
      artifacts::MakeGrpcChunkSource(stub_, As(agent));
  artifacts::ArtifactFetcher fetcher(agent_.path(), *source);
  absl::StatusOr<artifacts::FetchedArtifact> got = fetcher.Fetch(artifact.id());
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectFetchedBytes(*got, artifact);
}

TEST_F(ArtifactServiceTest, UnavailableIsRetriedFromWhatTheStoreHolds) {
  const std::string agent = CreateToken("builder-1", v1::ROLE_AGENT);
  Start();
  TestArtifact artifact = artifacts::MakeSizedArtifact("build-3", 3 * kMiB);
  flaky_->unavailable_appends = {3, 4};  // twice in a row, in the middle of bzImage
  absl::StatusOr<artifacts::UploadResult> up =
      artifacts::UploadArtifact(*stub_, As(agent), BuilderDir(artifact));
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(up->bytes_sent, 3 * kMiB);  // nothing sent twice
  EXPECT_EQ(flaky_->appends.load(), 6);
  EXPECT_TRUE(store_->Verify(artifact.id()).ok());
}

TEST_F(ArtifactServiceTest, AnUploadGivesUpAfterAFewUnavailableInARow) {
  const std::string agent = CreateToken("builder-1", v1::ROLE_AGENT);
  Start();
  TestArtifact artifact = artifacts::MakeSizedArtifact("build-4", 64 * 1024);
  flaky_->always_unavailable = true;
  absl::StatusOr<artifacts::UploadResult> up =
      artifacts::UploadArtifact(*stub_, As(agent), BuilderDir(artifact));
  EXPECT_EQ(up.status().code(), absl::StatusCode::kUnavailable) << up.status();
  EXPECT_THAT(up.status().message(), HasSubstr("AppendChunk"));
  EXPECT_EQ(flaky_->appends.load(), 5);  // the first try and 4 retries
}

TEST_F(ArtifactServiceTest, CorruptedInTransitIsRefusedAndFetchedAgain) {
  const std::string agent = CreateToken("agent-1", v1::ROLE_AGENT);
  Start();
  TestArtifact artifact = artifacts::MakeSizedArtifact("build-5", 3 * kMiB);
  ASSERT_TRUE(artifacts::UploadArtifact(*stub_, As(agent), BuilderDir(artifact)).ok());

  std::unique_ptr<artifacts::ArtifactChunkSource> grpc_source =
      artifacts::MakeGrpcChunkSource(stub_, As(agent));
  CorruptingSource transit(*grpc_source);
  transit.corrupt_once = {"bzImage"};
  artifacts::ArtifactFetcher fetcher(agent_.path(), transit);
  absl::StatusOr<artifacts::FetchedArtifact> got = fetcher.Fetch(artifact.id());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->refetched_files, 1);
  EXPECT_EQ(got->bytes_fetched, 3 * kMiB + 3 * kMiB / 2);  // bzImage twice
  ExpectFetchedBytes(*got, artifact);
}

// Every method, called with `prepare`: the codes, in the order BeginUpload, AppendChunk,
// FinishUpload, GetManifest, ReadChunk.
std::vector<grpc::StatusCode> CallEveryMethod(v1::ArtifactService::Stub& stub,
                                              const artifacts::PrepareContext& prepare,
                                              const TestArtifact& artifact) {
  std::vector<grpc::StatusCode> codes;
  auto call = [&](auto method, const auto& request, auto response) {
    grpc::ClientContext context;
    prepare(context);
    codes.push_back((stub.*method)(&context, request, &response).error_code());
  };
  v1::BeginUploadRequest begin;
  begin.set_manifest(artifacts::EncodeManifest(artifact.manifest));
  call(&v1::ArtifactService::Stub::BeginUpload, begin, v1::BeginUploadResponse());
  v1::AppendChunkRequest append;
  append.set_upload_id(artifact.id());
  append.set_file(artifact.contents.begin()->first);
  append.set_data(artifact.contents.begin()->second);
  call(&v1::ArtifactService::Stub::AppendChunk, append, v1::AppendChunkResponse());
  v1::FinishUploadRequest finish;
  finish.set_upload_id(artifact.id());
  call(&v1::ArtifactService::Stub::FinishUpload, finish, v1::FinishUploadResponse());
  v1::GetManifestRequest manifest;
  manifest.set_artifact_id(artifact.id());
  call(&v1::ArtifactService::Stub::GetManifest, manifest, v1::GetManifestResponse());
  v1::ReadChunkRequest read;
  read.set_artifact_id(artifact.id());
  read.set_file(artifact.contents.begin()->first);
  call(&v1::ArtifactService::Stub::ReadChunk, read, v1::ReadChunkResponse());
  return codes;
}

TEST_F(ArtifactServiceTest, OnlyAgentCredentialsReachTheStore) {
  const std::string agent = CreateToken("agent-1", v1::ROLE_AGENT);
  const std::string viewer = CreateToken("viewer-1", v1::ROLE_VIEWER);
  const std::string admin = CreateToken("admin-1", v1::ROLE_ADMIN);
  Start();
  TestArtifact artifact = artifacts::MakeTestArtifact("build-6", {{"bzImage", "kernel"}});
  using C = grpc::StatusCode;
  const std::vector<C> unauthenticated(5, C::UNAUTHENTICATED);
  const std::vector<C> denied(5, C::PERMISSION_DENIED);
  EXPECT_EQ(CallEveryMethod(*stub_, As(""), artifact), unauthenticated);
  EXPECT_EQ(CallEveryMethod(*stub_, As("tlbf_0123456789abcdef_nope"), artifact), unauthenticated);
  EXPECT_EQ(CallEveryMethod(*stub_, As(viewer), artifact), denied);
  EXPECT_EQ(CallEveryMethod(*stub_, As(admin), artifact), denied);  // user roles never do
  EXPECT_FALSE(store_->Manifest(artifact.id()).ok());
  EXPECT_EQ(flaky_->appends.load(), 0);  // refused before the store was asked
  EXPECT_EQ(CallEveryMethod(*stub_, As(agent), artifact),
            std::vector<C>({C::OK, C::OK, C::OK, C::OK, C::OK}));
  absl::MutexLock lock(&calls_mu_);
  EXPECT_THAT(calls_, ::testing::Contains("ArtifactService/ReadChunk PERMISSION_DENIED"));
}

TEST_F(ArtifactServiceTest, DevelopmentModeNeedsNoToken) {
  Start();  // no token in the database, loopback only
  TestArtifact artifact = artifacts::MakeTestArtifact("build-7", {{"bzImage", "kernel"}});
  EXPECT_EQ(CallEveryMethod(*stub_, As(""), artifact),
            std::vector<grpc::StatusCode>(5, grpc::StatusCode::OK));
}

TEST_F(ArtifactServiceTest, MutualTlsRefusesAPeerWithoutACertificate) {
  const std::string agent = CreateToken("agent-1", v1::ROLE_AGENT);
  Start(uint64_t{10} << 30, /*require_client_certificate=*/true);
  TestArtifact artifact = artifacts::MakeTestArtifact("build-8", {{"bzImage", "kernel"}});
  v1::GetManifestRequest request;
  request.set_artifact_id(artifact.id());
  v1::GetManifestResponse response;
  grpc::ClientContext context;
  As(agent)(context);
  grpc::Status s = stub_->GetManifest(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("--tls-client-ca"));
}

TEST_F(ArtifactServiceTest, AnArtifactOverTheQuotaIsInvalidArgumentNamingTheQuota) {
  const std::string agent = CreateToken("builder-1", v1::ROLE_AGENT);
  Start(/*quota=*/kMiB);
  TestArtifact artifact = artifacts::MakeSizedArtifact("build-9", 3 * kMiB / 2);
  absl::StatusOr<artifacts::UploadResult> up =
      artifacts::UploadArtifact(*stub_, As(agent), BuilderDir(artifact));
  EXPECT_EQ(up.status().code(), absl::StatusCode::kInvalidArgument) << up.status();
  EXPECT_THAT(up.status().message(),
              HasSubstr("artifact: 1.5 MiB is over the artifact quota 1 MiB (--artifact-quota)"));
  EXPECT_EQ(flaky_->appends.load(), 0);
}

TEST_F(ArtifactServiceTest, BadInputIsInvalidArgumentNamingTheField) {
  const std::string agent = CreateToken("builder-1", v1::ROLE_AGENT);
  Start();
  TestArtifact artifact = artifacts::MakeSizedArtifact("build-10", 3 * kMiB);
  {
    grpc::ClientContext context;
    As(agent)(context);
    v1::BeginUploadRequest begin;
    begin.set_manifest(artifacts::EncodeManifest(artifact.manifest));
    v1::BeginUploadResponse state;
    ASSERT_TRUE(stub_->BeginUpload(&context, begin, &state).ok());
  }
  auto append = [&](const std::string& upload_id, const std::string& file, uint64_t offset,
                    std::string data) {
    grpc::ClientContext context;
    As(agent)(context);
    v1::AppendChunkRequest request;
    request.set_upload_id(upload_id);
    request.set_file(file);
    request.set_offset(offset);
    request.set_data(std::move(data));
    v1::AppendChunkResponse response;
    return stub_->AppendChunk(&context, request, &response);
  };
  grpc::Status over = append(artifact.id(), "bzImage", 0, std::string(kMiB + 1, 'x'));
  EXPECT_EQ(over.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(over.error_message(), HasSubstr("data: a chunk of 1048577 bytes"));
  EXPECT_EQ(flaky_->appends.load(), 0);  // refused before the store
  // Exactly 1 MiB is fine.
  EXPECT_TRUE(
      append(artifact.id(), "bzImage", 0, artifact.contents["bzImage"].substr(0, kMiB)).ok());

  grpc::Status bad_id = append("../../etc", "bzImage", 0, "x");
  EXPECT_EQ(bad_id.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad_id.error_message(), HasSubstr("upload_id: \"../../etc\" is not an artifact id"));
  grpc::Status bad_file = append(artifact.id(), "../passwd", 0, "x");
  EXPECT_EQ(bad_file.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad_file.error_message(), HasSubstr("file: \"../passwd\""));
  // The store's own refusals pass on with their codes.
  EXPECT_EQ(append(artifact.id(), "bzImage", 5, "x").error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);  // not where the store stands
  EXPECT_EQ(append(std::string(64, 'a'), "bzImage", 0, "x").error_code(),
            grpc::StatusCode::NOT_FOUND);  // no such upload

  {
    grpc::ClientContext context;
    As(agent)(context);
    v1::BeginUploadRequest begin;
    begin.set_manifest("tlbfleet-artifact-manifest 1\nsource linux\n");
    v1::BeginUploadResponse state;
    grpc::Status s = stub_->BeginUpload(&context, begin, &state);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("manifest"));
  }
  {
    grpc::ClientContext context;
    As(agent)(context);
    v1::ReadChunkRequest read;
    read.set_artifact_id("ABC");
    read.set_file("bzImage");
    v1::ReadChunkResponse response;
    grpc::Status s = stub_->ReadChunk(&context, read, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("artifact_id: \"ABC\""));
  }
  {
    grpc::ClientContext context;
    As(agent)(context);
    v1::GetManifestRequest request;
    request.set_artifact_id(std::string(64, 'b'));
    v1::GetManifestResponse response;
    EXPECT_EQ(stub_->GetManifest(&context, request, &response).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
}

TEST_F(ArtifactServiceTest, ReadChunkReturnsAtMostOneMiB) {
  const std::string agent = CreateToken("agent-1", v1::ROLE_AGENT);
  Start();
  TestArtifact artifact = artifacts::MakeSizedArtifact("build-11", 6 * kMiB);  // bzImage 3 MiB
  ASSERT_TRUE(artifacts::UploadArtifact(*stub_, As(agent), BuilderDir(artifact)).ok());
  for (uint32_t max : {0u, 4u << 20}) {
    grpc::ClientContext context;
    As(agent)(context);
    v1::ReadChunkRequest read;
    read.set_artifact_id(artifact.id());
    read.set_file("bzImage");
    read.set_offset(kMiB);
    read.set_max_bytes(max);
    v1::ReadChunkResponse response;
    ASSERT_TRUE(stub_->ReadChunk(&context, read, &response).ok());
    EXPECT_EQ(response.data().size(), kMiB) << max;
    EXPECT_TRUE(response.data() == artifact.contents["bzImage"].substr(kMiB, kMiB));
  }
}

TEST_F(ArtifactServiceTest, AnArtifactDirWhoseFileDiffersFromItsManifestSendsNothing) {
  const std::string agent = CreateToken("builder-1", v1::ROLE_AGENT);
  Start();
  TestArtifact artifact = artifacts::MakeSizedArtifact("build-12", 64 * 1024);
  const std::string dir = BuilderDir(artifact);
  ASSERT_TRUE(WriteFileAtomic(artifacts::ArtifactDataFile(dir, "config"), "short").ok());
  absl::StatusOr<artifacts::UploadResult> up = artifacts::UploadArtifact(*stub_, As(agent), dir);
  EXPECT_EQ(up.status().code(), absl::StatusCode::kDataLoss) << up.status();
  EXPECT_THAT(up.status().message(), HasSubstr("config: 5 bytes; the manifest says"));
  absl::MutexLock lock(&calls_mu_);
  EXPECT_TRUE(calls_.empty());
}

TEST(HumanBytesTest, BinaryUnitsWithOneDecimalUnlessWhole) {
  EXPECT_EQ(HumanBytes(512), "512 bytes");
  EXPECT_EQ(HumanBytes(1024), "1 KiB");
  EXPECT_EQ(HumanBytes(uint64_t{10} << 30), "10 GiB");
  EXPECT_EQ(HumanBytes(12'897'484), "12.3 MiB");
  EXPECT_EQ(HumanBytes(3 * kMiB / 2), "1.5 MiB");
}

}  // namespace
}  // namespace tlbfleet::api
