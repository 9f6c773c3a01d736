#include "controller/api/credentials.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdlib>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace tlbfleet::api {

namespace {

constexpr absl::string_view kTokenPrefix = "tlbf_";
constexpr size_t kIdHexDigits = 16;
constexpr size_t kSecretBytes = 32;
constexpr size_t kSaltBytes = 16;

}  // namespace

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  // RAND_bytes fails only when the CSPRNG cannot be seeded; handing out a predictable
  // credential would be worse than stopping.
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    std::abort();
  }
  return out;
}

std::string Base64Url(absl::string_view bytes) { return absl::WebSafeBase64Escape(bytes); }

std::string Sha256(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string Hex(absl::string_view bytes) { return absl::BytesToHexString(bytes); }

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::optional<ParsedToken> ParseToken(absl::string_view token) {
  if (token.size() <= kTokenPrefix.size() + kIdHexDigits + 1 ||
      token.substr(0, kTokenPrefix.size()) != kTokenPrefix) {
    return std::nullopt;
  }
  absl::string_view id = token.substr(kTokenPrefix.size(), kIdHexDigits);
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  if (token[kTokenPrefix.size() + kIdHexDigits] != '_') return std::nullopt;
  absl::string_view secret = token.substr(kTokenPrefix.size() + kIdHexDigits + 1);
  for (char c : secret) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '-' || c == '_';
    if (!ok) return std::nullopt;
  }
  return ParsedToken{std::string(id), std::string(secret)};
}

std::string HashSecret(absl::string_view salt, absl::string_view secret) {
  return Sha256(absl::StrCat(salt, secret));
}

NewToken MakeToken(const std::string& name, v1::Role role, int64_t now_ms, int64_t expires_ms) {
  NewToken t;
  t.record.id = Hex(RandomBytes(kIdHexDigits / 2));
  std::string secret = Base64Url(RandomBytes(kSecretBytes));
  t.record.name = name;
  t.record.role = role;
  t.record.salt = RandomBytes(kSaltBytes);
  t.record.hash = HashSecret(t.record.salt, secret);
  t.record.created_ms = now_ms;
  t.record.expires_ms = expires_ms;
  t.token = absl::StrCat(kTokenPrefix, t.record.id, "_", secret);
  return t;
}

bool TokenMatches(const store::TokenRecord& record, absl::string_view secret) {
  return ConstantTimeEquals(HashSecret(record.salt, secret), record.hash);
}

std::string NewSessionId() { return Base64Url(RandomBytes(32)); }

std::string SessionKey(absl::string_view session_id) {
  return Sha256(absl::StrCat("tlbfleet-session:", session_id));
}

std::string CsrfToken(absl::string_view session_id) {
  return Base64Url(Sha256(absl::StrCat("tlbfleet-csrf:", session_id)));
}

}  // namespace tlbfleet::api
