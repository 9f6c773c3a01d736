#pragma once
// Method + path pattern -> handler. Patterns are literal segments and `{name}` segments,
// which match one non-empty segment and are handed to the handler, percent-decoded, in
// HttpRequest::params:
//
//   router.Add(verb::get, "/api/v1/runs/{run_id}", HandleGetRun);
//
// A path that matches a pattern under another method answers 405 with `Allow`. Not
// thread-safe to modify; Add everything before the server starts, then Match from any thread.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "controller/api/http_types.h"

namespace tlbfleet::api {

using HttpHandler = std::function<HttpResponse(HttpRequest& request)>;

// Which worker pool runs a route: comparisons and full result sets can take seconds, so
// they have a pool of their own and never delay a list or a login.
enum class Pool { kFast, kSlow };

class Router {
 public:
  void Add(beast_http::verb method, absl::string_view pattern, HttpHandler handler,
           Pool pool = Pool::kFast);
  // Answers GET and HEAD requests that no route matches (the dashboard's static files).
  void SetFallback(HttpHandler handler) { fallback_ = std::move(handler); }

  struct Match {
    const HttpHandler* handler = nullptr;  // null: no route (see allowed)
    Pool pool = Pool::kFast;
    std::string pattern;  // as given to Add; "static" for the fallback
    std::map<std::string, std::string> params;
    std::vector<beast_http::verb> allowed;  // methods the path has, when handler is null
  };
  // Matches `path` (percent-encoded, without the query). A path segment that does not
  // decode (bad %xx, NUL, invalid UTF-8) matches nothing.
  Match Find(beast_http::verb method, absl::string_view path) const;

 private:
  struct Route {
    beast_http::verb method;
    std::string pattern;
    std::vector<std::string> segments;  // "{name}" for a parameter
    HttpHandler handler;
    Pool pool;
  };
  std::vector<Route> routes_;
  HttpHandler fallback_;
};

// Percent-decodes `text` ('+' is a space when `plus_is_space`, as in a query string).
// nullopt for a malformed escape, a NUL byte or invalid UTF-8.
std::optional<std::string> PercentDecode(absl::string_view text, bool plus_is_space);
bool IsValidUtf8(absl::string_view text);

// Splits "a=1&b=x%20y" into decoded pairs; nullopt when a part does not decode.
std::optional<std::vector<std::pair<std::string, std::string>>> ParseQuery(absl::string_view query);

}  // namespace tlbfleet::api
