#pragma once
// Secrets: API tokens, session ids and their hashes. Randomness comes from OpenSSL's CSPRNG;
// secrets are compared in constant time. Nothing here logs.
//
// A token reads "tlbf_<id>_<secret>": 16 hex digits of public id (the store's key, shown by
// `token list`), then 32 random bytes in unpadded base64url. Only SHA-256(salt || secret)
// with a 16-byte random salt is stored: the secret has 256 bits of entropy, so a slow
// password hash would buy nothing and cost every request.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "controller/store/auth_store.h"

namespace tlbfleet::api {

std::string RandomBytes(size_t n);
std::string Base64Url(absl::string_view bytes);  // unpadded
std::string Sha256(absl::string_view data);      // 32 raw bytes
std::string Hex(absl::string_view bytes);
// Constant time in the length of the inputs (different lengths compare unequal at once:
// lengths are not secret here).
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

struct ParsedToken {
  std::string id;
  std::string secret;
};
// nullopt when `token` does not have the token's shape.
std::optional<ParsedToken> ParseToken(absl::string_view token);

std::string HashSecret(absl::string_view salt, absl::string_view secret);

struct NewToken {
  std::string token;  // the only time the secret exists outside its owner
  store::TokenRecord record;
};
NewToken MakeToken(const std::string& name, v1::Role role, int64_t now_ms, int64_t expires_ms);

// Whether `token` matches `record`'s salted hash (constant time).
bool TokenMatches(const store::TokenRecord& record, absl::string_view secret);

// A new session id (the cookie value) and the key the store keeps for it.
std::string NewSessionId();
std::string SessionKey(absl::string_view session_id);
// The CSRF token of a session: derived from its id, so that it needs no storage and a
// cross-site page, which can neither read the cookie nor our responses, cannot know it.
std::string CsrfToken(absl::string_view session_id);

}  // namespace tlbfleet::api
