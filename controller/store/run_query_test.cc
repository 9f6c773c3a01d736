// The filtered, paged run list on a real SQLite file.

#include "controller/store/run_query.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "controller/store/lease_for_test.h"
#include "controller/store/store.h"

namespace tlbfleet::store {
namespace {

class RunQueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-runquery-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto store = Store::Open((dir_ / "fleet.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A run named `name` of `benchmark`, created at `created_s`, with one job.
  std::string Create(const std::string& name, const std::string& benchmark, int64_t created_s) {
    v1::RunSpec spec;
    spec.set_name(name);
    spec.set_benchmark(benchmark);
    spec.set_iterations(1);
    spec.add_arms()->set_name("a");
    spec.mutable_hosts()->set_count(1);
    scheduler::JobPlan plan;
    plan.arm = "a";
    plan.param_name = "threads";
    plan.param_value = "1";
    plan.iteration = 1;
    plan.params = {{"threads", "1"}};
    plan.timeout_seconds = 30;
    auto id = store_->CreateRun(spec, "", {plan}, created_s * 1000);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : "";
  }

  std::vector<std::string> Ids(const v1::ListRunsRequest& request, std::string* next = nullptr) {
    auto response = store_->QueryRuns(request);
    EXPECT_TRUE(response.ok()) << response.status();
    std::vector<std::string> ids;
    if (!response.ok()) return ids;
    for (const v1::Run& run : response->runs()) ids.push_back(run.id());
    if (next != nullptr) *next = response->next_page_token();
    return ids;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(RunQueryTest, PagesNewestFirstWithoutGapsOrRepeats) {
  for (int i = 0; i < 7; ++i) Create("run" + std::to_string(i), "ebizzy", 1000 + i);
  v1::ListRunsRequest request;
  request.set_limit(3);
  std::string next;
  EXPECT_EQ(Ids(request, &next), (std::vector<std::string>{"7", "6", "5"}));
  ASSERT_FALSE(next.empty());
  request.set_page_token(next);
  EXPECT_EQ(Ids(request, &next), (std::vector<std::string>{"4", "3", "2"}));
  request.set_page_token(next);
  EXPECT_EQ(Ids(request, &next), (std::vector<std::string>{"1"}));
  EXPECT_TRUE(next.empty());
}

TEST_F(RunQueryTest, FiltersCombine) {
  Create("nightly-ebizzy", "ebizzy", 1000);        // 1
  Create("adhoc", "hackbench", 2000);              // 2
  Create("Nightly-hackbench", "hackbench", 3000);  // 3
  Create("nightly-late", "hackbench", 4000);       // 4
  ASSERT_TRUE(store_->CancelRun("4", 4001).ok());

  v1::ListRunsRequest by_benchmark;
  by_benchmark.set_benchmark("hackbench");
  EXPECT_EQ(Ids(by_benchmark), (std::vector<std::string>{"4", "3", "2"}));

  v1::ListRunsRequest by_name = by_benchmark;
  by_name.set_name("NIGHTLY");  // case-insensitive substring
  EXPECT_EQ(Ids(by_name), (std::vector<std::string>{"4", "3"}));

  v1::ListRunsRequest by_state = by_name;
  by_state.add_states(v1::RUN_STATE_QUEUED);
  EXPECT_EQ(Ids(by_state), (std::vector<std::string>{"3"}));

  v1::ListRunsRequest by_date;
  by_date.set_created_after_unix(2000);
  by_date.set_created_before_unix(4000);
  EXPECT_EQ(Ids(by_date), (std::vector<std::string>{"3", "2"}));
}

TEST_F(RunQueryTest, HostFilterMatchesAgentIdOrHostname) {
  Create("one", "ebizzy", 1000);
  Create("two", "ebizzy", 2000);
  v1::HostInfo host;
  host.set_hostname("rack1-node3");
  ASSERT_TRUE(store_->RegisterHost("agent-7", host, "", 1000).ok());
  auto lease = LeaseNext(*store_, "1", "agent-7", 1500, 60000);
  ASSERT_TRUE(lease.ok() && lease->has_value()) << lease.status();

  for (const char* name : {"agent-7", "rack1-node3"}) {
    v1::ListRunsRequest request;
    request.set_host(name);
    EXPECT_EQ(Ids(request), (std::vector<std::string>{"1"})) << name;
  }
  v1::ListRunsRequest nobody;
  nobody.set_host("elsewhere");
  EXPECT_TRUE(Ids(nobody).empty());
}

TEST_F(RunQueryTest, BadRequestsNameTheirField) {
  v1::ListRunsRequest too_many;
  too_many.set_limit(kMaxRunPageSize + 1);
  EXPECT_EQ(BuildRunIdQuery(too_many).status().message().substr(0, 6), "limit:");

  v1::ListRunsRequest token;
  token.set_page_token("x'; DROP TABLE runs; --");
  EXPECT_EQ(BuildRunIdQuery(token).status().message().substr(0, 11), "page_token:");

  v1::ListRunsRequest unspecified;
  unspecified.add_states(v1::RUN_STATE_QUEUED);
  unspecified.add_states(v1::RUN_STATE_UNSPECIFIED);
  EXPECT_EQ(BuildRunIdQuery(unspecified).status().message().substr(0, 10), "states[1]:");

  v1::ListRunsRequest backwards;
  backwards.set_created_after_unix(200);
  backwards.set_created_before_unix(100);
  EXPECT_EQ(BuildRunIdQuery(backwards).status().message().substr(0, 20), "created_before_unix:");
}

TEST_F(RunQueryTest, FilterValuesAreBoundNeverSpliced) {
  Create("a'b", "ebizzy", 1000);
  v1::ListRunsRequest request;
  request.set_name("a'b");
  request.set_benchmark("ebizzy' OR '1'='1");
  auto query = BuildRunIdQuery(request);
  ASSERT_TRUE(query.ok());
  EXPECT_EQ(query->sql.find('\''), std::string::npos) << query->sql;
  EXPECT_TRUE(Ids(request).empty());
  request.set_benchmark("ebizzy");
  EXPECT_EQ(Ids(request), (std::vector<std::string>{"1"}));
}

}  // namespace
}  // namespace tlbfleet::store
