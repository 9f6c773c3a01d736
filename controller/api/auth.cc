#include "controller/api/auth.h"

#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "controller/api/credentials.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::api {

namespace {

constexpr char kDevelopmentName[] = "development-mode";

int Rank(v1::Role role) {
  switch (role) {
    case v1::ROLE_VIEWER:
      return 1;
    case v1::ROLE_OPERATOR:
      return 2;
    case v1::ROLE_ADMIN:
      return 3;
    default:
      return 0;
  }
}

Caller Unauthenticated(absl::Status why, std::string source) {
  Caller c;
  c.status = std::move(why);
  c.source = std::move(source);
  return c;
}

}  // namespace

absl::Status Require(const Caller& caller, v1::Role minimum, absl::string_view what) {
  if (!caller.authenticated()) return caller.status;
  bool allowed = minimum == v1::ROLE_AGENT ? caller.role == v1::ROLE_AGENT
                                           : Rank(caller.role) >= Rank(minimum);
  if (allowed) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("token \"", caller.name, "\" has role ",
                                                  store::RoleName(caller.role), "; ", what,
                                                  " needs role ", store::RoleName(minimum)));
}

Authenticator::Authenticator(store::AuthStore& store, AuthOptions options)
    : store_(store), options_(std::move(options)) {}

absl::StatusOr<bool> Authenticator::DevelopmentMode() {
  if (!options_.loopback_only) return false;
  absl::StatusOr<bool> any = store_.AnyToken();
  if (!any.ok()) return any.status();
  return !*any;
}

std::optional<Caller> Authenticator::DevelopmentCaller(const std::string& source) {
  absl::StatusOr<bool> dev = DevelopmentMode();
  if (!dev.ok()) {
    spdlog::error("auth: cannot read the token table: {}", dev.status().ToString());
    return Unauthenticated(absl::UnavailableError("cannot check credentials; see the log"), source);
  }
  if (!*dev) return std::nullopt;
  Caller c;
  c.name = kDevelopmentName;
  c.role = v1::ROLE_ADMIN;
  c.development_mode = true;
  c.source = source;
  return c;
}

absl::StatusOr<Caller> Authenticator::Verify(absl::string_view token, const std::string& source) {
  std::optional<ParsedToken> parsed = ParseToken(token);
  if (!parsed) {
    return absl::UnauthenticatedError("malformed token (expected tlbf_<id>_<secret>)");
  }
  absl::StatusOr<std::optional<store::TokenRecord>> record = store_.FindToken(parsed->id);
  if (!record.ok()) {
    spdlog::error("auth: cannot read the token table: {}", record.status().ToString());
    return absl::UnavailableError("cannot check credentials; see the log");
  }
  // Unknown id and wrong secret answer alike, so the answer tells nothing about ids.
  if (!record->has_value() || !TokenMatches(**record, parsed->secret)) {
    return absl::UnauthenticatedError("invalid token");
  }
  const store::TokenRecord& t = **record;
  const int64_t now = Now();
  if (t.revoked_ms != 0) {
    return absl::UnauthenticatedError(absl::StrCat("token \"", t.name, "\" was revoked"));
  }
  if (t.expires_ms != 0 && t.expires_ms <= now) {
    return absl::UnauthenticatedError(absl::StrCat("token \"", t.name, "\" has expired"));
  }
  // last_used is for `token list`; a minute's precision saves a write per request.
  if (now - t.last_used_ms > 60'000) {
    if (absl::Status s = store_.TouchToken(t.id, now); !s.ok()) {
      spdlog::warn("auth: cannot record the use of token \"{}\": {}", t.name, s.ToString());
    }
  }
  Caller c;
  c.name = t.name;
  c.token_id = t.id;
  c.role = t.role;
  c.source = source;
  return c;
}

Caller Authenticator::FromToken(absl::string_view authorization, std::string source) {
  if (std::optional<Caller> dev = DevelopmentCaller(source)) return *dev;
  absl::string_view value = absl::StripAsciiWhitespace(authorization);
  if (value.empty()) {
    return Unauthenticated(
        absl::UnauthenticatedError("no credentials: send an API token (Authorization: Bearer)"),
        std::move(source));
  }
  if (value.size() > 7 && absl::EqualsIgnoreCase(value.substr(0, 7), "bearer ")) {
    value = absl::StripAsciiWhitespace(value.substr(7));
  } else if (value.find(' ') != absl::string_view::npos) {
    return Unauthenticated(
        absl::UnauthenticatedError("unsupported authorization scheme (use Bearer)"),
        std::move(source));
  }
  absl::StatusOr<Caller> c = Verify(value, source);
  if (!c.ok()) return Unauthenticated(c.status(), std::move(source));
  return *std::move(c);
}

Caller Authenticator::FromSession(absl::string_view session_id, absl::string_view csrf_header,
                                  bool state_changing, std::string source) {
  if (std::optional<Caller> dev = DevelopmentCaller(source)) return *dev;
  absl::StatusOr<std::optional<store::SessionRecord>> session =
      store_.FindSession(SessionKey(session_id));
  if (!session.ok()) {
    spdlog::error("auth: cannot read the session table: {}", session.status().ToString());
    return Unauthenticated(absl::UnavailableError("cannot check credentials; see the log"),
                           std::move(source));
  }
  const int64_t now = Now();
  if (!session->has_value() || (*session)->expires_ms <= now) {
    return Unauthenticated(absl::UnauthenticatedError("session expired or logged out"),
                           std::move(source));
  }
  absl::StatusOr<std::optional<store::TokenRecord>> token = store_.FindToken((*session)->token_id);
  if (!token.ok() || !token->has_value() || (**token).revoked_ms != 0 ||
      ((**token).expires_ms != 0 && (**token).expires_ms <= now)) {
    return Unauthenticated(absl::UnauthenticatedError("the session's token is no longer valid"),
                           std::move(source));
  }
  Caller c;
  if (state_changing && !ConstantTimeEquals(csrf_header, CsrfToken(session_id))) {
    // Named for the audit log, but not authenticated: the request may come from another site.
    c.status = absl::PermissionDeniedError("missing or wrong X-CSRF-Token for this session");
  }
  c.name = (**token).name;
  c.token_id = (**token).id;
  c.role = (**token).role;
  c.session_id = std::string(session_id);
  c.session_expires_ms = (*session)->expires_ms;
  c.source = std::move(source);
  return c;
}

absl::StatusOr<SessionGrant> Authenticator::Login(absl::string_view token, std::string source) {
  absl::StatusOr<bool> dev = DevelopmentMode();
  if (!dev.ok()) return absl::UnavailableError("cannot check credentials; see the log");
  if (*dev) {
    return absl::FailedPreconditionError(
        "development mode: no token exists, so there is nothing to log in with (and no need)");
  }
  if (token.empty()) return absl::InvalidArgumentError("token: required");
  absl::StatusOr<Caller> caller = Verify(token, source);
  if (!caller.ok()) return caller.status();
  if (caller->role == v1::ROLE_AGENT) {
    return absl::PermissionDeniedError(
        absl::StrCat("token \"", caller->name, "\" is an agent token; it cannot log in"));
  }
  SessionGrant grant;
  grant.session_id = NewSessionId();
  grant.csrf_token = CsrfToken(grant.session_id);
  store::SessionRecord record;
  record.id_hash = SessionKey(grant.session_id);
  record.token_id = caller->token_id;
  record.created_ms = Now();
  record.expires_ms = record.created_ms + options_.session_ms;
  record.source = source;
  if (absl::Status s = store_.InsertSession(record); !s.ok()) return s;
  // Expired sessions are swept at each login: cheap, indexed, and bounded by logins.
  (void)store_.DeleteExpiredSessions(record.created_ms);
  grant.caller = *std::move(caller);
  grant.caller.session_id = grant.session_id;
  grant.caller.session_expires_ms = record.expires_ms;
  return grant;
}

absl::Status Authenticator::Logout(absl::string_view session_id) {
  if (session_id.empty()) return absl::OkStatus();
  return store_.DeleteSession(SessionKey(session_id));
}

AuditLog::AuditLog(store::AuthStore& store, const Clock& clock) : store_(store), clock_(clock) {}

void AuditLog::Record(const Caller& caller, absl::string_view action, absl::string_view target,
                      const absl::Status& outcome, absl::string_view detail) {
  v1::AuditEntry e;
  e.set_time_unix_ms(clock_.NowMillis());
  e.set_principal(caller.name);
  e.set_role(caller.role);
  e.set_action(std::string(action));
  e.set_target(std::string(target));
  e.set_source(caller.source);
  e.set_outcome(outcome.ok() ? "OK" : absl::StatusCodeToString(outcome.code()));
  e.set_detail(outcome.ok() ? std::string(detail) : std::string(outcome.message()));
  absl::StatusOr<uint64_t> id = store_.AppendAudit(e);
  if (!id.ok()) {
    spdlog::error("audit: cannot record {} by {} from {}: {}", std::string(action), caller.name,
                  caller.source, id.status().ToString());
  }
}

}  // namespace tlbfleet::api
