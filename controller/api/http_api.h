#pragma once
// /api/v1 over HTTP: the routes, and how a request becomes a FleetApi call (credentials
// from a Bearer token or the session cookie; the request message from the path, the query
// string and a JSON body) and its answer becomes JSON. See docs/api.md.
//
// Adding an endpoint: one line in Register and, if it is a FleetService method, nothing
// else (Rpc does the rest).

#include <functional>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "controller/api/auth.h"
#include "controller/api/fleet_api.h"
#include "controller/api/nightly_api.h"
#include "controller/api/router.h"
#include "controller/api/static_files.h"

namespace tlbfleet::api {

class RunEventStreams;

struct HttpApiOptions {
  bool tls = false;  // session cookies get `Secure`
  // GET /metrics (role viewer, like every read): the Prometheus text exposition. Unset: no
  // such route.
  std::function<std::string()> render_metrics;
  // Schedules, series, regressions and bisections (docs/api.md, nightly). Null: no such
  // routes.
  NightlyApi* nightly = nullptr;
};

class HttpApi {
 public:
  // `events` may be null (no /events route); `files` may be null (no dashboard route).
  HttpApi(FleetApi& fleet, Authenticator& auth, RunEventStreams* events, const StaticFiles* files,
          HttpApiOptions options);

  void Register(Router& router);

  // Who sent `request`: its Bearer token, else its session cookie (with the CSRF check for
  // state-changing methods), else nobody (or the development-mode caller).
  Caller CallerFor(const HttpRequest& request);

 private:
  // A FleetApi (or NightlyApi) method as a handler: GET takes the request message from the
  // query string, other methods from a JSON body; path parameters fill fields of the same name.
  template <typename Api, typename Req, typename Resp>
  HttpHandler Rpc(Api& api, absl::StatusOr<Resp> (Api::*method)(const Caller&, const Req&));
  template <typename Req, typename Resp>
  HttpHandler Rpc(absl::StatusOr<Resp> (FleetApi::*method)(const Caller&, const Req&)) {
    return Rpc(fleet_, method);
  }
  // A method whose request carries a YAML spec (spec_yaml, source_name): the body is either
  // the YAML itself (Content-Type application/yaml, ?source=NAME) or the JSON request. The
  // answer is 201 with Location: `location_prefix` + the new object's id. `unnamed_source`
  // is what the spec parser calls an unnamed spec in its errors (to find the field).
  template <typename Api, typename Req, typename Resp>
  HttpHandler SpecRpc(Api& api, absl::StatusOr<Resp> (Api::*method)(const Caller&, const Req&),
                      std::string location_prefix, std::string unnamed_source);

  HttpResponse Login(HttpRequest& request);
  HttpResponse Logout(HttpRequest& request);
  HttpResponse WhoAmI(HttpRequest& request);
  HttpResponse Events(HttpRequest& request);
  HttpResponse Metrics(HttpRequest& request);

  std::string SessionCookie(const std::string& value, int64_t max_age_seconds) const;

  FleetApi& fleet_;
  Authenticator& auth_;
  RunEventStreams* events_;
  const StaticFiles* files_;
  const HttpApiOptions options_;
};

constexpr char kSessionCookie[] = "tlbfleet_session";
constexpr char kCsrfHeader[] = "X-CSRF-Token";

// The value of cookie `name` in a Cookie header, or "".
std::string CookieValue(absl::string_view header, absl::string_view name);

}  // namespace tlbfleet::api
