#include "controller/api/http_json.h"

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "tlbfleet/v1/auth.pb.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::api {
namespace {

struct FakeRequest {
  RawRequest raw;
  HttpRequest request;
  FakeRequest(std::string body, std::string content_type,
              std::vector<std::pair<std::string, std::string>> query = {}) {
    raw.body() = std::move(body);
    if (!content_type.empty()) raw.set(beast_http::field::content_type, content_type);
    request.raw = &raw;
    request.query = std::move(query);
  }
};

v1::ApiError ErrorOf(const HttpResponse& r) {
  v1::ApiError e;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.body, &e).ok()) << r.body;
  return e;
}

TEST(HttpJsonTest, StatusesFollowTheGrpcCode) {
  EXPECT_EQ(HttpStatusFor(absl::StatusCode::kInvalidArgument), 400u);
  EXPECT_EQ(HttpStatusFor(absl::StatusCode::kUnauthenticated), 401u);
  EXPECT_EQ(HttpStatusFor(absl::StatusCode::kPermissionDenied), 403u);
  EXPECT_EQ(HttpStatusFor(absl::StatusCode::kNotFound), 404u);
  EXPECT_EQ(HttpStatusFor(absl::StatusCode::kAlreadyExists), 409u);
  EXPECT_EQ(HttpStatusFor(absl::StatusCode::kUnavailable), 503u);
  EXPECT_EQ(HttpStatusFor(absl::StatusCode::kInternal), 500u);
}

TEST(HttpJsonTest, ErrorsNameTheirField) {
  EXPECT_EQ(FieldOf("arms[1].params.threads: must be an integer"), "arms[1].params.threads");
  EXPECT_EQ(FieldOf("ebizzy.yaml: sweep.threads[0]: bad", "ebizzy.yaml"), "sweep.threads[0]");
  EXPECT_EQ(FieldOf("<run spec>:3:5: bad indentation", "<run spec>"), "");
  EXPECT_EQ(FieldOf("run 7 not found"), "");
  EXPECT_EQ(FieldOf("token \"a\" has role viewer; CancelRun needs role operator"), "");

  HttpResponse r = ErrorResponse(absl::InvalidArgumentError("limit: at most 1000"));
  EXPECT_EQ(r.status, 400u);
  v1::ApiError e = ErrorOf(r);
  EXPECT_EQ(e.code(), "INVALID_ARGUMENT");
  EXPECT_EQ(e.field(), "limit");
  HttpResponse unauthenticated = ErrorResponse(absl::UnauthenticatedError("no credentials"));
  EXPECT_EQ(unauthenticated.status, 401u);
  ASSERT_EQ(unauthenticated.headers.size(), 1u);
  EXPECT_EQ(unauthenticated.headers[0].first, "WWW-Authenticate");
}

TEST(HttpJsonTest, AnErrorMessageWithBadBytesIsStillValidJson) {
  HttpResponse r = ErrorResponse(absl::InvalidArgumentError("name: \xff\xfe bad"));
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(ErrorOf(r).message(), "name: \xEF\xBF\xBD\xEF\xBF\xBD bad");
}

TEST(HttpJsonTest, BodiesAreStrict) {
  v1::ListRunsRequest m;
  EXPECT_TRUE(ParseJsonBody(FakeRequest("{\"limit\": 5, \"states\": [\"RUN_STATE_FAILED\"]}",
                                        "application/json; charset=utf-8")
                                .request,
                            &m)
                  .ok());
  EXPECT_EQ(m.limit(), 5u);
  EXPECT_EQ(m.states(0), v1::RUN_STATE_FAILED);

  struct Case {
    std::string body, type, starts;
  } cases[] = {
      {"{\"limt\": 5}", "application/json", "limt: unknown field"},
      {"{\"limit\": \"many\"}", "application/json", "limit: "},
      {"{\"limit\": -1}", "application/json", "limit: "},
      {"{\"limit\": 5", "application/json", "Unexpected end"},
      {"[1]", "application/json", ""},
      {"{\"name\": \"\xff\"}", "application/json", "body: not valid UTF-8"},
      {"{\"limit\": 5}", "text/plain", "Content-Type: expected application/json"},
  };
  for (const Case& c : cases) {
    v1::ListRunsRequest out;
    absl::Status s = ParseJsonBody(FakeRequest(c.body, c.type).request, &out);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.body;
    EXPECT_EQ(s.message().substr(0, c.starts.size()), c.starts) << s.message();
  }
  v1::ListRunsRequest empty;
  EXPECT_TRUE(ParseJsonBody(FakeRequest("", "").request, &empty).ok());
}

TEST(HttpJsonTest, QueryStringsSetFieldsByReflection) {
  v1::ListRunsRequest m;
  FakeRequest r("", "",
                {{"limit", "20"},
                 {"states", "running,RUN_STATE_FAILED"},
                 {"createdAfterUnix", "1700000000"},
                 {"name", "nightly ebizzy"}});
  ASSERT_TRUE(SetFromQuery(r.request, &m).ok());
  EXPECT_EQ(m.limit(), 20u);
  ASSERT_EQ(m.states_size(), 2);
  EXPECT_EQ(m.states(0), v1::RUN_STATE_RUNNING);
  EXPECT_EQ(m.states(1), v1::RUN_STATE_FAILED);
  EXPECT_EQ(m.created_after_unix(), 1700000000);
  EXPECT_EQ(m.name(), "nightly ebizzy");

  struct Case {
    std::vector<std::pair<std::string, std::string>> query;
    std::string starts;
  } cases[] = {
      {{{"limit", "-3"}}, "limit: invalid value"},
      {{{"limit", "1"}, {"limit", "2"}}, "limit: given more than once"},
      {{{"states", "asleep"}}, "states: invalid value \"asleep\" (expected one of"},
      {{{"states", "unspecified"}}, "states: invalid value"},
      {{{"colour", "red"}}, "colour: unknown query parameter"},
  };
  for (const Case& c : cases) {
    v1::ListRunsRequest out;
    FakeRequest bad("", "", c.query);
    absl::Status s = SetFromQuery(bad.request, &out);
    EXPECT_EQ(s.message().substr(0, c.starts.size()), c.starts) << s.message();
  }
}

TEST(HttpJsonTest, IntegerPathParametersAreParsedAndBadOnesNamed) {
  v1::GetBuildLogRequest m;
  FakeRequest r("", "");
  r.request.params["task_id"] = "42";
  ASSERT_TRUE(SetFromPath(r.request, &m).ok());
  EXPECT_EQ(m.task_id(), 42);
  v1::GetBuildLogRequest bad;
  FakeRequest b("", "");
  b.request.params["task_id"] = "4x";
  const absl::Status s = SetFromPath(b.request, &bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().substr(0, 8), "task_id:") << s.message();
}

TEST(HttpJsonTest, PathParametersWinButMayNotContradictTheBody) {
  v1::CancelRunRequest m;
  FakeRequest r("", "");
  r.request.params["run_id"] = "7";
  ASSERT_TRUE(SetFromPath(r.request, &m).ok());
  EXPECT_EQ(m.run_id(), "7");
  v1::CancelRunRequest other;
  other.set_run_id("8");
  EXPECT_EQ(SetFromPath(r.request, &other).message().substr(0, 7), "run_id:");
  // A path parameter is not also a query parameter.
  FakeRequest q("", "", {{"run_id", "9"}});
  q.request.params["run_id"] = "7";
  EXPECT_FALSE(SetFromQuery(q.request, &m).ok());
}

TEST(HttpJsonTest, ResponsesPrintEveryField) {
  v1::Run run;
  run.set_id("3");
  HttpResponse r = JsonResponse(run);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_NE(r.body.find("\"samples\":\"0\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"state\":\"RUN_STATE_UNSPECIFIED\""), std::string::npos) << r.body;
}

}  // namespace
}  // namespace tlbfleet::api
