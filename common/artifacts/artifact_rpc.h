#pragma once
// The agent's side of ArtifactService (proto/tlbfleet/v1/artifact.proto): a builder uploads
// the artifact it built (UploadArtifact), a testing agent fetches one through ArtifactFetcher
// over MakeGrpcChunkSource. The controller's side is controller/api/artifact_service.h.
//
// Its own library (tlbfleet_artifact_rpc: gRPC, the generated code, tlbfleet_artifact_client)
// because the agent links it, and no agent code links or includes the controller.
//
// Errors keep the code the controller answered with (a gRPC code is an absl code), with the
// call, file and offset put in front of the controller's message.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/artifacts/artifact_fetcher.h"
#include "tlbfleet/v1/artifact.grpc.pb.h"

namespace tlbfleet::artifacts {

// The largest chunk AppendChunk accepts and ReadChunk returns over the wire, well under gRPC's
// 4 MiB message limit.
inline constexpr uint64_t kMaxArtifactChunkBytes = uint64_t{1} << 20;

// Adds credentials (and a deadline) to each call's context.
using PrepareContext = std::function<void(grpc::ClientContext&)>;

struct UploadResult {
  std::string artifact_id;
  uint64_t bytes_sent = 0;  // file bytes this call sent (over all its attempts)
  // The store had it before this call sent anything: nothing was sent, nothing finished.
  bool already_published = false;
};

// Uploads the artifact in `artifact_dir` (manifest + files/, the layout of manifest.h, as the
// agent builder writes it) to the controller: BeginUpload, then each file from the size the
// store already holds (resumable: calling again after a failure continues), FinishUpload.
// `cancelled` (may be null) is polled between chunks: CANCELLED when it says so, the store
// keeping what it received. UNAVAILABLE (a lost connection, a controller restarting) is retried
// up to 4 times in a row with a backoff from 250 ms to 2 s, each retry resuming from
// BeginUpload's received sizes. Local problems: INVALID_ARGUMENT for a bad manifest file,
// DATA_LOSS for a file whose size differs from the manifest's (nothing is sent then).
absl::StatusOr<UploadResult> UploadArtifact(v1::ArtifactService::StubInterface& stub,
                                            const PrepareContext& prepare,
                                            const std::string& artifact_dir,
                                            const std::function<bool()>& cancelled = nullptr);

// An ArtifactChunkSource (artifact_fetcher.h) over the ArtifactService, for ArtifactFetcher.
// Asks for at most kMaxArtifactChunkBytes per ReadChunk. Thread-safe (a gRPC stub is).
std::unique_ptr<ArtifactChunkSource> MakeGrpcChunkSource(
    std::shared_ptr<v1::ArtifactService::StubInterface> stub, PrepareContext prepare);

}  // namespace tlbfleet::artifacts
