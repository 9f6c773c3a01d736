#pragma once
// The controller's HTTP listener (Boost.Beast): /healthz, the JSON API (/api/v1/...), the
// SSE streams and the dashboard's static files, all through one Router.
//
// Threads: one I/O thread runs every socket; handlers run on worker pools (Router's Pool:
// a fast pool for ordinary requests, a slow one for comparisons and result sets), so no
// request holds the I/O thread. Requests larger than `body_limit` and malformed requests
// get a 400 and the connection is closed.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "controller/api/router.h"

namespace tlbfleet::api {

// One answered request, for access logs and metrics.
struct HttpResponseInfo {
  std::string route;  // the router's pattern, "static", "unmatched" or "malformed"
  std::string method;
  std::string path;
  std::string peer;
  unsigned status = 0;
  double seconds = 0;  // from the request's arrival to its response (before it is sent)
};

struct HttpServerOptions {
  std::string address = "127.0.0.1:8080";  // host:port; port 0 picks a free one
  std::string flag = "--http-listen";      // names the address in errors
  size_t body_limit = 1 << 20;
  // TLS (PEM files): serve HTTPS only. Empty: plain HTTP.
  std::string tls_cert;
  std::string tls_key;
  int fast_workers = 2;
  int slow_workers = 2;
  // Called after each response is produced (a stream's when it starts), on a worker or the
  // I/O thread: quick and thread-safe.
  std::function<void(const HttpResponseInfo&)> on_response;
};

class HttpServer {
 public:
  // Binds and serves on threads of its own. `router` must outlive the server.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                           const Router& router);
  ~HttpServer();  // stops streams, waits for running handlers, joins

  uint16_t port() const { return port_; }

  struct Impl;

 private:
  HttpServer() = default;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
  std::thread thread_;
};

// Splits "host:port" / "[v6]:port". INVALID_ARGUMENT naming `field` when malformed.
absl::StatusOr<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& address,
                                                               const std::string& field);

// Whether `host` (as SplitHostPort returns it) is a loopback address or "localhost".
bool IsLoopbackHost(const std::string& host);

}  // namespace tlbfleet::api
