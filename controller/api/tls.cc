#include "controller/api/tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "grpcpp/security/server_credentials.h"

namespace tlbfleet::api {

namespace {

std::string OpenSslError() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "not valid PEM";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

}  // namespace

absl::Status CheckTlsFiles(const TlsFiles& files) {
  if (files.cert.empty() != files.key.empty()) {
    return absl::InvalidArgumentError(files.cert.empty() ? "--tls-cert: needed with --tls-key"
                                                         : "--tls-key: needed with --tls-cert");
  }
  if (!files.client_ca.empty() && files.cert.empty()) {
    return absl::InvalidArgumentError(
        "--tls-client-ca: needs --tls-cert and --tls-key (mutual TLS is TLS first)");
  }
  if (!files.enabled()) return absl::OkStatus();
  for (const auto& [path, flag] :
       {std::pair(&files.cert, "--tls-cert"), std::pair(&files.key, "--tls-key"),
        std::pair(&files.client_ca, "--tls-client-ca")}) {
    if (path->empty()) continue;
    if (absl::StatusOr<std::string> pem = ReadPemFile(*path, flag); !pem.ok()) return pem.status();
  }
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_server_method()),
                                                        SSL_CTX_free);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), files.cert.c_str()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert ", files.cert, ": ", OpenSslError()));
  }
  // Parse the key alone first, so that a key of another certificate is told apart from a
  // file that is no key at all.
  FILE* key_file = std::fopen(files.key.c_str(), "r");
  EVP_PKEY* key = key_file ? PEM_read_PrivateKey(key_file, nullptr, nullptr, nullptr) : nullptr;
  if (key_file) std::fclose(key_file);
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--tls-key ", files.key, ": ", OpenSslError()));
  }
  const bool used = SSL_CTX_use_PrivateKey(ctx.get(), key) == 1;
  EVP_PKEY_free(key);
  if (!used || SSL_CTX_check_private_key(ctx.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-key ", files.key, ": does not match the certificate in ", files.cert));
  }
  if (!files.client_ca.empty() &&
      SSL_CTX_load_verify_locations(ctx.get(), files.client_ca.c_str(), nullptr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-client-ca ", files.client_ca, ": ", OpenSslError()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> GrpcServerCredentials(
    const TlsFiles& files) {
  if (!files.enabled()) return grpc::InsecureServerCredentials();
  absl::StatusOr<std::string> cert = ReadPemFile(files.cert, "--tls-cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPemFile(files.key, "--tls-key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!files.client_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadPemFile(files.client_ca, "--tls-client-ca");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    // Users' CLIs on the same port present no certificate; agents must (AgentService checks
    // that the peer was authenticated by one), and any certificate presented is verified.
    options.client_certificate_request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace tlbfleet::api
