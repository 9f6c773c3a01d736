#pragma once
// ArtifactService (proto/tlbfleet/v1/artifact.proto): the controller's artifact store
// (controller/artifacts/artifact_store.h) on gRPC, on the same port as AgentService. Builder
// agents upload the kernels they built; testing agents fetch them (ArtifactFetcher over
// common/artifacts/artifact_rpc.h's chunk source).
//
// Authentication is the agent stream's: a token of role agent (or development mode), and a
// client certificate the --tls-client-ca signed when mutual TLS is on. Anything else is
// UNAUTHENTICATED or PERMISSION_DENIED before the request is looked at.
//
// Validation at this boundary, naming the field: ids that are not artifact ids, file names the
// manifest format does not allow, chunks over kMaxArtifactChunkBytes (1 MiB): INVALID_ARGUMENT.
// An artifact larger than the whole quota is INVALID_ARGUMENT too ("artifact: 12.3 MiB is over
// the artifact quota 10 MiB (--artifact-quota)"): the issue's bad input, which no retry cures.
// Every other store error passes on with its code (absl and gRPC codes are the same numbers):
// FAILED_PRECONDITION for an offset that is not what the store holds, DATA_LOSS for a checksum
// that differs at FinishUpload, RESOURCE_EXHAUSTED for a full disk or pinned artifacts leaving
// no room, NOT_FOUND for an unknown artifact or upload.
//
// Handlers run inline on gRPC's callback threads, as FleetService's do: a chunk is at most
// 1 MiB of file I/O. FinishUpload hashes the whole upload (a kernel: about a second).

#include <cstdint>
#include <string>
#include <utility>

#include "controller/api/auth.h"
#include "controller/api/grpc_services.h"
#include "controller/artifacts/artifact_store.h"
#include "tlbfleet/v1/artifact.grpc.pb.h"

namespace tlbfleet::api {

class ArtifactServiceImpl final : public v1::ArtifactService::CallbackService {
 public:
  struct Options {
    // The store's quota, for the message refusing an artifact larger than it.
    uint64_t quota_bytes = uint64_t{10} << 30;
    // Mutual TLS (--tls-client-ca): a caller without a certificate the CA signed is refused.
    bool require_client_certificate = false;
    GrpcCallHook on_call;  // told of every finished call, like the other services
  };

  // `store` and `auth` are not owned and must outlive the service.
  ArtifactServiceImpl(artifacts::ArtifactStore& store, Authenticator& auth, Options options)
      : store_(store), auth_(auth), options_(std::move(options)) {}

  grpc::ServerUnaryReactor* BeginUpload(grpc::CallbackServerContext* context,
                                        const v1::BeginUploadRequest* request,
                                        v1::BeginUploadResponse* response) override;
  grpc::ServerUnaryReactor* AppendChunk(grpc::CallbackServerContext* context,
                                        const v1::AppendChunkRequest* request,
                                        v1::AppendChunkResponse* response) override;
  grpc::ServerUnaryReactor* FinishUpload(grpc::CallbackServerContext* context,
                                         const v1::FinishUploadRequest* request,
                                         v1::FinishUploadResponse* response) override;
  grpc::ServerUnaryReactor* GetManifest(grpc::CallbackServerContext* context,
                                        const v1::GetManifestRequest* request,
                                        v1::GetManifestResponse* response) override;
  grpc::ServerUnaryReactor* ReadChunk(grpc::CallbackServerContext* context,
                                      const v1::ReadChunkRequest* request,
                                      v1::ReadChunkResponse* response) override;

 private:
  // OK when the caller may use the store (the agent stream's rules).
  absl::Status Allowed(grpc::CallbackServerContext* context, const char* method);

  absl::StatusOr<v1::BeginUploadResponse> DoBeginUpload(const v1::BeginUploadRequest& request);
  absl::StatusOr<v1::AppendChunkResponse> DoAppendChunk(const v1::AppendChunkRequest& request);
  absl::StatusOr<v1::FinishUploadResponse> DoFinishUpload(const v1::FinishUploadRequest& request);
  absl::StatusOr<v1::GetManifestResponse> DoGetManifest(const v1::GetManifestRequest& request);
  absl::StatusOr<v1::ReadChunkResponse> DoReadChunk(const v1::ReadChunkRequest& request);

  artifacts::ArtifactStore& store_;
  Authenticator& auth_;
  const Options options_;
};

// "512 bytes", "12.3 MiB", "10 GiB": a size for a person (binary units, one decimal unless
// whole).
std::string HumanBytes(uint64_t bytes);

}  // namespace tlbfleet::api
