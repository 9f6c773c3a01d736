// Credentials and the Authenticator on a real SQLite file, with an injected clock.

#include "controller/api/auth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "controller/api/credentials.h"

namespace tlbfleet::api {
namespace {

TEST(CredentialsTest, TokensParseBackAndOnlyTheRightSecretMatches) {
  NewToken t = MakeToken("alice", v1::ROLE_VIEWER, 1000, 0);
  EXPECT_EQ(t.token.substr(0, 5), "tlbf_");
  std::optional<ParsedToken> parsed = ParseToken(t.token);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->id, t.record.id);
  EXPECT_TRUE(TokenMatches(t.record, parsed->secret));
  std::string wrong = parsed->secret;
  wrong[3] = wrong[3] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(TokenMatches(t.record, wrong));
  // The secret is not stored, not even inside the hash's input by itself.
  EXPECT_EQ(t.record.hash.size(), 32u);
  EXPECT_NE(t.record.hash, Sha256(parsed->secret));
  // Two tokens never share salt, id or secret.
  NewToken u = MakeToken("bob", v1::ROLE_VIEWER, 1000, 0);
  EXPECT_NE(u.record.salt, t.record.salt);
  EXPECT_NE(u.record.id, t.record.id);
}

TEST(CredentialsTest, MalformedTokensDoNotParse) {
  for (const char* bad : {"", "tlbf_", "tlbf_0123456789abcdef", "tlbf_0123456789abcdeX_secret",
                          "tlbf_0123456789abcdef-secret", "xyz_0123456789abcdef_secret",
                          "tlbf_0123456789abcdef_sec ret"}) {
    EXPECT_FALSE(ParseToken(bad).has_value()) << bad;
  }
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abcd"));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
}

class AuthenticatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-auth-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto store = store::AuthStore::Open((dir_ / "fleet.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Authenticator Make(bool loopback_only) {
    AuthOptions o;
    o.loopback_only = loopback_only;
    o.session_ms = 3600'000;
    o.clock = &clock_;
    return Authenticator(*store_, o);
  }
  std::string Create(const std::string& name, v1::Role role, int64_t expires_ms = 0) {
    NewToken t = MakeToken(name, role, clock_.NowMillis(), expires_ms);
    EXPECT_TRUE(store_->InsertToken(t.record).ok());
    return t.token;
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::AuthStore> store_;
  FakeClock clock_{absl::FromUnixMillis(1'000'000)};
};

TEST_F(AuthenticatorTest, DevelopmentModeOnlyOnLoopbackAndOnlyWhileNoTokenExists) {
  Authenticator loopback = Make(true);
  Authenticator exposed = Make(false);
  EXPECT_TRUE(*loopback.DevelopmentMode());
  EXPECT_FALSE(*exposed.DevelopmentMode());
  Caller dev = loopback.FromToken("", "http 127.0.0.1:1");
  EXPECT_TRUE(dev.authenticated());
  EXPECT_TRUE(dev.development_mode);
  EXPECT_EQ(dev.role, v1::ROLE_ADMIN);
  EXPECT_EQ(dev.principal(), "");
  EXPECT_EQ(exposed.FromToken("", "x").status.code(), absl::StatusCode::kUnauthenticated);

  // The first token ends development mode at once, without a restart.
  Create("alice", v1::ROLE_VIEWER);
  EXPECT_FALSE(*loopback.DevelopmentMode());
  EXPECT_EQ(loopback.FromToken("", "x").status.code(), absl::StatusCode::kUnauthenticated);
}

TEST_F(AuthenticatorTest, TokensAuthenticateUntilRevokedOrExpired) {
  Authenticator auth = Make(true);
  std::string alice = Create("alice", v1::ROLE_OPERATOR);
  std::string brief = Create("brief", v1::ROLE_VIEWER, clock_.NowMillis() + 1000);
  Caller c = auth.FromToken("Bearer " + alice, "grpc ipv4:127.0.0.1:5");
  ASSERT_TRUE(c.authenticated()) << c.status;
  EXPECT_EQ(c.name, "alice");
  EXPECT_EQ(c.role, v1::ROLE_OPERATOR);
  EXPECT_EQ(c.principal(), "token:alice");
  EXPECT_TRUE(auth.FromToken("bearer   " + alice, "x").authenticated());
  EXPECT_TRUE(auth.FromToken(alice, "x").authenticated());  // bare, as in a token file

  EXPECT_TRUE(auth.FromToken("Bearer " + brief, "x").authenticated());
  clock_.Advance(absl::Milliseconds(1000));
  Caller expired = auth.FromToken("Bearer " + brief, "x");
  EXPECT_EQ(expired.status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(expired.status.message().find("expired"), std::string::npos);

  ASSERT_TRUE(store_->RevokeToken("alice", clock_.NowMillis()).ok());
  Caller revoked = auth.FromToken("Bearer " + alice, "x");
  EXPECT_NE(revoked.status.message().find("revoked"), std::string::npos);

  std::string wrong = alice;
  wrong.back() = wrong.back() == 'a' ? 'b' : 'a';
  for (const std::string& bad :
       {wrong, std::string("Basic dXNlcjpwYXNz"), std::string("Bearer tlbf_nonsense")}) {
    Caller c2 = auth.FromToken(bad, "x");
    EXPECT_EQ(c2.status.code(), absl::StatusCode::kUnauthenticated) << bad;
    // A presented secret is never echoed back.
    EXPECT_EQ(c2.status.message().find(bad.substr(bad.size() - 10)), std::string::npos);
  }
}

TEST_F(AuthenticatorTest, RolesNest) {
  Caller c;
  c.name = "v";
  c.role = v1::ROLE_VIEWER;
  EXPECT_TRUE(Require(c, v1::ROLE_VIEWER, "x").ok());
  EXPECT_EQ(Require(c, v1::ROLE_OPERATOR, "SubmitRun").code(), absl::StatusCode::kPermissionDenied);
  c.role = v1::ROLE_ADMIN;
  EXPECT_TRUE(Require(c, v1::ROLE_OPERATOR, "x").ok());
  EXPECT_FALSE(Require(c, v1::ROLE_AGENT, "x").ok());  // users are not agents...
  c.role = v1::ROLE_AGENT;
  EXPECT_TRUE(Require(c, v1::ROLE_AGENT, "x").ok());
  EXPECT_FALSE(Require(c, v1::ROLE_VIEWER, "x").ok());  // ...and agents are not users
  Caller anonymous;
  anonymous.status = absl::UnauthenticatedError("no credentials");
  EXPECT_EQ(Require(anonymous, v1::ROLE_VIEWER, "x").code(), absl::StatusCode::kUnauthenticated);
}

TEST_F(AuthenticatorTest, SessionsNeedCsrfForChangesAndEndOnLogoutOrExpiry) {
  Authenticator auth = Make(true);
  EXPECT_EQ(auth.Login("anything", "x").status().code(), absl::StatusCode::kFailedPrecondition);
  std::string alice = Create("alice", v1::ROLE_OPERATOR);
  std::string agent = Create("rack1", v1::ROLE_AGENT);
  EXPECT_EQ(auth.Login(agent, "x").status().code(), absl::StatusCode::kPermissionDenied);
  auto grant = auth.Login(alice, "http 127.0.0.1:9");
  ASSERT_TRUE(grant.ok()) << grant.status();
  EXPECT_EQ(grant->csrf_token, CsrfToken(grant->session_id));

  EXPECT_TRUE(auth.FromSession(grant->session_id, "", false, "x").authenticated());
  Caller no_csrf = auth.FromSession(grant->session_id, "", true, "x");
  EXPECT_EQ(no_csrf.status.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(no_csrf.name, "alice");  // named for the audit log
  Caller with_csrf = auth.FromSession(grant->session_id, grant->csrf_token, true, "x");
  ASSERT_TRUE(with_csrf.authenticated());
  EXPECT_EQ(with_csrf.role, v1::ROLE_OPERATOR);

  ASSERT_TRUE(auth.Logout(grant->session_id).ok());
  EXPECT_EQ(auth.FromSession(grant->session_id, "", false, "x").status.code(),
            absl::StatusCode::kUnauthenticated);

  auto second = auth.Login(alice, "x");
  ASSERT_TRUE(second.ok());
  clock_.Advance(absl::Hours(1));
  EXPECT_FALSE(auth.FromSession(second->session_id, "", false, "x").authenticated());

  auto third = auth.Login(alice, "x");
  ASSERT_TRUE(third.ok());
  ASSERT_TRUE(store_->RevokeToken("alice", clock_.NowMillis()).ok());
  EXPECT_FALSE(auth.FromSession(third->session_id, "", false, "x").authenticated());
}

}  // namespace
}  // namespace tlbfleet::api
