#pragma once
// What an HTTP handler sees and returns. Handlers run on the server's worker threads, never
// on its I/O thread, so they may block on SQLite or compute a comparison.

#include <boost/beast/http.hpp>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tlbfleet::api {

namespace beast_http = boost::beast::http;
using RawRequest = beast_http::request<beast_http::string_body>;

struct HttpRequest {
  const RawRequest* raw = nullptr;  // method, headers, body
  std::string path;                 // the target before '?', still percent-encoded
  std::vector<std::pair<std::string, std::string>> query;  // decoded, in order
  std::map<std::string, std::string> params;               // decoded path parameters, e.g. {run_id}
  std::string route;  // the pattern that matched ("/api/v1/runs/{run_id}"), or "static"
  std::string peer;   // "127.0.0.1:53122"
  bool tls = false;

  beast_http::verb method() const { return raw->method(); }
  std::string Header(beast_http::field field) const { return std::string((*raw)[field]); }
  std::string Header(const std::string& name) const { return std::string((*raw)[name]); }
  const std::string& body() const { return raw->body(); }
};

// The sending half of a streamed response (Server-Sent Events). Thread-safe; owned jointly
// by the HTTP session and the producer.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // Queues `data` for the client. false when the stream is closed or the client is so far
  // behind that it was dropped (it reconnects and resumes: SSE Last-Event-ID).
  virtual bool Write(std::string data) = 0;
  // Ends the response once queued data is written.
  virtual void Close() = 0;
};

// The producing half: the server calls Start once the response header is sent, and Stop
// when the client goes away or the server stops (after which the sink refuses writes).
class StreamProducer {
 public:
  virtual ~StreamProducer() = default;
  virtual void Start(std::shared_ptr<StreamSink> sink) = 0;
  virtual void Stop() = 0;
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, `body` is ignored: the header goes out now and the producer streams the body.
  std::shared_ptr<StreamProducer> stream;
};

}  // namespace tlbfleet::api
