#pragma once
// The controller's HTTP listener (Boost.Beast). For now it serves only GET /healthz
// ("ok"); the JSON API, /metrics and the dashboard come later on the same listener.

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace tlbfleet::api {

class HttpServer {
 public:
  // Binds `address` ("host:port"; port 0 picks a free one) and serves on its own thread.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& address);
  ~HttpServer();  // stops and joins

  uint16_t port() const { return port_; }

 private:
  struct Impl;
  HttpServer() = default;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
  std::thread thread_;
};

// Splits "host:port" / "[v6]:port". INVALID_ARGUMENT naming `field` when malformed.
absl::StatusOr<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& address,
                                                               const std::string& field);

}  // namespace tlbfleet::api
