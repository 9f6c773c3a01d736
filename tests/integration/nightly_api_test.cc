// The nightly API over HTTP on a real controller (development mode, loopback): schedules
// from YAML or JSON with errors naming the field, pause, resume and removal; series,
// regressions and bisections readable; a bisection over entries no host has refused by
// field; the NightlyService over gRPC answering the same. Roles are in
// auth_integration_test.cc with every other endpoint.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <ctime>

#include "tests/integration/harness.h"
#include "tests/integration/http_client.h"
#include "tlbfleet/v1/nightly.grpc.pb.h"

namespace tlbfleet::testing {
namespace {

// A cron that will not fire while the test runs (midnight on January 1st).
constexpr char kSchedule[] =
    "name: nightly-pipetest\n"
    "cron: \"0 0 1 1 *\"\n"
    "run: {benchmark: pipetest, params: {loops: 2000}, iterations: 2, arms: [{name: lab}]}\n";

Headers Yaml() { return {{"Content-Type", "application/yaml"}}; }
Headers Json() { return {{"Content-Type", "application/json"}}; }

class NightlyApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controller_ = std::make_unique<ControllerProcess>(dir_.path());
    ASSERT_GT(controller_->http_port(), 0) << controller_->process().Log();
  }
  int port() const { return controller_->http_port(); }

  TempDir dir_;
  std::unique_ptr<ControllerProcess> controller_;
};

TEST_F(NightlyApiTest, SchedulesAreAddedPausedResumedAndRemoved) {
  HttpResult added =
      HttpCall(port(), "POST", "/api/v1/schedules?source=nightly.yaml", Yaml(), kSchedule);
  ASSERT_EQ(added.status, 201) << added.body;
  const std::string id = JsonField(added.body, "id");
  ASSERT_FALSE(id.empty()) << added.body;
  EXPECT_EQ(added.Header("location"), "/api/v1/schedules/" + id);
  EXPECT_NE(added.body.find("\"cron\":\"0 0 1 1 *\""), std::string::npos) << added.body;
  EXPECT_GT(std::stoll(JsonField(added.body, "nextSlotUnix")), std::time(nullptr)) << added.body;

  // The same name again: 409, and the first schedule stays as it was.
  HttpResult again = HttpCall(port(), "POST", "/api/v1/schedules", Yaml(), kSchedule);
  EXPECT_EQ(again.status, 409) << again.body;

  HttpResult listed = HttpCall(port(), "GET", "/api/v1/schedules");
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_NE(listed.body.find("nightly-pipetest"), std::string::npos) << listed.body;

  HttpResult paused = HttpCall(port(), "POST", "/api/v1/schedules/" + id + "/pause");
  ASSERT_EQ(paused.status, 200) << paused.body;
  EXPECT_EQ(JsonField(paused.body, "paused"), "true") << paused.body;
  EXPECT_EQ(JsonField(paused.body, "nextSlotUnix"), "0") << paused.body;
  HttpResult resumed = HttpCall(port(), "POST", "/api/v1/schedules/" + id + "/resume");
  ASSERT_EQ(resumed.status, 200) << resumed.body;
  EXPECT_EQ(JsonField(resumed.body, "paused"), "false") << resumed.body;
  // The next slot is the coming January 1st, midnight UTC.
  EXPECT_GT(std::stoll(JsonField(resumed.body, "nextSlotUnix")), std::time(nullptr))
      << resumed.body;

  // JSON body: an AddScheduleRequest.
  HttpResult json = HttpCall(port(), "POST", "/api/v1/schedules", Json(),
                             R"({"specYaml": "name: second\ncron: \"@weekly\"\nrun: {benchmark: )"
                             R"(pipetest, iterations: 2, arms: [{name: a}]}\n", )"
                             R"("sourceName": "second.yaml"})");
  ASSERT_EQ(json.status, 201) << json.body;

  HttpResult removed = HttpCall(port(), "DELETE", "/api/v1/schedules/" + id);
  ASSERT_EQ(removed.status, 200) << removed.body;
  listed = HttpCall(port(), "GET", "/api/v1/schedules");
  EXPECT_EQ(listed.body.find("nightly-pipetest"), std::string::npos) << listed.body;
  EXPECT_NE(listed.body.find("second"), std::string::npos) << listed.body;
  EXPECT_EQ(HttpCall(port(), "DELETE", "/api/v1/schedules/" + id).status, 404);
}

TEST_F(NightlyApiTest, BadSchedulesAndBisectionsAreRefusedNamingTheField) {
  struct Case {
    std::string path, body, field, words;
  };
  const std::vector<Case> cases = {
      {"/api/v1/schedules", "name: n\ncron: \"0 24 * * *\"\nrun: {benchmark: pipetest}\n", "cron",
       "out of range"},
      {"/api/v1/schedules", "name: \"a b\"\ncron: \"@daily\"\nrun: {benchmark: pipetest}\n", "name",
       "letters"},
      {"/api/v1/schedules", "name: n\ncron: \"@daily\"\nrun: {benchmark: nosuch}\n", "", "nosuch"},
      {"/api/v1/schedules", "name: n\ncron: \"@daily\"\nrun: {benchmark: pipetest}\ncolour: red\n",
       "colour", "unknown"},
      {"/api/v1/bisects", "entries: [e0, e1, e2]\ngood: e1\nbad: e1\nrun: {benchmark: pipetest}\n",
       "bad", "same entry"},
      {"/api/v1/bisects",
       "entries: [e0, e1, 'e 2']\ngood: e0\nbad: e1\nrun: {benchmark: pipetest}\n", "entries[2]",
       "'e 2'"},
  };
  for (const Case& c : cases) {
    HttpResult r = HttpCall(port(), "POST", c.path, Yaml(), c.body);
    EXPECT_EQ(r.status, 400) << c.body << " -> " << r.body;
    EXPECT_EQ(JsonField(r.body, "code"), "INVALID_ARGUMENT") << r.body;
    if (!c.field.empty()) {
      EXPECT_EQ(JsonField(r.body, "field"), c.field) << c.body << r.body;
    }
    EXPECT_NE(r.body.find(c.words), std::string::npos) << c.body << " -> " << r.body;
  }
  // Not YAML at all, and a JSON body of the wrong shape: 400, never a crash.
  EXPECT_EQ(HttpCall(port(), "POST", "/api/v1/schedules", Yaml(), "[: ::").status, 400);
  EXPECT_EQ(HttpCall(port(), "POST", "/api/v1/bisects", Json(), R"({"specYaml": 3})").status, 400);
  EXPECT_EQ(
      HttpCall(port(), "POST", "/api/v1/regressions/1", Json(), R"({"status": "nope"})").status,
      400);
  // Nothing was stored by any of them.
  HttpResult schedules = HttpCall(port(), "GET", "/api/v1/schedules");
  EXPECT_EQ(schedules.body, "{\"schedules\":[]}\n") << schedules.body;
  HttpResult bisects = HttpCall(port(), "GET", "/api/v1/bisects");
  EXPECT_EQ(bisects.body, "{\"bisects\":[]}\n") << bisects.body;
}

TEST_F(NightlyApiTest, HistoryIsReadableOverHttpAndGrpcAlike) {
  ASSERT_EQ(HttpCall(port(), "POST", "/api/v1/schedules", Yaml(), kSchedule).status, 201);
  for (const char* path : {"/api/v1/series?with_points=true", "/api/v1/regressions?statuses=open",
                           "/api/v1/bisects?limit=5"}) {
    HttpResult r = HttpCall(port(), "GET", path);
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
  }
  EXPECT_EQ(HttpCall(port(), "GET", "/api/v1/bisects/99").status, 404);
  EXPECT_EQ(HttpCall(port(), "GET", "/api/v1/series?colour=red").status, 400);

  auto stub = v1::NightlyService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(controller_->grpc_port()), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  v1::ListSchedulesResponse schedules;
  grpc::Status s = stub->ListSchedules(&ctx, v1::ListSchedulesRequest(), &schedules);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(schedules.schedules_size(), 1);
  EXPECT_EQ(schedules.schedules(0).spec().name(), "nightly-pipetest");
}

}  // namespace
}  // namespace tlbfleet::testing
