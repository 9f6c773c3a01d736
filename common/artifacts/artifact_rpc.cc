#include "common/artifacts/artifact_rpc.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/artifacts/sha256.h"
#include "common/files.h"
#include "common/scoped_fd.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::artifacts {

namespace {

// UNAVAILABLE in a row before an upload gives up; any chunk that gets through resets the count.
constexpr int kUploadRetries = 4;
constexpr absl::Duration kFirstUploadBackoff = absl::Milliseconds(250);
constexpr absl::Duration kMaxUploadBackoff = absl::Seconds(2);
// How often `cancelled` is polled while waiting to retry.
constexpr absl::Duration kCancelPoll = absl::Milliseconds(50);

// gRPC's codes are absl's, number for number.
absl::Status RpcStatusFromGrpc(const grpc::Status& s, std::string_view what) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(std::string(what), ": ", s.error_message()));
}

grpc::ClientContext& Prepared(grpc::ClientContext& context, const PrepareContext& prepare) {
  if (prepare) prepare(context);
  return context;
}

// Reads exactly `n` bytes of `fd` at `offset` (EINTR and short reads retried); DATA_LOSS when
// the file ends first (it shrank since its size was checked).
absl::StatusOr<std::string> ReadExactlyAt(int fd, uint64_t offset, uint64_t n,
                                          const std::string& path) {
  std::string out(n, '\0');
  uint64_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, out.data() + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoStatus(errno, absl::StrCat("read ", path));
    if (r == 0) {
      return absl::DataLossError(
          absl::StrCat(path, ": ends at ", offset + got, " bytes while being uploaded"));
    }
    got += static_cast<uint64_t>(r);
  }
  return out;
}

// One upload, its manifest read and its files' sizes checked once; Attempt() may run several
// times (after UNAVAILABLE), each resuming from what the store says it holds.
class Uploader {
 public:
  Uploader(v1::ArtifactService::StubInterface& stub, const PrepareContext& prepare,
           const std::function<bool()>& cancelled, std::string dir, std::string manifest_text,
           ArtifactManifest manifest)
      : stub_(stub),
        prepare_(prepare),
        cancelled_(cancelled),
        dir_(std::move(dir)),
        manifest_text_(std::move(manifest_text)),
        manifest_(std::move(manifest)) {
    result_.artifact_id = Sha256Hex(manifest_text_);
  }

  absl::Status Attempt() {
    v1::BeginUploadRequest begin;
    begin.set_manifest(manifest_text_);
    v1::BeginUploadResponse state;
    {
      grpc::ClientContext context;
      absl::Status s = RpcStatusFromGrpc(
          stub_.BeginUpload(&Prepared(context, prepare_), begin, &state), "BeginUpload");
      if (!s.ok()) return s;
    }
    if (state.already_published()) {
      // Published before this call sent anything, or by this call's own FinishUpload whose
      // answer was lost.
      result_.already_published = !began_;
      return absl::OkStatus();
    }
    began_ = true;
    if (state.upload_id().empty()) {
      return absl::InternalError("BeginUpload: the controller answered no upload_id");
    }
    for (const ArtifactFile& file : manifest_.files) {
      auto it = state.received().find(file.name);
      const uint64_t have = it == state.received().end() ? 0 : it->second;
      if (have > file.size) {
        return absl::InternalError(
            absl::StrCat("BeginUpload: the controller holds ", have, " bytes of file ", file.name,
                         ", more than its size in the manifest, ", file.size));
      }
      if (absl::Status s = SendFile(state.upload_id(), file, have); !s.ok()) return s;
    }
    if (Cancelled()) return CancelledStatus();
    v1::FinishUploadRequest finish;
    finish.set_upload_id(state.upload_id());
    v1::FinishUploadResponse finished;
    grpc::ClientContext context;
    absl::Status s = RpcStatusFromGrpc(
        stub_.FinishUpload(&Prepared(context, prepare_), finish, &finished), "FinishUpload");
    if (!s.ok()) return s;
    if (finished.artifact_id() != result_.artifact_id) {
      return absl::DataLossError(absl::StrCat("FinishUpload: the controller published ",
                                              finished.artifact_id(), ", not ", result_.artifact_id,
                                              " (the manifest's id)"));
    }
    return absl::OkStatus();
  }

  bool Cancelled() const { return cancelled_ != nullptr && cancelled_(); }
  absl::Status CancelledStatus() const {
    return absl::CancelledError(absl::StrCat("upload of artifact ", result_.artifact_id,
                                             " cancelled after ", result_.bytes_sent,
                                             " bytes sent; the controller keeps them"));
  }
  const UploadResult& result() const { return result_; }

 private:
  absl::Status SendFile(const std::string& upload_id, const ArtifactFile& file, uint64_t have) {
    if (have == file.size) return absl::OkStatus();
    const std::string path = ArtifactDataFile(dir_, file.name);
    ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return ErrnoStatus(errno, path);
    while (have < file.size) {
      if (Cancelled()) return CancelledStatus();
      const uint64_t n = std::min(kMaxArtifactChunkBytes, file.size - have);
      absl::StatusOr<std::string> bytes = ReadExactlyAt(fd.get(), have, n, path);
      if (!bytes.ok()) return bytes.status();
      v1::AppendChunkRequest chunk;
      chunk.set_upload_id(upload_id);
      chunk.set_file(file.name);
      chunk.set_offset(have);
      chunk.set_data(*std::move(bytes));
      v1::AppendChunkResponse appended;
      grpc::ClientContext context;
      absl::Status s =
          RpcStatusFromGrpc(stub_.AppendChunk(&Prepared(context, prepare_), chunk, &appended),
                            absl::StrCat("AppendChunk ", file.name, " at ", have));
      if (!s.ok()) return s;
      if (appended.received() != have + n) {
        return absl::InternalError(absl::StrCat("AppendChunk ", file.name, " at ", have,
                                                ": the controller holds ", appended.received(),
                                                " bytes after it, not ", have + n));
      }
      have += n;
      result_.bytes_sent += n;
    }
    return absl::OkStatus();
  }

  v1::ArtifactService::StubInterface& stub_;
  const PrepareContext& prepare_;
  const std::function<bool()>& cancelled_;
  const std::string dir_;
  const std::string manifest_text_;
  const ArtifactManifest manifest_;
  UploadResult result_;
  bool began_ = false;  // a BeginUpload of this call found it unpublished
};

class GrpcChunkSource final : public ArtifactChunkSource {
 public:
  GrpcChunkSource(std::shared_ptr<v1::ArtifactService::StubInterface> stub, PrepareContext prepare)
      : stub_(std::move(stub)), prepare_(std::move(prepare)) {}

  absl::StatusOr<std::string> ManifestText(std::string_view id) override {
    v1::GetManifestRequest request;
    request.set_artifact_id(std::string(id));
    v1::GetManifestResponse response;
    grpc::ClientContext context;
    absl::Status s = RpcStatusFromGrpc(
        stub_->GetManifest(&Prepared(context, prepare_), request, &response), "GetManifest");
    if (!s.ok()) return s;
    return std::move(*response.mutable_manifest());
  }

  absl::StatusOr<std::string> ReadChunk(std::string_view id, std::string_view name, uint64_t offset,
                                        uint64_t max_bytes) override {
    v1::ReadChunkRequest request;
    request.set_artifact_id(std::string(id));
    request.set_file(std::string(name));
    request.set_offset(offset);
    // 0 would mean "the most" to the controller; the fetcher never asks for 0.
    request.set_max_bytes(
        static_cast<uint32_t>(std::clamp<uint64_t>(max_bytes, 1, kMaxArtifactChunkBytes)));
    v1::ReadChunkResponse response;
    grpc::ClientContext context;
    absl::Status s = RpcStatusFromGrpc(
        stub_->ReadChunk(&Prepared(context, prepare_), request, &response), "ReadChunk");
    if (!s.ok()) return s;
    return std::move(*response.mutable_data());
  }

 private:
  const std::shared_ptr<v1::ArtifactService::StubInterface> stub_;
  const PrepareContext prepare_;
};

}  // namespace

absl::StatusOr<UploadResult> UploadArtifact(v1::ArtifactService::StubInterface& stub,
                                            const PrepareContext& prepare,
                                            const std::string& artifact_dir,
                                            const std::function<bool()>& cancelled) {
  const std::string manifest_path = ArtifactManifestFile(artifact_dir);
  absl::StatusOr<std::string> text = ReadFile(manifest_path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("artifact ", artifact_dir, ": ", text.status().message()));
  }
  absl::StatusOr<ArtifactManifest> manifest = ParseManifest(*text);
  if (!manifest.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(manifest_path, ": ", manifest.status().message()));
  }
  // Sizes first, so that a half-written artifact sends nothing. Checksums are the store's
  // business at FinishUpload (reading every file twice here would double the upload's I/O).
  for (const ArtifactFile& file : manifest->files) {
    const std::string path = ArtifactDataFile(artifact_dir, file.name);
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, path);
    if (static_cast<uint64_t>(st.st_size) != file.size) {
      return absl::DataLossError(
          absl::StrCat(path, ": ", st.st_size, " bytes; the manifest says ", file.size));
    }
  }

  Uploader uploader(stub, prepare, cancelled, artifact_dir, *std::move(text), *std::move(manifest));
  int failures = 0;
  absl::Duration backoff = kFirstUploadBackoff;
  while (true) {
    const uint64_t sent_before = uploader.result().bytes_sent;
    absl::Status s = uploader.Attempt();
    if (s.ok()) return uploader.result();
    if (!absl::IsUnavailable(s)) return s;
    if (uploader.result().bytes_sent > sent_before) {  // it got somewhere: a fresh budget
      failures = 0;
      backoff = kFirstUploadBackoff;
    }
    if (++failures > kUploadRetries) return s;
    spdlog::warn("artifact {}: {}; resuming in {} ({} bytes sent so far)",
                 uploader.result().artifact_id, std::string(s.message()),
                 absl::FormatDuration(backoff), uploader.result().bytes_sent);
    for (absl::Time until = absl::Now() + backoff; absl::Now() < until;) {
      if (uploader.Cancelled()) return uploader.CancelledStatus();
      absl::SleepFor(std::min(kCancelPoll, until - absl::Now()));
    }
    backoff = std::min(backoff * 2, kMaxUploadBackoff);
  }
}

std::unique_ptr<ArtifactChunkSource> MakeGrpcChunkSource(
    std::shared_ptr<v1::ArtifactService::StubInterface> stub, PrepareContext prepare) {
  return std::make_unique<GrpcChunkSource>(std::move(stub), std::move(prepare));
}

}  // namespace tlbfleet::artifacts
