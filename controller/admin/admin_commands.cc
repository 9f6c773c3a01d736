#include "controller/admin/admin_commands.h"

#include <google/protobuf/util/json_util.h>
#include <pwd.h>
#include <unistd.h>

#include <ctime>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "controller/api/auth.h"
#include "controller/api/credentials.h"
#include "controller/store/auth_store.h"
#include "controller/store/backup.h"
#include "fmt/format.h"

namespace tlbfleet::admin {

// Tokens and the audit log are the transports' auth (controller/api/auth.h, credentials.h).
using api::AuditLog;
using api::Caller;
using api::MakeToken;
using api::NewToken;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

// The audit log's name for whoever runs a local command.
Caller LocalCaller() {
  Caller c;
  const passwd* pw = ::getpwuid(::getuid());
  c.name = absl::StrCat("local:", pw != nullptr ? pw->pw_name : std::to_string(::getuid()));
  c.role = v1::ROLE_ADMIN;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  c.source = absl::StrCat("cli ", host);
  return c;
}

std::string FormatTime(int64_t ms) {
  if (ms == 0) return "-";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(ms), absl::UTCTimeZone());
}

// `create`: the first token usually comes before the controller's first start, so the file
// may be made here; other commands refuse a missing file (a typo must not make a new one).
int OpenStore(const std::string& db, std::ostream& err, std::unique_ptr<store::AuthStore>* out,
              bool create = false) {
  if (db.empty()) {
    err << "tlbfleet-controller: --db: required\n";
    return kExitUsage;
  }
  if (!create && ::access(db.c_str(), F_OK) != 0) {
    err << "tlbfleet-controller: --db " << db << ": no such file\n";
    return kExitUsage;
  }
  absl::StatusOr<std::unique_ptr<store::AuthStore>> s = store::AuthStore::Open(db);
  if (!s.ok()) {
    err << "tlbfleet-controller: --db " << db << ": " << s.status().message() << "\n";
    return kExitFailure;
  }
  *out = *std::move(s);
  return kExitOk;
}

v1::TokenInfo InfoOf(const store::TokenRecord& t) {
  v1::TokenInfo info;
  info.set_id(t.id);
  info.set_name(t.name);
  info.set_role(t.role);
  info.set_created_unix(t.created_ms / 1000);
  info.set_expires_unix(t.expires_ms / 1000);
  info.set_revoked_unix(t.revoked_ms / 1000);
  info.set_last_used_unix(t.last_used_ms / 1000);
  return info;
}

template <typename Message>
std::string Json(const Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  return out;
}

}  // namespace

int TokenCreateCommand(const TokenCreateOptions& options, std::ostream& out, std::ostream& err) {
  v1::Role role = store::RoleFromName(options.role);
  if (role == v1::ROLE_UNSPECIFIED) {
    err << "tlbfleet-controller: --role: \"" << options.role
        << "\" is not a role (viewer, operator, admin, agent)\n";
    return kExitUsage;
  }
  static const std::regex kName("[A-Za-z0-9][A-Za-z0-9._@-]{0,63}");
  if (!std::regex_match(options.name, kName)) {
    err << "tlbfleet-controller: --name: \"" << options.name
        << "\" must be 1-64 letters, digits, '.', '_', '@' or '-', starting with a letter or "
           "digit\n";
    return kExitUsage;
  }
  if (options.expires_days < 0) {
    err << "tlbfleet-controller: --expires-days: must not be negative\n";
    return kExitUsage;
  }
  std::unique_ptr<store::AuthStore> auth;
  if (int rc = OpenStore(options.db, err, &auth, /*create=*/true); rc != kExitOk) return rc;
  const int64_t now = Clock::Real().NowMillis();
  const int64_t expires =
      options.expires_days > 0 ? now + static_cast<int64_t>(options.expires_days * 86400e3) : 0;
  NewToken token = MakeToken(options.name, role, now, expires);
  absl::Status s = auth->InsertToken(token.record);
  AuditLog audit(*auth);
  audit.Record(LocalCaller(), "token create", options.name, s,
               absl::StrCat("role ", options.role, ", id ", token.record.id));
  if (!s.ok()) {
    err << "tlbfleet-controller: " << s.message() << "\n";
    return s.code() == absl::StatusCode::kAlreadyExists ? kExitUsage : kExitFailure;
  }
  out << "created token \"" << options.name << "\" (role " << options.role << ", id "
      << token.record.id << ", expires " << (expires ? FormatTime(expires) : "never") << ")\n"
      << "it is shown only now; store it (e.g. in a file readable only by its user):\n"
      << token.token << "\n";
  return kExitOk;
}

int TokenListCommand(const std::string& db, const std::string& format, std::ostream& out,
                     std::ostream& err) {
  std::unique_ptr<store::AuthStore> auth;
  if (int rc = OpenStore(db, err, &auth); rc != kExitOk) return rc;
  absl::StatusOr<std::vector<store::TokenRecord>> tokens = auth->ListTokens();
  if (!tokens.ok()) {
    err << "tlbfleet-controller: " << tokens.status().message() << "\n";
    return kExitFailure;
  }
  if (format == "json") {
    for (const store::TokenRecord& t : *tokens) out << Json(InfoOf(t)) << "\n";
    return kExitOk;
  }
  out << fmt::format("{:<16}  {:<24}  {:<8}  {:<20}  {:<20}  {:<20}  {}\n", "ID", "NAME", "ROLE",
                     "CREATED", "EXPIRES", "LAST USED", "STATE");
  const int64_t now = Clock::Real().NowMillis();
  for (const store::TokenRecord& t : *tokens) {
    std::string state = t.revoked_ms ? "revoked " + FormatTime(t.revoked_ms)
                        : (t.expires_ms && t.expires_ms <= now) ? "expired"
                                                                : "valid";
    out << fmt::format("{:<16}  {:<24}  {:<8}  {:<20}  {:<20}  {:<20}  {}\n", t.id, t.name,
                       store::RoleName(t.role), FormatTime(t.created_ms),
                       t.expires_ms ? FormatTime(t.expires_ms) : "never",
                       FormatTime(t.last_used_ms), state);
  }
  return kExitOk;
}

int TokenRevokeCommand(const std::string& db, const std::string& name, std::ostream& out,
                       std::ostream& err) {
  std::unique_ptr<store::AuthStore> auth;
  if (int rc = OpenStore(db, err, &auth); rc != kExitOk) return rc;
  absl::StatusOr<store::TokenRecord> revoked = auth->RevokeToken(name, Clock::Real().NowMillis());
  AuditLog audit(*auth);
  audit.Record(LocalCaller(), "token revoke", name, revoked.status());
  if (!revoked.ok()) {
    err << "tlbfleet-controller: " << revoked.status().message() << "\n";
    return revoked.status().code() == absl::StatusCode::kNotFound ? kExitUsage : kExitFailure;
  }
  out << "revoked token \"" << revoked->name << "\" (id " << revoked->id
      << "); its sessions are ended\n";
  return kExitOk;
}

int AuditCommand(const std::string& db, uint32_t limit, const std::string& format,
                 std::ostream& out, std::ostream& err) {
  std::unique_ptr<store::AuthStore> auth;
  if (int rc = OpenStore(db, err, &auth); rc != kExitOk) return rc;
  absl::StatusOr<std::vector<v1::AuditEntry>> entries = auth->ListAudit(0, limit);
  if (!entries.ok()) {
    err << "tlbfleet-controller: " << entries.status().message() << "\n";
    return kExitFailure;
  }
  if (format == "json") {
    for (const v1::AuditEntry& e : *entries) out << Json(e) << "\n";
    return kExitOk;
  }
  out << fmt::format("{:<24}  {:<20}  {:<8}  {:<14}  {:<8}  {:<28}  {:<18}  {}\n", "TIME", "WHO",
                     "ROLE", "ACTION", "TARGET", "FROM", "OUTCOME", "DETAIL");
  for (const v1::AuditEntry& e : *entries) {
    out << fmt::format(
        "{:<24}  {:<20}  {:<8}  {:<14}  {:<8}  {:<28}  {:<18}  {}\n",
        absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(e.time_unix_ms()),
                         absl::UTCTimeZone()),
        e.principal(), store::RoleName(e.role()), e.action(), e.target().empty() ? "-" : e.target(),
        e.source(), e.outcome(), e.detail());
  }
  return kExitOk;
}

int BackupCommand(const std::string& db, const std::string& out_path, std::ostream& out,
                  std::ostream& err) {
  absl::StatusOr<store::BackupInfo> info = store::BackupDatabase(db, out_path);
  if (!info.ok()) {
    err << "backup: " << info.status().message() << "\n";
    const absl::StatusCode code = info.status().code();
    return code == absl::StatusCode::kNotFound || code == absl::StatusCode::kAlreadyExists ||
                   code == absl::StatusCode::kInvalidArgument
               ? kExitUsage
               : kExitFailure;
  }
  out << fmt::format("backed up {} to {}: {} pages, {} bytes, schema version {}\n", db, out_path,
                     info->pages, info->bytes, info->schema_version);
  return kExitOk;
}

}  // namespace tlbfleet::admin
