#pragma once
// A small blocking HTTP/1.1 client for integration tests (Boost.Beast), and a reader of
// Server-Sent Events that waits on what it reads with a deadline.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tlbfleet::testing {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpResult {
  int status = 0;                              // 0 when the request failed at the transport
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

HttpResult HttpCall(int port, const std::string& method, const std::string& target,
                    const Headers& headers = {}, const std::string& body = "");

// The same over TLS, trusting the CA in `ca_file` (PEM) for a certificate of 127.0.0.1.
HttpResult HttpsCall(int port, const std::string& ca_file, const std::string& method,
                     const std::string& target, const Headers& headers = {},
                     const std::string& body = "");

// Sends `bytes` as they are and returns everything the server answers until it closes.
std::string RawHttp(int port, const std::string& bytes);

// The value of `key` in a flat JSON object's text ("runId":"5" or "jobs":2), or "".
std::string JsonField(const std::string& json, const std::string& key);

// One Server-Sent Events connection.
class SseClient {
 public:
  SseClient(int port, const std::string& target, const Headers& headers = {});
  ~SseClient();
  int status() const { return status_; }
  // Reads until the received text contains `what`, the server closes, or `timeout`.
  bool WaitFor(const std::string& what, std::chrono::milliseconds timeout);
  // Reads until the server closes the connection or `timeout`; true if it closed.
  bool WaitClosed(std::chrono::milliseconds timeout);
  const std::string& text() const { return text_; }
  // The ids of the events received ("id: N" lines), in order.
  std::vector<uint64_t> Ids() const;

 private:
  bool ReadSome(std::chrono::milliseconds timeout);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int status_ = 0;
  bool closed_ = false;
  std::string text_;
};

}  // namespace tlbfleet::testing
