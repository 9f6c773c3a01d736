#include "common/grpc_channel.h"

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace tlbfleet {

absl::Status CheckClientTls(const ClientTls& tls) {
  if (!tls.enabled() && (!tls.cert.empty() || !tls.key.empty())) {
    return absl::InvalidArgumentError(
        "--tls-ca: needed with --tls-cert/--tls-key (the controller's CA, to trust it)");
  }
  if (tls.cert.empty() != tls.key.empty()) {
    return absl::InvalidArgumentError(tls.cert.empty() ? "--tls-cert: needed with --tls-key"
                                                       : "--tls-key: needed with --tls-cert");
  }
  for (const auto& [path, flag] :
       {std::pair(&tls.ca, "--tls-ca"), std::pair(&tls.cert, "--tls-cert"),
        std::pair(&tls.key, "--tls-key")}) {
    if (path->empty()) continue;
    if (absl::StatusOr<std::string> pem = ReadPemFile(*path, flag); !pem.ok()) return pem.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ClientTls& tls,
                                                           grpc::ChannelArguments args) {
  if (!tls.enabled()) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions options;
  absl::StatusOr<std::string> ca = ReadPemFile(tls.ca, "--tls-ca");
  if (!ca.ok()) return ca.status();
  options.pem_root_certs = *ca;
  if (!tls.cert.empty()) {
    absl::StatusOr<std::string> cert = ReadPemFile(tls.cert, "--tls-cert");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPemFile(tls.key, "--tls-key");
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *cert;
    options.pem_private_key = *key;
  }
  if (!tls.server_name.empty()) args.SetSslTargetNameOverride(tls.server_name);
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(options), args);
}

}  // namespace tlbfleet
