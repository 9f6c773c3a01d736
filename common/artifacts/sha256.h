#pragma once
// SHA-256 for artifacts (OpenSSL's EVP): an artifact's id, and the checksum of each of its
// files, on the side that stores it and on the side that fetches it.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

struct evp_md_ctx_st;

namespace tlbfleet::artifacts {

// An incremental hash. Not thread-safe (one per file being hashed).
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  void Update(std::string_view bytes);
  // The digest as 64 lowercase hex digits. The hasher is spent afterwards.
  std::string HexDigest();

 private:
  struct CtxFree {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::unique_ptr<evp_md_ctx_st, CtxFree> ctx_;
};

// The hex digest of `bytes`.
std::string Sha256Hex(std::string_view bytes);

struct FileDigest {
  uint64_t size = 0;
  std::string sha256;  // 64 lowercase hex digits
};

// Reads the whole file at `path` and hashes it. Errors name the path (NOT_FOUND if absent).
absl::StatusOr<FileDigest> DigestFile(const std::string& path);

// True if `s` is 64 lowercase hex digits: a sha256 as this library writes it.
bool IsSha256Hex(std::string_view s);

}  // namespace tlbfleet::artifacts
