#include "controller/api/http_api.h"

#include <type_traits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "controller/api/credentials.h"
#include "controller/api/http_export.h"
#include "controller/api/http_json.h"
#include "controller/api/router.h"
#include "controller/api/run_event_streams.h"
#include "controller/report/results_csv.h"
#include "tlbfleet/v1/auth.pb.h"

namespace tlbfleet::api {

namespace {

using beast_http::verb;

bool StateChanging(verb method) {
  return method != verb::get && method != verb::head && method != verb::options;
}

// "SubmitRunRequest" -> "SubmitRun": the audit log's name for the action.
std::string ActionOf(const google::protobuf::Descriptor* request) {
  return std::string(absl::StripSuffix(request->name(), "Request"));
}

bool IsYaml(const std::string& content_type) {
  return ContentTypeIs(content_type, "application/yaml") ||
         ContentTypeIs(content_type, "application/x-yaml") ||
         ContentTypeIs(content_type, "text/yaml");
}

}  // namespace

std::string CookieValue(absl::string_view header, absl::string_view name) {
  for (absl::string_view part : absl::StrSplit(header, ';')) {
    part = absl::StripAsciiWhitespace(part);
    size_t eq = part.find('=');
    if (eq != absl::string_view::npos && part.substr(0, eq) == name) {
      return std::string(part.substr(eq + 1));
    }
  }
  return "";
}

HttpApi::HttpApi(FleetApi& fleet, Authenticator& auth, RunEventStreams* events,
                 const StaticFiles* files, HttpApiOptions options)
    : fleet_(fleet), auth_(auth), events_(events), files_(files), options_(options) {}

Caller HttpApi::CallerFor(const HttpRequest& request) {
  std::string source = absl::StrCat("http ", request.peer);
  std::string authorization = request.Header(beast_http::field::authorization);
  if (!authorization.empty()) return auth_.FromToken(authorization, std::move(source));
  std::string session = CookieValue(request.Header(beast_http::field::cookie), kSessionCookie);
  if (!session.empty()) {
    return auth_.FromSession(session, request.Header(kCsrfHeader), StateChanging(request.method()),
                             std::move(source));
  }
  return auth_.FromToken("", std::move(source));
}

template <typename Api, typename Req, typename Resp>
HttpHandler HttpApi::Rpc(Api& api, absl::StatusOr<Resp> (Api::*method)(const Caller&, const Req&)) {
  return [this, &api, method](HttpRequest& r) -> HttpResponse {
    Caller caller = CallerFor(r);
    Req request;
    absl::Status parsed = absl::OkStatus();
    if (StateChanging(r.method())) parsed = ParseJsonBody(r, &request);
    if (parsed.ok()) parsed = SetFromQuery(r, &request);
    if (parsed.ok()) parsed = SetFromPath(r, &request);
    if (!parsed.ok()) {
      // An anonymous caller learns only that it must authenticate.
      absl::Status answer = caller.authenticated() ? parsed : caller.status;
      if (StateChanging(r.method())) {
        fleet_.audit().Record(caller, ActionOf(Req::descriptor()), "", answer);
      }
      return ErrorResponse(answer);
    }
    absl::StatusOr<Resp> response = (api.*method)(caller, request);
    if (!response.ok()) return ErrorResponse(response.status());
    return JsonResponse(*response);
  };
}

template <typename Api, typename Req, typename Resp>
HttpHandler HttpApi::SpecRpc(Api& api,
                             absl::StatusOr<Resp> (Api::*method)(const Caller&, const Req&),
                             std::string location_prefix, std::string unnamed_source) {
  return [this, &api, method, location_prefix, unnamed_source](HttpRequest& r) -> HttpResponse {
    Caller caller = CallerFor(r);
    Req request;
    absl::Status parsed = absl::OkStatus();
    if (IsYaml(r.Header(beast_http::field::content_type))) {
      // The spec itself, as the CLI reads it from a file; ?source=NAME names it in errors.
      if (!IsValidUtf8(r.body())) {
        parsed = absl::InvalidArgumentError("body: not valid UTF-8");
      } else {
        request.set_spec_yaml(r.body());
        for (const auto& [key, value] : r.query) {
          if (key == "source" || key == "source_name" || key == "sourceName") {
            request.set_source_name(value);
          } else if (parsed.ok()) {
            parsed = absl::InvalidArgumentError(
                absl::StrCat(key, ": unknown query parameter (known: source)"));
          }
        }
      }
    } else {
      parsed = ParseJsonBody(r, &request);
      if (parsed.ok()) parsed = SetFromQuery(r, &request);
    }
    if (parsed.ok() && request.spec_yaml().empty()) {
      parsed = absl::InvalidArgumentError(
          "spec_yaml: required (or send the spec itself as application/yaml)");
    }
    const std::string action = ActionOf(Req::descriptor());
    if (!parsed.ok()) {
      absl::Status answer = caller.authenticated() ? parsed : caller.status;
      fleet_.audit().Record(caller, action, "", answer);
      return ErrorResponse(answer);
    }
    absl::StatusOr<Resp> response = (api.*method)(caller, request);
    if (!response.ok()) {
      return ErrorResponse(response.status(),
                           request.source_name().empty() ? unnamed_source : request.source_name());
    }
    std::string id;
    if constexpr (std::is_same_v<Resp, v1::SubmitRunResponse>) {
      id = response->run_id();
    } else {
      id = response->id();
    }
    HttpResponse out = JsonResponse(*response, 201);
    out.headers.emplace_back("Location", location_prefix + id);
    return out;
  };
}

void HttpApi::Register(Router& router) {
  router.Add(verb::get, "/api/v1/hosts", Rpc(&FleetApi::ListHosts));
  router.Add(verb::get, "/api/v1/runs", Rpc(&FleetApi::ListRuns));
  router.Add(verb::post, "/api/v1/runs",
             SpecRpc(fleet_, &FleetApi::SubmitRun, "/api/v1/runs/", "<run spec>"));
  router.Add(verb::get, "/api/v1/runs/{run_id}", Rpc(&FleetApi::GetRun));
  router.Add(verb::post, "/api/v1/runs/{run_id}/cancel", Rpc(&FleetApi::CancelRun));
  router.Add(verb::get, "/api/v1/runs/{run_id}/results", Rpc(&FleetApi::GetResults), Pool::kSlow);
  // The samples as `tlbfleet results --format csv` prints them: the dashboard's download is
  // these bytes, written by the one CSV writer (report/results_csv.h).
  router.Add(
      verb::get, "/api/v1/runs/{run_id}/results.csv",
      [this](HttpRequest& r) -> HttpResponse {
        Caller caller = CallerFor(r);
        v1::GetResultsRequest request;
        absl::Status parsed = SetFromQuery(r, &request);
        if (parsed.ok()) parsed = SetFromPath(r, &request);
        if (!parsed.ok()) return ErrorResponse(caller.authenticated() ? parsed : caller.status);
        absl::StatusOr<v1::GetResultsResponse> results = fleet_.GetResults(caller, request);
        if (!results.ok()) return ErrorResponse(results.status());
        HttpResponse out;
        out.content_type = "text/csv; charset=utf-8";
        out.body = report::FormatResultsCsv(*results);
        out.headers.emplace_back(
            "Content-Disposition",
            absl::StrCat("attachment; filename=\"run-", request.run_id(), "-samples.csv\""));
        return out;
      },
      Pool::kSlow);
  router.Add(verb::get, "/api/v1/runs/{run_id}/compare", Rpc(&FleetApi::Compare), Pool::kSlow);
  // A finished run as mmtests, LKP or Bencher read it (api/http_export.h, docs/formats.md).
  router.Add(
      verb::get, "/api/v1/runs/{run_id}/export/{format}",
      [this](HttpRequest& r) { return ExportRunOverHttp(fleet_, CallerFor(r), r); }, Pool::kSlow);
  router.Add(verb::get, "/api/v1/workloads", Rpc(&FleetApi::ListWorkloads));
  router.Add(verb::get, "/api/v1/builds/{task_id}/log", Rpc(&FleetApi::GetBuildLog));
  router.Add(verb::post, "/api/v1/login", [this](HttpRequest& r) { return Login(r); });
  router.Add(verb::post, "/api/v1/logout", [this](HttpRequest& r) { return Logout(r); });
  router.Add(verb::get, "/api/v1/whoami", [this](HttpRequest& r) { return WhoAmI(r); });
  if (events_ != nullptr) {
    router.Add(verb::get, "/api/v1/runs/{run_id}/events",
               [this](HttpRequest& r) { return Events(r); });
  }
  if (NightlyApi* n = options_.nightly; n != nullptr) {
    router.Add(verb::get, "/api/v1/schedules", Rpc(*n, &NightlyApi::ListSchedules));
    router.Add(verb::post, "/api/v1/schedules",
               SpecRpc(*n, &NightlyApi::AddSchedule, "/api/v1/schedules/", "schedule"));
    router.Add(verb::post, "/api/v1/schedules/{id}/pause", Rpc(*n, &NightlyApi::PauseSchedule));
    router.Add(verb::post, "/api/v1/schedules/{id}/resume", Rpc(*n, &NightlyApi::ResumeSchedule));
    router.Add(verb::delete_, "/api/v1/schedules/{id}", Rpc(*n, &NightlyApi::RemoveSchedule));
    router.Add(verb::get, "/api/v1/series", Rpc(*n, &NightlyApi::ListSeries), Pool::kSlow);
    router.Add(verb::get, "/api/v1/regressions", Rpc(*n, &NightlyApi::ListRegressions));
    router.Add(verb::post, "/api/v1/regressions/{id}", Rpc(*n, &NightlyApi::UpdateRegression));
    router.Add(verb::get, "/api/v1/bisects", Rpc(*n, &NightlyApi::ListBisects));
    router.Add(verb::post, "/api/v1/bisects",
               SpecRpc(*n, &NightlyApi::StartBisect, "/api/v1/bisects/", "bisect"));
    router.Add(verb::get, "/api/v1/bisects/{id}", Rpc(*n, &NightlyApi::GetBisect));
    router.Add(verb::post, "/api/v1/bisects/{id}/cancel", Rpc(*n, &NightlyApi::CancelBisect));
  }
  if (options_.render_metrics) {
    router.Add(verb::get, "/metrics", [this](HttpRequest& r) { return Metrics(r); });
  }
  if (files_ != nullptr) {
    router.SetFallback([this](HttpRequest& r) { return files_->Serve(r); });
  }
}

std::string HttpApi::SessionCookie(const std::string& value, int64_t max_age_seconds) const {
  return absl::StrCat(kSessionCookie, "=", value, "; Path=/; Max-Age=", max_age_seconds,
                      "; HttpOnly; SameSite=Strict", options_.tls ? "; Secure" : "");
}

HttpResponse HttpApi::Login(HttpRequest& r) {
  std::string source = absl::StrCat("http ", r.peer);
  v1::LoginRequest request;
  absl::Status parsed = ParseJsonBody(r, &request);
  if (parsed.ok()) parsed = SetFromQuery(r, &request);
  std::string token = request.token();
  if (parsed.ok() && token.empty()) {
    std::string authorization = r.Header(beast_http::field::authorization);
    absl::string_view value = absl::StripAsciiWhitespace(authorization);
    if (absl::ConsumePrefix(&value, "Bearer ")) token = std::string(value);
  }
  Caller anonymous;
  anonymous.source = source;
  if (!parsed.ok()) {
    fleet_.audit().Record(anonymous, "Login", "", parsed);
    return ErrorResponse(parsed);
  }
  absl::StatusOr<SessionGrant> grant = auth_.Login(token, source);
  if (!grant.ok()) {
    fleet_.audit().Record(anonymous, "Login", "", grant.status());
    return ErrorResponse(grant.status());
  }
  fleet_.audit().Record(grant->caller, "Login", grant->caller.name, absl::OkStatus(),
                        "session created");
  v1::LoginResponse response;
  response.set_csrf_token(grant->csrf_token);
  response.mutable_principal()->set_name(grant->caller.name);
  response.mutable_principal()->set_role(grant->caller.role);
  response.set_expires_unix(grant->caller.session_expires_ms / 1000);
  HttpResponse out = JsonResponse(response);
  const int64_t max_age = (grant->caller.session_expires_ms - auth_.Now()) / 1000;
  out.headers.emplace_back("Set-Cookie", SessionCookie(grant->session_id, max_age));
  return out;
}

HttpResponse HttpApi::Logout(HttpRequest& r) {
  Caller caller = CallerFor(r);
  std::string session = CookieValue(r.Header(beast_http::field::cookie), kSessionCookie);
  absl::Status s = caller.authenticated() ? absl::OkStatus() : caller.status;
  // Logging out is allowed with an expired session (it just clears the cookie), but a live
  // session needs its CSRF token, like any state change, or a page elsewhere could end it.
  if (!session.empty() && s.ok()) s = auth_.Logout(session);
  if (s.code() == absl::StatusCode::kUnauthenticated) s = absl::OkStatus();
  fleet_.audit().Record(caller, "Logout", caller.name, s);
  if (!s.ok()) return ErrorResponse(s);
  HttpResponse out = JsonResponse(v1::LogoutResponse());
  out.headers.emplace_back("Set-Cookie", SessionCookie("", 0));
  return out;
}

HttpResponse HttpApi::WhoAmI(HttpRequest& r) {
  Caller caller = CallerFor(r);
  if (!caller.authenticated()) return ErrorResponse(caller.status);
  v1::WhoAmIResponse response;
  response.mutable_principal()->set_name(caller.name);
  response.mutable_principal()->set_role(caller.role);
  response.set_development_mode(caller.development_mode);
  if (!caller.session_id.empty()) {
    response.set_csrf_token(CsrfToken(caller.session_id));
    response.set_expires_unix(caller.session_expires_ms / 1000);
  }
  return JsonResponse(response);
}

HttpResponse HttpApi::Events(HttpRequest& r) {
  Caller caller = CallerFor(r);
  return events_->Open(caller, r);
}

HttpResponse HttpApi::Metrics(HttpRequest& r) {
  Caller caller = CallerFor(r);
  if (absl::Status s = Require(caller, v1::ROLE_VIEWER, "/metrics"); !s.ok()) {
    return ErrorResponse(s);
  }
  if (!r.query.empty()) {
    return ErrorResponse(absl::InvalidArgumentError(
        absl::StrCat(r.query.front().first, ": unknown query parameter (none are known)")));
  }
  HttpResponse out;
  out.content_type = "text/plain; version=0.0.4; charset=utf-8";
  out.body = options_.render_metrics();
  return out;
}

}  // namespace tlbfleet::api
