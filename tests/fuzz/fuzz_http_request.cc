// Fuzzes the controller's HTTP front end from raw bytes on: Boost.Beast's request parser
// with the server's limits, the query string, the router, and every /api/v1 handler with its
// JSON (or YAML) body decoding — run and nightly endpoints alike — against a real controller
// on a SQLite file (on /dev/shm, writes on the calling thread) in development mode (loopback:
// every request is the development caller, so handlers get past authentication).
//
// Input: one HTTP/1.1 request as a client would send it. What Beast refuses is dropped (the
// server answers 400 and closes). Checks: no crash or sanitizer report; every answer has a
// status of 200-599 and, for an error, a JSON body with a code.
//
// The store persists across inputs (a fresh one per input would spend the time in SQLite's
// migrations); runs and schedules the fuzzer manages to create stay, which lets later inputs
// meet real rows. Seeds: corpus/fuzz_http_request (one request per file).

#include <unistd.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "common/clock.h"
#include "controller/api/auth.h"
#include "controller/api/fleet_api.h"
#include "controller/api/http_api.h"
#include "controller/api/nightly_api.h"
#include "controller/api/router.h"
#include "controller/core/controller_impl.h"
#include "controller/nightly/nightly.h"
#include "controller/store/auth_store.h"
#include "controller/store/nightly_store.h"
#include "controller/store/store.h"

namespace {

namespace api = tlbfleet::api;
namespace http = boost::beast::http;

constexpr size_t kBodyLimit = 1 << 20;  // as HttpServerOptions' default

class Service {
 public:
  Service() {
    path_ = "/dev/shm/tlbfleet-fuzz-http-" + std::to_string(::getpid()) + ".db";
    Remove();
    store_ = *tlbfleet::store::Store::Open(path_, {.writer_thread = false});
    auth_store_ = *tlbfleet::store::AuthStore::Open(path_);
    nightly_store_ = *tlbfleet::store::NightlyStore::Open(path_);
    controller_ = std::make_unique<tlbfleet::core::ControllerImpl>(
        *store_, tlbfleet::core::ControllerOptions{}, clock_);
    controller_->RecoverForTest();
    api::AuthOptions auth_options;
    auth_options.loopback_only = true;  // no token exists: development mode
    auth_ = std::make_unique<api::Authenticator>(*auth_store_, auth_options);
    audit_ = std::make_unique<api::AuditLog>(*auth_store_, clock_);
    fleet_ = std::make_unique<api::FleetApi>(controller_->runs(), *audit_);
    nightly_ = std::make_unique<tlbfleet::nightly::Nightly>(controller_->runs(), *nightly_store_);
    nightly_api_ = std::make_unique<api::NightlyApi>(*nightly_, *audit_);
    api::HttpApiOptions options;
    options.nightly = nightly_api_.get();
    options.render_metrics = [] { return std::string("# none\n"); };
    http_api_ = std::make_unique<api::HttpApi>(*fleet_, *auth_, /*events=*/nullptr,
                                               /*files=*/nullptr, options);
    http_api_->Register(router_);
  }
  ~Service() {
    http_api_.reset();
    nightly_api_.reset();
    nightly_.reset();
    controller_.reset();
    Remove();
  }

  // As the server's session does (controller/api/http_server.cc): parse, split the target,
  // route, call the handler.
  void Handle(const uint8_t* data, size_t size) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(kBodyLimit);
    parser.eager(true);
    boost::beast::error_code ec;
    size_t used = parser.put(boost::asio::buffer(data, size), ec);
    if (!ec && !parser.is_done()) parser.put_eof(ec);
    if (ec || !parser.is_done() || used == 0) return;
    const http::request<http::string_body> raw = parser.release();

    api::HttpRequest request;
    request.raw = &raw;
    std::string target(raw.target());
    size_t q = target.find('?');
    request.path = target.substr(0, q);
    request.peer = "127.0.0.1:1";
    if (q != std::string::npos) {
      auto query = api::ParseQuery(absl::string_view(target).substr(q + 1));
      if (!query) return;  // the server answers 400 itself
      request.query = std::move(*query);
    }
    api::Router::Match match = router_.Find(raw.method(), request.path);
    if (match.handler == nullptr) return;
    request.params = std::move(match.params);
    request.route = match.pattern;
    api::HttpResponse response = (*match.handler)(request);
    if (response.status < 200 || response.status > 599) std::abort();
    if (response.status >= 400 && response.body.find("\"code\"") == std::string::npos) {
      std::abort();  // an error must say what it is
    }
  }

 private:
  void Remove() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix);
  }

  std::string path_;
  std::unique_ptr<tlbfleet::store::Store> store_;
  std::unique_ptr<tlbfleet::store::AuthStore> auth_store_;
  std::unique_ptr<tlbfleet::store::NightlyStore> nightly_store_;
  tlbfleet::FakeClock clock_{absl::FromUnixMillis(1'800'000'000'000)};
  std::unique_ptr<tlbfleet::core::ControllerImpl> controller_;
  std::unique_ptr<api::Authenticator> auth_;
  std::unique_ptr<api::AuditLog> audit_;
  std::unique_ptr<api::FleetApi> fleet_;
  std::unique_ptr<tlbfleet::nightly::Nightly> nightly_;
  std::unique_ptr<api::NightlyApi> nightly_api_;
  std::unique_ptr<api::HttpApi> http_api_;
  api::Router router_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One per process (see the header comment); libFuzzer ends with exit(), so the database
  // files on /dev/shm go with it.
  static Service* service = [] {
    std::atexit([] { delete service; });
    return new Service();
  }();
  service->Handle(data, size);
  return 0;
}
