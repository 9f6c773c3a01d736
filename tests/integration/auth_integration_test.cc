// Authentication end to end, on a real controller with tokens made by
// `tlbfleet-controller token create`: every HTTP endpoint per role, browser sessions with
// CSRF, FleetService over gRPC, the CLI, agents and their enrollment tokens, development
// mode, the audit log — and no token in any log file these tests produce.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/integration/harness.h"
#include "tests/integration/http_client.h"
#include "tlbfleet/v1/nightly.grpc.pb.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kSpec[] =
    "name: auth-run\nbenchmark: ebizzy\nparams: {seconds: 1}\narms: [{name: a}, {name: b}]\n";

class AuthIntegrationTest : public ::testing::Test {
 protected:
  void TearDown() override {
    // No secret of any token may appear in any log file the test produced.
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir_.path())) {
      if (!entry.is_regular_file() || entry.path().extension() != ".log") continue;
      std::ifstream in(entry.path());
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string text = ss.str();
      for (const auto& [role, token] : tokens_) {
        // "tlbf_" + 16 hex digits of id + "_": the secret follows, and may itself hold '_'.
        const std::string secret = token.substr(std::string("tlbf_0123456789abcdef_").size());
        EXPECT_EQ(text.find(secret), std::string::npos)
            << "the " << role << " token is in " << entry.path();
      }
      EXPECT_EQ(text.find("tlbf_"), std::string::npos) << entry.path();
    }
  }

  std::string Db() const { return dir_.path() + "/fleet.db"; }

  // `tlbfleet-controller token create`; the token is the last line of its output.
  std::string CreateToken(const std::string& role, const std::string& name) {
    std::string out;
    int rc = RunCommand({BinPath("tlbfleet-controller"), "token", "create", "--db", Db(), "--role",
                         role, "--name", name},
                        &out);
    EXPECT_EQ(rc, 0) << out;
    std::string last = out.substr(0, out.size() - 1);
    last = last.substr(last.rfind('\n') + 1);
    EXPECT_EQ(last.substr(0, 5), "tlbf_") << out;
    tokens_[name] = last;
    return last;
  }
  std::string TokenFile(const std::string& name) {
    std::string path = dir_.path() + "/" + name + ".token";
    std::ofstream(path) << tokens_.at(name) << "\n";
    std::filesystem::permissions(
        path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return path;
  }
  void Start() {
    controller_ = std::make_unique<ControllerProcess>(dir_.path());
    ASSERT_GT(controller_->http_port(), 0) << controller_->process().Log();
  }
  void MakeUsers() {
    for (const char* role : {"viewer", "operator", "admin", "agent"}) {
      CreateToken(role, std::string(role) + "-1");
    }
  }
  Headers Bearer(const std::string& name) {
    return {{"Authorization", "Bearer " + tokens_.at(name)}};
  }
  int port() const { return controller_->http_port(); }
  std::string AuditJson() {
    std::string out;
    RunCommand({BinPath("tlbfleet-controller"), "audit", "--db", Db(), "--format", "json"}, &out);
    return out;
  }

  TempDir dir_;
  std::map<std::string, std::string> tokens_;  // by name
  std::unique_ptr<ControllerProcess> controller_;
};

struct Endpoint {
  std::string method, path, content_type, body;
  std::string min_role;  // viewer or operator
};

TEST_F(AuthIntegrationTest, EveryEndpointNeedsATokenWithARoleLargeEnough) {
  MakeUsers();
  Start();
  HttpResult first = HttpCall(
      port(), "POST", "/api/v1/runs",
      [&] {
        Headers h = Bearer("operator-1");
        h.emplace_back("Content-Type", "application/yaml");
        return h;
      }(),
      kSpec);
  ASSERT_EQ(first.status, 201) << first.body;
  const std::string id = JsonField(first.body, "runId");
  HttpResult schedule = HttpCall(
      port(), "POST", "/api/v1/schedules",
      [&] {
        Headers h = Bearer("operator-1");
        h.emplace_back("Content-Type", "application/yaml");
        return h;
      }(),
      "name: s\ncron: \"0 0 1 1 *\"\nrun: {benchmark: pipetest, arms: [{name: a}]}\n");
  ASSERT_EQ(schedule.status, 201) << schedule.body;
  const std::string schedule_id = JsonField(schedule.body, "id");

  const std::vector<Endpoint> endpoints = {
      {"GET", "/api/v1/hosts", "", "", "viewer"},
      {"GET", "/api/v1/runs", "", "", "viewer"},
      {"GET", "/api/v1/runs/" + id, "", "", "viewer"},
      {"GET", "/api/v1/runs/" + id + "/results", "", "", "viewer"},
      {"GET", "/api/v1/runs/" + id + "/compare", "", "", "viewer"},
      {"GET", "/api/v1/workloads", "", "", "viewer"},
      {"GET", "/api/v1/whoami", "", "", "viewer"},
      {"POST", "/api/v1/runs", "application/yaml", kSpec, "operator"},
      {"POST", "/api/v1/runs/" + id + "/cancel", "", "", "operator"},
      {"GET", "/api/v1/schedules", "", "", "viewer"},
      {"GET", "/api/v1/series", "", "", "viewer"},
      {"GET", "/api/v1/regressions", "", "", "viewer"},
      {"GET", "/api/v1/bisects", "", "", "viewer"},
      {"POST", "/api/v1/schedules/" + schedule_id + "/pause", "", "", "operator"},
      {"POST", "/api/v1/schedules/" + schedule_id + "/resume", "", "", "operator"},
  };
  for (const Endpoint& e : endpoints) {
    auto call = [&](const Headers& auth) {
      Headers h = auth;
      if (!e.content_type.empty()) h.emplace_back("Content-Type", e.content_type);
      return HttpCall(port(), e.method, e.path, h, e.body);
    };
    const std::string what = e.method + " " + e.path;
    HttpResult none = call({});
    EXPECT_EQ(none.status, 401) << what << ": " << none.body;
    EXPECT_EQ(JsonField(none.body, "code"), "UNAUTHENTICATED") << what;
    EXPECT_EQ(none.Header("www-authenticate"), "Bearer realm=\"tlbfleet\"") << what;
    EXPECT_EQ(call({{"Authorization", "Bearer tlbf_0123456789abcdef_wrong"}}).status, 401) << what;
    EXPECT_EQ(call({{"Authorization", "Basic b3A6b3A="}}).status, 401) << what;
    if (e.path != "/api/v1/whoami") {
      // Agent tokens open agent streams, nothing else.
      EXPECT_EQ(call(Bearer("agent-1")).status, 403) << what;
    }
    HttpResult viewer = call(Bearer("viewer-1"));
    if (e.min_role == "viewer") {
      EXPECT_EQ(viewer.status, 200) << what << ": " << viewer.body;
    } else {
      EXPECT_EQ(viewer.status, 403) << what << ": " << viewer.body;
      EXPECT_NE(viewer.body.find("needs role operator"), std::string::npos) << viewer.body;
    }
    for (const char* user : {"operator-1", "admin-1"}) {
      HttpResult ok = call(Bearer(user));
      EXPECT_TRUE(ok.status == 200 || ok.status == 201) << what << " " << user << ": " << ok.body;
    }
  }

  // The event stream: a viewer may watch, nobody else.
  const std::string events = "/api/v1/runs/" + id + "/events";
  EXPECT_EQ(HttpCall(port(), "GET", events).status, 401);
  EXPECT_EQ(HttpCall(port(), "GET", events, Bearer("agent-1")).status, 403);
  SseClient watching(port(), events, Bearer("viewer-1"));
  EXPECT_EQ(watching.status(), 200);

  // The audit log has who, what, from where and how it ended, refusals included.
  std::string audit = AuditJson();
  EXPECT_NE(audit.find(R"("principal":"viewer-1","role":"ROLE_VIEWER","action":"SubmitRun")"),
            std::string::npos)
      << audit;
  EXPECT_NE(audit.find(R"("outcome":"PERMISSION_DENIED")"), std::string::npos);
  EXPECT_NE(audit.find(R"("principal":"anonymous")"), std::string::npos);
  EXPECT_NE(audit.find(R"("outcome":"UNAUTHENTICATED")"), std::string::npos);
  EXPECT_NE(
      audit.find(
          R"("principal":"operator-1","role":"ROLE_OPERATOR","action":"CancelRun","target":")" +
          id + R"(","source":"http 127.0.0.1:)"),
      std::string::npos)
      << audit;
  EXPECT_NE(audit.find(R"("action":"token create","target":"admin-1")"), std::string::npos);
  // Reads are not audited.
  EXPECT_EQ(audit.find("\"action\":\"ListRuns\""), std::string::npos);

  std::string list;
  ASSERT_EQ(RunCommand({BinPath("tlbfleet-controller"), "token", "list", "--db", Db()}, &list), 0);
  EXPECT_NE(list.find("viewer-1"), std::string::npos);
}

TEST_F(AuthIntegrationTest, BrowserSessionsNeedTheirCsrfTokenAndEndOnLogout) {
  MakeUsers();
  Start();
  HttpResult login =
      HttpCall(port(), "POST", "/api/v1/login", {{"Content-Type", "application/json"}},
               R"({"token": ")" + tokens_.at("operator-1") + R"("})");
  ASSERT_EQ(login.status, 200) << login.body;
  const std::string set_cookie = login.Header("set-cookie");
  EXPECT_NE(set_cookie.find("HttpOnly"), std::string::npos);
  EXPECT_NE(set_cookie.find("SameSite=Strict"), std::string::npos);
  EXPECT_EQ(set_cookie.find("Secure"), std::string::npos);  // plain HTTP here
  const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
  const std::string csrf = JsonField(login.body, "csrfToken");
  ASSERT_FALSE(csrf.empty());
  EXPECT_EQ(JsonField(login.body, "role"), "ROLE_OPERATOR");

  EXPECT_EQ(HttpCall(port(), "GET", "/api/v1/runs", {{"Cookie", cookie}}).status, 200);
  HttpResult whoami = HttpCall(port(), "GET", "/api/v1/whoami", {{"Cookie", cookie}});
  EXPECT_EQ(JsonField(whoami.body, "csrfToken"), csrf);
  Headers yaml = {{"Cookie", cookie}, {"Content-Type", "application/yaml"}};
  HttpResult forged = HttpCall(port(), "POST", "/api/v1/runs", yaml, kSpec);
  EXPECT_EQ(forged.status, 403) << forged.body;
  yaml.emplace_back("X-CSRF-Token", csrf + "x");
  EXPECT_EQ(HttpCall(port(), "POST", "/api/v1/runs", yaml, kSpec).status, 403);
  yaml.back().second = csrf;
  EXPECT_EQ(HttpCall(port(), "POST", "/api/v1/runs", yaml, kSpec).status, 201);

  EXPECT_EQ(HttpCall(port(), "POST", "/api/v1/logout", {{"Cookie", cookie}}).status, 403);
  HttpResult logout =
      HttpCall(port(), "POST", "/api/v1/logout", {{"Cookie", cookie}, {"X-CSRF-Token", csrf}});
  EXPECT_EQ(logout.status, 200);
  EXPECT_NE(logout.Header("set-cookie").find("Max-Age=0"), std::string::npos);
  // Ended on the server: the old cookie is worthless.
  EXPECT_EQ(HttpCall(port(), "GET", "/api/v1/runs", {{"Cookie", cookie}}).status, 401);

  auto login_with = [&](const std::string& token) {
    return HttpCall(port(), "POST", "/api/v1/login", {{"Content-Type", "application/json"}},
                    R"({"token": ")" + token + R"("})");
  };
  EXPECT_EQ(login_with("tlbf_0123456789abcdef_nope").status, 401);
  EXPECT_EQ(login_with(tokens_.at("agent-1")).status, 403);
  EXPECT_EQ(login_with("").status, 400);
}

TEST_F(AuthIntegrationTest, GrpcAndTheCliNeedCredentialsToo) {
  MakeUsers();
  Start();
  auto call = [&](const std::string& token, bool submit) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    if (submit) {
      v1::SubmitRunRequest request;
      request.set_spec_yaml(kSpec);
      v1::SubmitRunResponse response;
      return controller_->fleet().SubmitRun(&ctx, request, &response).error_code();
    }
    v1::ListRunsResponse response;
    return controller_->fleet().ListRuns(&ctx, v1::ListRunsRequest(), &response).error_code();
  };
  EXPECT_EQ(call("", false), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(call("tlbf_0123456789abcdef_nope", false), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(call(tokens_.at("agent-1"), false), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(call(tokens_.at("viewer-1"), false), grpc::StatusCode::OK);
  EXPECT_EQ(call(tokens_.at("viewer-1"), true), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(call(tokens_.at("operator-1"), true), grpc::StatusCode::OK);

  const std::string cli = BinPath("tlbfleet");
  std::string out;
  EXPECT_NE(RunCommand({cli, "--controller", controller_->address(), "runs"}, &out, true), 0);
  EXPECT_NE(out.find("UNAUTHENTICATED"), std::string::npos) << out;
  EXPECT_EQ(RunCommand({cli, "--controller", controller_->address(), "--token-file",
                        TokenFile("viewer-1"), "runs"},
                       &out, true),
            0)
      << out;
  EXPECT_NE(out.find("auth-run"), std::string::npos) << out;
  EXPECT_EQ(RunCommand({"/usr/bin/env", "TLBFLEET_TOKEN=" + tokens_.at("viewer-1"), cli,
                        "--controller", controller_->address(), "hosts"},
                       &out, true),
            0)
      << out;
  EXPECT_EQ(RunCommand({cli, "--controller", controller_->address(), "--token-file",
                        dir_.path() + "/missing.token", "runs"},
                       &out, true),
            2);
  EXPECT_NE(out.find("--token-file"), std::string::npos) << out;

  // NightlyService and the CLI's nightly commands: the same credentials and roles.
  auto nightly = v1::NightlyService::NewStub(
      grpc::CreateChannel(controller_->address(), grpc::InsecureChannelCredentials()));
  auto nightly_call = [&](const std::string& token, bool add) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    if (add) {
      v1::AddScheduleRequest request;
      request.set_spec_yaml(
          "name: g\ncron: \"0 0 1 1 *\"\nrun: {benchmark: pipetest, arms: [{name: a}]}\n");
      v1::Schedule response;
      return nightly->AddSchedule(&ctx, request, &response).error_code();
    }
    v1::ListSchedulesResponse response;
    return nightly->ListSchedules(&ctx, v1::ListSchedulesRequest(), &response).error_code();
  };
  EXPECT_EQ(nightly_call("", false), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(nightly_call(tokens_.at("agent-1"), false), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(nightly_call(tokens_.at("viewer-1"), false), grpc::StatusCode::OK);
  EXPECT_EQ(nightly_call(tokens_.at("viewer-1"), true), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(nightly_call(tokens_.at("operator-1"), true), grpc::StatusCode::OK);
  EXPECT_NE(
      RunCommand({cli, "--controller", controller_->address(), "schedule", "list"}, &out, true), 0);
  EXPECT_NE(out.find("UNAUTHENTICATED"), std::string::npos) << out;
  EXPECT_EQ(RunCommand({cli, "--controller", controller_->address(), "--token-file",
                        TokenFile("viewer-1"), "schedule", "list"},
                       &out, true),
            0)
      << out;
  EXPECT_NE(out.find("0 0 1 1 *"), std::string::npos) << out;
}

TEST_F(AuthIntegrationTest, AgentsNeedAnEnrollmentToken) {
  MakeUsers();
  Start();
  auto agent = [&](const std::string& name, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {BinPath("tlbfleet-agent"),
                                     "--controller",
                                     controller_->address(),
                                     "--state-dir",
                                     dir_.path() + "/" + name,
                                     "--max-backoff-seconds",
                                     "1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<Process>(argv, dir_.path() + "/" + name + ".log");
  };
  auto refusals = [&] {
    std::string log = controller_->process().Log();
    size_t n = 0;
    for (size_t pos = 0; (pos = log.find("refusing an agent stream", pos)) != std::string::npos;
         ++pos) {
      ++n;
    }
    return n;
  };
  {
    auto anonymous = agent("anonymous", {});
    ASSERT_TRUE(WaitFor([&] { return refusals() >= 1; }, 30s)) << controller_->process().Log();
    EXPECT_NE(controller_->process().Log().find("UNAUTHENTICATED"), std::string::npos);
  }
  {
    auto viewer = agent("as-viewer", {"--token-file", TokenFile("viewer-1")});
    ASSERT_TRUE(WaitFor([&] { return refusals() >= 3; }, 30s)) << controller_->process().Log();
    EXPECT_NE(controller_->process().Log().find("PERMISSION_DENIED"), std::string::npos);
  }
  EXPECT_EQ(QueryInt(Db(), "SELECT COUNT(*) FROM hosts"), 0);  // no Hello was ever read
  auto enrolled = agent("enrolled", {"--token-file", TokenFile("agent-1")});
  controller_->set_token(tokens_.at("viewer-1"));
  ASSERT_TRUE(WaitFor([&] { return controller_->ConnectedHosts() == 1; }, 30s))
      << controller_->process().Log() << enrolled->Log();
  // A token file that does not exist is a configuration mistake: exit 2 at once.
  auto missing = agent("missing", {"--token-file", dir_.path() + "/nope.token"});
  int status = missing->Wait(30s);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(missing->Log().find("--token-file"), std::string::npos);
}

TEST_F(AuthIntegrationTest, AnAgentIdHasOneLiveStreamAndBelongsToItsFirstCredential) {
  MakeUsers();
  CreateToken("agent", "agent-2");
  Start();
  controller_->set_token(tokens_.at("viewer-1"));
  auto agent = [&](const std::string& name, const std::string& token) {
    return std::make_unique<Process>(
        std::vector<std::string>{BinPath("tlbfleet-agent"), "--controller", controller_->address(),
                                 "--state-dir", dir_.path() + "/" + name, "--token-file",
                                 TokenFile(token), "--max-backoff-seconds", "1"},
        dir_.path() + "/" + name + ".log");
  };
  auto first = agent("first", "agent-1");
  ASSERT_TRUE(WaitFor([&] { return controller_->ConnectedHosts() == 1; }, 30s))
      << controller_->process().Log();
  // A second process with the same agent id (its state directory copied) is refused while
  // the first is connected: the first is not silently replaced.
  std::filesystem::create_directories(dir_.path() + "/copy");
  std::filesystem::copy_file(dir_.path() + "/first/agent-id", dir_.path() + "/copy/agent-id");
  auto copy = agent("copy", "agent-1");
  ASSERT_TRUE(WaitFor(
      [&] { return copy->Log().find("already has a live stream") != std::string::npos; }, 30s))
      << copy->Log() << controller_->process().Log();
  EXPECT_EQ(controller_->ConnectedHosts(), 1);
  EXPECT_TRUE(first->Running());
  copy.reset();
  first.reset();  // SIGKILL: the stream ends, the id is free again...
  ASSERT_TRUE(WaitFor([&] { return controller_->ConnectedHosts() == 0; }, 30s));
  // ...but only for the credential that registered it first.
  std::filesystem::create_directories(dir_.path() + "/other");
  std::filesystem::copy_file(dir_.path() + "/first/agent-id", dir_.path() + "/other/agent-id");
  auto other = agent("other", "agent-2");
  ASSERT_TRUE(WaitFor(
      [&] { return controller_->process().Log().find("PERMISSION_DENIED") != std::string::npos; },
      30s))
      << other->Log() << controller_->process().Log();
  EXPECT_EQ(controller_->ConnectedHosts(), 0);
  EXPECT_EQ(QueryInt(Db(), "SELECT COUNT(*) FROM hosts WHERE principal = 'token:agent-1'"), 1);
}

TEST_F(AuthIntegrationTest, DevelopmentModeEndsWithTheFirstToken) {
  Start();
  EXPECT_EQ(HttpCall(port(), "GET", "/api/v1/runs").status, 200);
  EXPECT_NE(controller_->process().Log().find("DEVELOPMENT MODE"), std::string::npos);
  const std::string token = CreateToken("viewer", "first");
  EXPECT_EQ(HttpCall(port(), "GET", "/api/v1/runs").status, 401);
  EXPECT_EQ(HttpCall(port(), "GET", "/api/v1/runs", Bearer("first")).status, 200);
}

}  // namespace
}  // namespace tlbfleet::testing
