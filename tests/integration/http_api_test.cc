// The HTTP/JSON API against a real controller (and, where a run must finish, a real agent)
// on loopback: every endpoint, validation errors naming their field, malformed input, and
// the dashboard's static files. Authentication and roles: auth_integration_test.cc.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/harness.h"
#include "tests/integration/http_client.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kSpec[] = R"(name: http-two-arms
benchmark: ebizzy
params: {seconds: 1, chunks: 4, chunk_size: 65536}
iterations: 1
arms:
  - {name: mmap,   params: {mmap: always}}
  - {name: malloc, params: {mmap: never}}
)";

class HttpApiTest : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> args = {}) {
    controller_ = std::make_unique<ControllerProcess>(dir_.path(), std::move(args));
    ASSERT_GT(controller_->http_port(), 0) << controller_->process().Log();
  }
  void StartAgent() {
    agent_ = std::make_unique<Process>(
        std::vector<std::string>{BinPath("tlbfleet-agent"), "--controller", controller_->address(),
                                 "--state-dir", dir_.path() + "/agent", "--max-backoff-seconds",
                                 "1"},
        dir_.path() + "/agent.log");
    ASSERT_TRUE(WaitFor([&] { return controller_->ConnectedHosts() == 1; }, 30s))
        << controller_->process().Log() << agent_->Log();
  }
  HttpResult Get(const std::string& target) { return HttpCall(port(), "GET", target); }
  HttpResult PostJson(const std::string& target, const std::string& json) {
    return HttpCall(port(), "POST", target, {{"Content-Type", "application/json"}}, json);
  }
  HttpResult PostYaml(const std::string& yaml) {
    return HttpCall(port(), "POST", "/api/v1/runs", {{"Content-Type", "application/yaml"}}, yaml);
  }
  std::string WaitRunEnd(const std::string& run_id) {
    std::string state;
    WaitFor(
        [&] {
          state = JsonField(Get("/api/v1/runs/" + run_id).body, "state");
          return state == "RUN_STATE_SUCCEEDED" || state == "RUN_STATE_FAILED" ||
                 state == "RUN_STATE_CANCELLED";
        },
        120s);
    return state;
  }
  int port() const { return controller_->http_port(); }

  TempDir dir_;
  std::unique_ptr<ControllerProcess> controller_;
  std::unique_ptr<Process> agent_;
};

TEST_F(HttpApiTest, EveryEndpointOfARunFromSubmitToComparison) {
  Start();
  StartAgent();
  EXPECT_EQ(Get("/healthz").body, "ok\n");

  HttpResult hosts = Get("/api/v1/hosts");
  EXPECT_EQ(hosts.status, 200);
  EXPECT_EQ(hosts.Header("content-type"), "application/json");
  EXPECT_EQ(JsonField(hosts.body, "connected"), "true") << hosts.body;

  HttpResult workloads = Get("/api/v1/workloads");
  EXPECT_EQ(workloads.status, 200);
  for (const char* want : {"\"name\":\"ebizzy\"", "\"TYPE_INT\"", "\"max\":\"4096\"",
                           "\"unit\":\"records/s\"", "\"ref\":\"tlbflush-performance/"}) {
    EXPECT_NE(workloads.body.find(want), std::string::npos) << want;
  }

  HttpResult submitted = PostYaml(kSpec);
  ASSERT_EQ(submitted.status, 201) << submitted.body;
  const std::string run_id = JsonField(submitted.body, "runId");
  ASSERT_FALSE(run_id.empty()) << submitted.body;
  EXPECT_EQ(submitted.Header("location"), "/api/v1/runs/" + run_id);
  EXPECT_EQ(JsonField(submitted.body, "jobs"), "2");

  EXPECT_EQ(WaitRunEnd(run_id), "RUN_STATE_SUCCEEDED") << agent_->Log();
  HttpResult run = Get("/api/v1/runs/" + run_id);
  EXPECT_EQ(JsonField(run.body, "name"), "http-two-arms");
  EXPECT_EQ(JsonField(run.body, "succeeded"), "2");

  HttpResult results = Get("/api/v1/runs/" + run_id + "/results");
  EXPECT_EQ(results.status, 200);
  EXPECT_NE(results.body.find("\"metric\":\"records_per_sec\""), std::string::npos);
  EXPECT_NE(results.body.find("\"arm\":\"malloc\""), std::string::npos);

  // The samples CSV the dashboard downloads: the very bytes `tlbfleet results` prints.
  HttpResult csv = Get("/api/v1/runs/" + run_id + "/results.csv");
  EXPECT_EQ(csv.status, 200);
  EXPECT_EQ(csv.Header("content-type"), "text/csv; charset=utf-8");
  EXPECT_NE(csv.Header("content-disposition").find("run-" + run_id + "-samples.csv"),
            std::string::npos);
  std::string cli;
  ASSERT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "results",
                        run_id},
                       &cli),
            0);
  EXPECT_EQ(csv.body, cli);
  EXPECT_EQ(Get("/api/v1/runs/999999/results.csv").status, 404);

  HttpResult compare = Get("/api/v1/runs/" + run_id + "/compare?baseline=malloc");
  EXPECT_EQ(compare.status, 200) << compare.body;
  EXPECT_NE(compare.body.find("\"report\""), std::string::npos);
  EXPECT_NE(compare.body.find("mmap"), std::string::npos);
  HttpResult no_arm = Get("/api/v1/runs/" + run_id + "/compare?baseline=nope");
  EXPECT_EQ(no_arm.status, 400);
  EXPECT_EQ(JsonField(no_arm.body, "field"), "baseline");

  // A second run, as a JSON SubmitRunRequest, cancelled while it waits for a free host.
  std::string json_spec = kSpec;
  std::string escaped;
  for (char c : json_spec) escaped += c == '\n' ? std::string("\\n") : std::string(1, c);
  HttpResult second = PostJson(
      "/api/v1/runs", R"({"specYaml": ")" + escaped + R"(", "sourceName": "second.yaml"})");
  ASSERT_EQ(second.status, 201) << second.body;
  const std::string second_id = JsonField(second.body, "runId");
  HttpResult cancelled = PostJson("/api/v1/runs/" + second_id + "/cancel", "");
  EXPECT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(WaitRunEnd(second_id), "RUN_STATE_CANCELLED");

  // The list, newest first, with filters and paging.
  HttpResult all = Get("/api/v1/runs");
  EXPECT_LT(all.body.find("\"id\":\"" + second_id + "\""),
            all.body.find("\"id\":\"" + run_id + "\""));
  HttpResult page = Get("/api/v1/runs?limit=1");
  const std::string token = JsonField(page.body, "nextPageToken");
  ASSERT_FALSE(token.empty()) << page.body;
  HttpResult page2 = Get("/api/v1/runs?limit=1&page_token=" + token);
  EXPECT_NE(page2.body.find("\"id\":\"" + run_id + "\""), std::string::npos) << page2.body;
  EXPECT_EQ(JsonField(page2.body, "nextPageToken"), "");
  HttpResult succeeded = Get("/api/v1/runs?states=succeeded&benchmark=ebizzy");
  EXPECT_NE(succeeded.body.find("\"id\":\"" + run_id + "\""), std::string::npos);
  EXPECT_EQ(succeeded.body.find("\"id\":\"" + second_id + "\""), std::string::npos);
  EXPECT_EQ(Get("/api/v1/runs?benchmark=pft").body.find("\"id\""), std::string::npos);

  HttpResult whoami = Get("/api/v1/whoami");
  EXPECT_EQ(JsonField(whoami.body, "developmentMode"), "true");
}

TEST_F(HttpApiTest, RunProgressStreamsLiveAndResumesAfterLastEventId) {
  Start();
  StartAgent();
  HttpResult submitted = PostYaml(R"(name: sse
benchmark: ebizzy
params: {seconds: 1, chunks: 4, chunk_size: 65536}
iterations: 3
arms: [{name: only}]
)");
  ASSERT_EQ(submitted.status, 201) << submitted.body;
  const std::string id = JsonField(submitted.body, "runId");
  const std::string events = "/api/v1/runs/" + id + "/events";

  SseClient live(port(), events);
  ASSERT_EQ(live.status(), 200);
  // The first job's end arrives while the run still has two jobs to go: live, not replayed.
  ASSERT_TRUE(live.WaitFor("\"state\":\"JOB_STATE_SUCCEEDED\"", 60s)) << live.text();
  EXPECT_EQ(JsonField(Get("/api/v1/runs/" + id).body, "state"), "RUN_STATE_RUNNING");
  ASSERT_TRUE(live.WaitFor("event: end", 120s)) << live.text() << agent_->Log();
  EXPECT_TRUE(live.WaitClosed(10s));
  EXPECT_NE(live.text().find("RUN_STATE_SUCCEEDED"), std::string::npos);
  std::vector<uint64_t> ids = live.Ids();
  ASSERT_GE(ids.size(), 8u) << live.text();  // queued, running, 3 x (leased, done), succeeded
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_LT(ids[i - 1], ids[i]) << live.text();

  // A client that saw the first three events gets exactly the rest, then the end.
  SseClient resumed(port(), events, {{"Last-Event-ID", std::to_string(ids[2])}});
  ASSERT_TRUE(resumed.WaitFor("event: end", 30s)) << resumed.text();
  EXPECT_EQ(resumed.Ids(), std::vector<uint64_t>(ids.begin() + 3, ids.end()));
  // One that saw everything gets only the end.
  SseClient done(port(), events + "?last_event_id=" + std::to_string(ids.back()));
  ASSERT_TRUE(done.WaitFor("event: end", 30s));
  EXPECT_TRUE(done.Ids().empty());

  EXPECT_EQ(HttpCall(port(), "GET", events, {{"Last-Event-ID", "x"}}).status, 400);
  EXPECT_EQ(Get("/api/v1/runs/999/events").status, 404);
}

TEST_F(HttpApiTest, BadInputIsRefusedWithTheFieldAndNeverTakesTheServerDown) {
  Start();
  struct Case {
    std::string name;
    HttpResult result;
    int status;
    std::string field;
  };
  std::vector<Case> cases;
  cases.push_back({"spec field", PostYaml(std::string(kSpec) + "sweep: {threadz: [1, 2]}\n"), 400,
                   "sweep.threadz"});
  cases.push_back(
      {"param bound",
       PostYaml("name: x\nbenchmark: ebizzy\narms: [{name: a, params: {threads: 0}}]\n"), 400,
       "arms[0].params.threads"});
  cases.push_back({"yaml syntax", PostYaml("name: [unclosed\n"), 400, ""});
  cases.push_back(
      {"unknown field", PostJson("/api/v1/runs", R"({"specYml": "x"})"), 400, "specYml"});
  cases.push_back({"wrong type", PostJson("/api/v1/runs", R"({"specYaml": 5})"), 400, "spec_yaml"});
  cases.push_back(
      {"bad utf-8", PostJson("/api/v1/runs", "{\"specYaml\": \"\xff\xfe\"}"), 400, "body"});
  cases.push_back({"not json", PostJson("/api/v1/runs", "{\"specYaml\": "), 400, ""});
  cases.push_back({"no content type",
                   HttpCall(port(), "POST", "/api/v1/runs", {}, R"({"specYaml": "x"})"), 400, ""});
  cases.push_back({"query type", Get("/api/v1/runs?limit=many"), 400, "limit"});
  cases.push_back({"query bound", Get("/api/v1/runs?limit=5000"), 400, "limit"});
  cases.push_back({"unknown query", Get("/api/v1/runs?colour=red"), 400, "colour"});
  cases.push_back({"run id", Get("/api/v1/runs/abc"), 400, "run_id"});
  cases.push_back({"unknown run", Get("/api/v1/runs/999"), 404, ""});
  cases.push_back({"unknown path", Get("/api/v1/nothing"), 404, ""});
  cases.push_back({"wrong method", HttpCall(port(), "DELETE", "/api/v1/runs/1"), 405, ""});
  for (const Case& c : cases) {
    EXPECT_EQ(c.result.status, c.status) << c.name << ": " << c.result.body;
    EXPECT_EQ(c.result.Header("content-type"), "application/json") << c.name;
    EXPECT_FALSE(JsonField(c.result.body, "code").empty()) << c.name << ": " << c.result.body;
    EXPECT_EQ(JsonField(c.result.body, "field"), c.field) << c.name << ": " << c.result.body;
  }

  // Over 1 MiB: refused before the body is read, and the connection is closed.
  HttpResult big = PostYaml(std::string(kSpec) + "# " + std::string((1 << 20) + 10, 'x') + "\n");
  EXPECT_EQ(big.status, 400) << big.body;
  EXPECT_NE(big.body.find("larger than"), std::string::npos) << big.body;
  // Garbage that is not HTTP at all, and a header block too large to parse.
  EXPECT_NE(RawHttp(port(), "HELLO\r\n\r\n").find("400"), std::string::npos);
  EXPECT_NE(RawHttp(port(), "GET / HTTP/1.1\r\nX: " + std::string(20 << 10, 'a') + "\r\n\r\n")
                .find(" 400 "),
            std::string::npos);
  // Still serving, and nothing was stored.
  EXPECT_EQ(Get("/healthz").status, 200);
  EXPECT_EQ(QueryInt(controller_->db_path(), "SELECT COUNT(*) FROM runs"), 0);
  EXPECT_TRUE(controller_->process().Running());
}

TEST_F(HttpApiTest, DashboardFilesWithTypesCachingAndCsp) {
  std::string dist = dir_.path() + "/dist";
  std::filesystem::create_directories(dist + "/assets");
  std::ofstream(dist + "/index.html") << "<!doctype html><script type=module src=/assets/a.js>";
  std::ofstream(dist + "/assets/index-4f2a.js") << "export {}";
  Start({"--dashboard-dir", dist});

  HttpResult index = Get("/");
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.Header("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(index.Header("cache-control"), "no-cache");
  EXPECT_NE(index.Header("content-security-policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(index.Header("x-content-type-options"), "nosniff");
  HttpResult route = Get("/runs/12?baseline=a");
  EXPECT_EQ(route.body, index.body);
  HttpResult js = Get("/assets/index-4f2a.js");
  EXPECT_EQ(js.Header("content-type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(js.Header("cache-control"), "public, max-age=31536000, immutable");
  EXPECT_EQ(Get("/assets/nope.js").status, 404);
  EXPECT_EQ(Get("/../fleet.db").status, 404);
  HttpResult head = HttpCall(port(), "HEAD", "/");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.Header("content-length"), std::to_string(index.body.size()));
}

}  // namespace
}  // namespace tlbfleet::testing
