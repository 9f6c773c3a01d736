#pragma once
// Who is calling, and may they? Shared by the HTTP and gRPC transports.
//
// Credentials: an API token (HTTP `Authorization: Bearer`, gRPC metadata `authorization`),
// or on HTTP a browser session made by POST /api/v1/login (cookie `tlbfleet_session`; a
// state-changing request with it also needs the session's CSRF token in `X-CSRF-Token`).
//
// Development mode: while the database holds no token at all and every listener is on a
// loopback address, nothing is authenticated and every caller acts as an admin named
// "development-mode". It ends with the first `token create`, without a restart.
//
// Thread-safe. Error messages never contain a presented secret.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/clock.h"
#include "controller/store/auth_store.h"
#include "tlbfleet/v1/auth.pb.h"

namespace tlbfleet::api {

// The outcome of authentication: who, with which role, from where. When `status` is not OK
// the caller is unauthenticated (name "anonymous") and `status` says why; role checks then
// return that status, so a transport can always hand a Caller on and audit the attempt.
struct Caller {
  absl::Status status;
  std::string name = "anonymous";
  std::string token_id;
  v1::Role role = v1::ROLE_UNSPECIFIED;
  bool development_mode = false;
  std::string session_id;  // the cookie's value when authenticated by a session
  int64_t session_expires_ms = 0;
  std::string source;  // "http 127.0.0.1:53122", "grpc ipv4:127.0.0.1:53124"

  bool authenticated() const { return status.ok(); }
  // What the core records as the agent's credential ("" in development mode).
  std::string principal() const { return development_mode ? "" : "token:" + name; }
};

// OK when `caller` is authenticated with a role that includes `minimum`: viewer < operator <
// admin; the agent role satisfies only an agent minimum, and user roles never do.
// Otherwise UNAUTHENTICATED (the caller's own status) or PERMISSION_DENIED naming `what`.
absl::Status Require(const Caller& caller, v1::Role minimum, absl::string_view what);

struct AuthOptions {
  // Every listener (gRPC and HTTP) is bound to a loopback address.
  bool loopback_only = true;
  int64_t session_ms = 12 * 3600 * 1000;
  const Clock* clock = &Clock::Real();  // session and token expiry; not owned, never null
};

struct SessionGrant {
  std::string session_id;  // the cookie's value
  std::string csrf_token;
  Caller caller;
};

class Authenticator {
 public:
  Authenticator(store::AuthStore& store, AuthOptions options);

  // Whether requests are unauthenticated right now.
  absl::StatusOr<bool> DevelopmentMode();

  // A caller from an `Authorization` value ("Bearer <token>") or a bare token. Empty
  // `authorization` means none was presented.
  Caller FromToken(absl::string_view authorization, std::string source);
  // A caller from a session cookie value. `state_changing` requests must carry the
  // session's CSRF token.
  Caller FromSession(absl::string_view session_id, absl::string_view csrf_header,
                     bool state_changing, std::string source);
  // Development mode: an admin caller named "development-mode"; otherwise nullopt. Errors
  // reading the store give an unauthenticated caller (fail closed).
  std::optional<Caller> DevelopmentCaller(const std::string& source);

  // Trades a token for a session (POST /api/v1/login).
  absl::StatusOr<SessionGrant> Login(absl::string_view token, std::string source);
  // Ends a session server-side (POST /api/v1/logout). Unknown sessions are OK.
  absl::Status Logout(absl::string_view session_id);

  int64_t Now() const { return options_.clock->NowMillis(); }
  store::AuthStore& store() { return store_; }

 private:
  absl::StatusOr<Caller> Verify(absl::string_view token, const std::string& source);

  store::AuthStore& store_;
  const AuthOptions options_;
};

// The audit log of mutating requests (table `audit`). Failures to write are logged, never
// returned: the request has already happened.
class AuditLog {
 public:
  // `clock` is not owned and must outlive the log.
  explicit AuditLog(store::AuthStore& store, const Clock& clock = Clock::Real());
  void Record(const Caller& caller, absl::string_view action, absl::string_view target,
              const absl::Status& outcome, absl::string_view detail = "");

 private:
  store::AuthStore& store_;
  const Clock& clock_;
};

}  // namespace tlbfleet::api
