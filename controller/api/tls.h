#pragma once
// TLS for the controller's listeners: one certificate and key (PEM) for both gRPC and HTTP
// (--tls-cert, --tls-key), and optionally a CA whose certificates agents must present
// (--tls-client-ca, mutual TLS on the agent stream).
//
// Files are checked before anything listens, so a typo or a key that does not belong to the
// certificate stops the start with the flag named (exit 2), never half a service.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"

namespace tlbfleet::api {

struct TlsFiles {
  std::string cert;       // --tls-cert: certificate chain, PEM
  std::string key;        // --tls-key: its private key, PEM
  std::string client_ca;  // --tls-client-ca: CA of agents' client certificates, PEM

  bool enabled() const { return !cert.empty(); }
};

// INVALID_ARGUMENT naming the flag: one of cert/key given without the other, a client CA
// without a certificate, an unreadable or malformed file, a key that does not match.
absl::Status CheckTlsFiles(const TlsFiles& files);

// Server credentials for gRPC: TLS with `files` (clients that present a certificate must
// present one the client CA signed), or insecure when !files.enabled().
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> GrpcServerCredentials(
    const TlsFiles& files);

}  // namespace tlbfleet::api
