#include "controller/store/auth_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace tlbfleet::store {
namespace {

class AuthStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-authstore-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto store = AuthStore::Open((dir_ / "fleet.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static TokenRecord Token(const std::string& id, const std::string& name) {
    TokenRecord t;
    t.id = id;
    t.name = name;
    t.role = v1::ROLE_OPERATOR;
    t.salt = std::string("\x00\x01salt", 6);
    t.hash = std::string(32, '\x7f');
    t.created_ms = 1000;
    return t;
  }

  std::filesystem::path dir_;
  std::unique_ptr<AuthStore> store_;
};

TEST_F(AuthStoreTest, TokensRoundTripAndNamesAreNeverReused) {
  EXPECT_FALSE(*store_->AnyToken());
  ASSERT_TRUE(store_->InsertToken(Token("00000000000000aa", "alice")).ok());
  EXPECT_TRUE(*store_->AnyToken());
  auto found = store_->FindToken("00000000000000aa");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->name, "alice");
  EXPECT_EQ((*found)->role, v1::ROLE_OPERATOR);
  EXPECT_EQ((*found)->salt, std::string("\x00\x01salt", 6));  // bytes, NUL included
  EXPECT_EQ((*found)->expires_ms, 0);

  ASSERT_TRUE(store_->RevokeToken("alice", 2000).ok());
  absl::Status again = store_->InsertToken(Token("00000000000000bb", "alice"));
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(again.message().substr(0, 5), "name:");
  // Revoking every token does not bring development mode back.
  EXPECT_TRUE(*store_->AnyToken());
}

TEST_F(AuthStoreTest, RevokingATokenEndsItsSessionsAndKeepsTheFirstTime) {
  ASSERT_TRUE(store_->InsertToken(Token("00000000000000aa", "alice")).ok());
  SessionRecord s{"hash-1", "00000000000000aa", 1000, 9000, "http 127.0.0.1:1"};
  ASSERT_TRUE(store_->InsertSession(s).ok());
  ASSERT_TRUE(store_->FindSession("hash-1")->has_value());
  auto revoked = store_->RevokeToken("00000000000000aa", 2000);  // by id
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(revoked->revoked_ms, 2000);
  EXPECT_FALSE(store_->FindSession("hash-1")->has_value());
  EXPECT_EQ(store_->RevokeToken("alice", 3000)->revoked_ms, 2000);
  EXPECT_EQ(store_->RevokeToken("bob", 3000).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(AuthStoreTest, ExpiredSessionsAreDeleted) {
  ASSERT_TRUE(store_->InsertToken(Token("00000000000000aa", "alice")).ok());
  ASSERT_TRUE(store_->InsertSession({"old", "00000000000000aa", 0, 1000, ""}).ok());
  ASSERT_TRUE(store_->InsertSession({"new", "00000000000000aa", 0, 5000, ""}).ok());
  EXPECT_EQ(*store_->DeleteExpiredSessions(1000), 1);
  EXPECT_FALSE(store_->FindSession("old")->has_value());
  EXPECT_TRUE(store_->FindSession("new")->has_value());
}

TEST_F(AuthStoreTest, AuditListsTheNewestOldestFirst) {
  for (int i = 1; i <= 5; ++i) {
    v1::AuditEntry e;
    e.set_time_unix_ms(i);
    e.set_principal("alice");
    e.set_role(v1::ROLE_OPERATOR);
    e.set_action("SubmitRun");
    e.set_target(std::to_string(i));
    e.set_outcome("OK");
    ASSERT_EQ(*store_->AppendAudit(e), static_cast<uint64_t>(i));
  }
  auto last_two = store_->ListAudit(0, 2);
  ASSERT_TRUE(last_two.ok());
  ASSERT_EQ(last_two->size(), 2u);
  EXPECT_EQ((*last_two)[0].target(), "4");
  EXPECT_EQ((*last_two)[1].target(), "5");
  EXPECT_EQ((*last_two)[1].role(), v1::ROLE_OPERATOR);
  EXPECT_EQ(store_->ListAudit(4, 10)->size(), 1u);
}

}  // namespace
}  // namespace tlbfleet::store
