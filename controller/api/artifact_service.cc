#include "controller/api/artifact_service.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/artifacts/artifact_rpc.h"
#include "common/artifacts/manifest.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::api {

namespace {

absl::Status CheckArtifactIdField(const std::string& id, const char* field) {
  if (artifacts::ValidArtifactId(id)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": \"", id.substr(0, 80), "\" is not an artifact id (64 lowercase hex digits)"));
}

absl::Status CheckArtifactFileField(const std::string& name) {
  if (artifacts::ValidArtifactFileName(name)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("file: \"", name.substr(0, 140),
                   "\" is not an artifact file name (1 to 128 of [A-Za-z0-9._+-], not "
                   "starting with '.')"));
}

}  // namespace

std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " bytes");
  double value = static_cast<double>(bytes);
  int unit = -1;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  // Whole numbers without a decimal: "10 GiB", not "10.0 GiB".
  std::string number = absl::StrFormat("%.1f", value);
  if (number.size() > 2 && number.substr(number.size() - 2) == ".0") {
    number.resize(number.size() - 2);
  }
  return absl::StrCat(number, " ", kUnits[unit]);
}

absl::Status ArtifactServiceImpl::Allowed(grpc::CallbackServerContext* context,
                                          const char* method) {
  // As AgentServiceImpl::Connect: the agent role (or development mode), then mutual TLS.
  Caller caller = GrpcCaller(context, auth_);
  absl::Status allowed = caller.development_mode
                             ? absl::OkStatus()
                             : Require(caller, v1::ROLE_AGENT, "the artifact store");
  if (allowed.ok() && options_.require_client_certificate &&
      (context->auth_context() == nullptr || !context->auth_context()->IsPeerAuthenticated())) {
    allowed = absl::UnauthenticatedError(
        "the artifact store needs a client certificate signed by the controller's "
        "--tls-client-ca");
  }
  if (!allowed.ok()) {
    spdlog::warn("refusing ArtifactService/{} from {}: {}", method, context->peer(),
                 allowed.ToString());
  }
  return allowed;
}

// Each handler: authenticate, then the Do* call, then Reply (grpc_services.h).
#define TLB_ARTIFACT_METHOD(Name, Request, Response)                                              \
  grpc::ServerUnaryReactor* ArtifactServiceImpl::Name(                                            \
      grpc::CallbackServerContext* context, const v1::Request* request, v1::Response* response) { \
    absl::Status allowed = Allowed(context, #Name);                                               \
    absl::StatusOr<v1::Response> result =                                                         \
        allowed.ok() ? Do##Name(*request) : absl::StatusOr<v1::Response>(allowed);                \
    return Reply(context, std::move(result), response, options_.on_call,                          \
                 "ArtifactService/" #Name);                                                       \
  }

TLB_ARTIFACT_METHOD(BeginUpload, BeginUploadRequest, BeginUploadResponse)
TLB_ARTIFACT_METHOD(AppendChunk, AppendChunkRequest, AppendChunkResponse)
TLB_ARTIFACT_METHOD(FinishUpload, FinishUploadRequest, FinishUploadResponse)
TLB_ARTIFACT_METHOD(GetManifest, GetManifestRequest, GetManifestResponse)
TLB_ARTIFACT_METHOD(ReadChunk, ReadChunkRequest, ReadChunkResponse)

#undef TLB_ARTIFACT_METHOD

absl::StatusOr<v1::BeginUploadResponse> ArtifactServiceImpl::DoBeginUpload(
    const v1::BeginUploadRequest& request) {
  // ParseManifest's messages already name the manifest's field ("manifest commit: ...").
  absl::StatusOr<artifacts::ArtifactManifest> manifest =
      artifacts::ParseManifest(request.manifest());
  if (!manifest.ok()) return manifest.status();
  absl::StatusOr<artifacts::UploadState> state = store_.BeginUpload(*manifest);
  if (absl::IsResourceExhausted(state.status()) && manifest->TotalBytes() > options_.quota_bytes) {
    // Larger than the whole quota: bad input that no retry cures, unlike a full disk or
    // pinned artifacts leaving no room (those stay RESOURCE_EXHAUSTED).
    return absl::InvalidArgumentError(absl::StrCat(
        "artifact: ", HumanBytes(manifest->TotalBytes()), " is over the artifact quota ",
        HumanBytes(options_.quota_bytes), " (--artifact-quota)"));
  }
  if (!state.ok()) return state.status();
  v1::BeginUploadResponse response;
  response.set_upload_id(state->upload_id);
  response.set_already_published(state->published);
  for (const auto& [file, bytes] : state->received) (*response.mutable_received())[file] = bytes;
  return response;
}

absl::StatusOr<v1::AppendChunkResponse> ArtifactServiceImpl::DoAppendChunk(
    const v1::AppendChunkRequest& request) {
  if (absl::Status s = CheckArtifactIdField(request.upload_id(), "upload_id"); !s.ok()) return s;
  if (absl::Status s = CheckArtifactFileField(request.file()); !s.ok()) return s;
  if (request.data().size() > artifacts::kMaxArtifactChunkBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("data: a chunk of ", request.data().size(), " bytes is over the limit of ",
                     artifacts::kMaxArtifactChunkBytes, " bytes (1 MiB)"));
  }
  absl::StatusOr<uint64_t> received =
      store_.AppendChunk(request.upload_id(), request.file(), request.offset(), request.data());
  if (!received.ok()) return received.status();
  v1::AppendChunkResponse response;
  response.set_received(*received);
  return response;
}

absl::StatusOr<v1::FinishUploadResponse> ArtifactServiceImpl::DoFinishUpload(
    const v1::FinishUploadRequest& request) {
  if (absl::Status s = CheckArtifactIdField(request.upload_id(), "upload_id"); !s.ok()) return s;
  absl::StatusOr<std::string> id = store_.FinishUpload(request.upload_id());
  if (!id.ok()) return id.status();
  spdlog::info("artifacts: published {}", *id);
  v1::FinishUploadResponse response;
  response.set_artifact_id(*std::move(id));
  return response;
}

absl::StatusOr<v1::GetManifestResponse> ArtifactServiceImpl::DoGetManifest(
    const v1::GetManifestRequest& request) {
  if (absl::Status s = CheckArtifactIdField(request.artifact_id(), "artifact_id"); !s.ok()) {
    return s;
  }
  absl::StatusOr<artifacts::ArtifactManifest> manifest = store_.Manifest(request.artifact_id());
  if (!manifest.ok()) return manifest.status();
  v1::GetManifestResponse response;
  response.set_manifest(artifacts::EncodeManifest(*manifest));
  return response;
}

absl::StatusOr<v1::ReadChunkResponse> ArtifactServiceImpl::DoReadChunk(
    const v1::ReadChunkRequest& request) {
  if (absl::Status s = CheckArtifactIdField(request.artifact_id(), "artifact_id"); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckArtifactFileField(request.file()); !s.ok()) return s;
  const uint64_t max_bytes =
      request.max_bytes() == 0 || request.max_bytes() > artifacts::kMaxArtifactChunkBytes
          ? artifacts::kMaxArtifactChunkBytes
          : request.max_bytes();
  absl::StatusOr<std::string> data =
      store_.ReadChunk(request.artifact_id(), request.file(), request.offset(), max_bytes);
  if (!data.ok()) return data.status();
  v1::ReadChunkResponse response;
  response.set_data(*std::move(data));
  return response;
}

}  // namespace tlbfleet::api
