#include "controller/api/http_server.h"

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast.hpp>
#include <boost/beast/ssl.hpp>
#include <charconv>
#include <chrono>
#include <deque>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "controller/api/http_json.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

absl::StatusOr<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& address,
                                                               const std::string& field) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": \"", address, "\" is not host:port (e.g. 127.0.0.1:8080)"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  unsigned port = 0;
  const char* begin = address.data() + colon + 1;
  const char* end = address.data() + address.size();
  auto [ptr, ec] = std::from_chars(begin, end, port);
  if (ec != std::errc() || ptr != end || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": bad port in \"", address, "\" (expected 0..65535)"));
  }
  return std::make_pair(host, static_cast<uint16_t>(port));
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  beast::error_code ec;
  asio::ip::address ip = asio::ip::make_address(host, ec);
  return !ec && ip.is_loopback();
}

namespace {

constexpr auto kReadTimeout = std::chrono::seconds(30);
constexpr auto kWriteTimeout = std::chrono::seconds(30);
constexpr size_t kHeaderLimit = 16 * 1024;
// Lingering close after refusing a request: at most this much more of it is read and dropped.
constexpr size_t kDrainLimit = 16 << 20;
constexpr auto kDrainTime = std::chrono::seconds(5);
// A stream whose client lags this far behind is dropped; it resumes with Last-Event-ID.
constexpr size_t kStreamBacklogLimit = 4 << 20;

// Headers every response carries. Handlers may add their own (a static HTML page sets its
// own Content-Security-Policy; JSON needs none beyond this).
void AddCommonHeaders(http::response_header<>& h) {
  h.set(http::field::server, "tlbfleet-controller");
  h.set("X-Content-Type-Options", "nosniff");
  h.set("Referrer-Policy", "no-referrer");
  h.set("X-Frame-Options", "DENY");
}

bool IsClientError(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::body_limit).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  const Router* router = nullptr;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::optional<asio::ssl::context> tls;  // set under --tls-cert
  asio::thread_pool fast_pool;
  asio::thread_pool slow_pool;
  absl::Mutex streams_mu;
  std::set<std::shared_ptr<StreamProducer>> streams ABSL_GUARDED_BY(streams_mu);
  bool stopping ABSL_GUARDED_BY(streams_mu) = false;

  Impl(const HttpServerOptions& o, const Router& r)
      : options(o),
        router(&r),
        fast_pool(static_cast<size_t>(std::max(1, o.fast_workers))),
        slow_pool(static_cast<size_t>(std::max(1, o.slow_workers))) {}

  void Accept();

  // Returns false when the server is stopping (the stream must not start).
  bool AddStream(const std::shared_ptr<StreamProducer>& p) {
    absl::MutexLock lock(&streams_mu);
    if (stopping) return false;
    streams.insert(p);
    return true;
  }
  void RemoveStream(const std::shared_ptr<StreamProducer>& p) {
    absl::MutexLock lock(&streams_mu);
    streams.erase(p);
  }
};

namespace {

// One connection: reads a request, has a worker produce the response, writes it, repeats;
// or, for a streamed response, writes what the producer queues until either side ends.
// All members are touched on the I/O thread only, except through StreamSinkImpl.
// `Stream` is beast::tcp_stream, or beast::ssl_stream of one under --tls-cert.
template <class Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  HttpSession(Stream stream, HttpServer::Impl& server, std::string peer)
      : stream_(std::move(stream)), server_(server), peer_(std::move(peer)) {}

  void Start() {
    if constexpr (kTls) {
      Lowest().expires_after(kReadTimeout);
      stream_.async_handshake(
          asio::ssl::stream_base::server, [self = Self()](beast::error_code ec) {
            if (ec) {
              // Plain HTTP to a TLS port, a wrong certificate: just close.
              spdlog::debug("http tls handshake from {}: {}", self->peer_, ec.message());
              self->Close();
              return;
            }
            self->Read();
          });
    } else {
      Read();
    }
  }

  asio::any_io_executor executor() { return stream_.get_executor(); }
  std::shared_ptr<HttpSession> Self() { return this->shared_from_this(); }
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }
  const std::string& peer() const { return peer_; }

  // --- streaming ---
  // From any thread: queues data (or the end of the stream) in call order. Handlers posted
  // to the I/O thread from it and from other threads may run out of order, so the order
  // lives in this queue and each posted Flush takes whatever is there.
  void Enqueue(std::optional<std::string> data) {
    {
      absl::MutexLock lock(&pending_mu_);
      if (data) {
        pending_.push_back(*std::move(data));
      } else {
        pending_close_ = true;
      }
    }
    asio::post(executor(), [self = Self()] { self->Flush(); });
  }

  std::atomic<size_t> stream_backlog{0};
  std::atomic<bool> stream_refusing{false};

 private:
  void Read() {
    parser_.emplace();
    parser_->body_limit(server_.options.body_limit);
    parser_->header_limit(kHeaderLimit);
    Lowest().expires_after(kReadTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = Self()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec) {
      if (IsClientError(ec)) {
        // Nothing of the request is trusted; answer and close.
        std::string what =
            ec == http::error::body_limit
                ? absl::StrCat("body: larger than ", server_.options.body_limit, " bytes")
                : absl::StrCat("malformed HTTP request: ", ec.message());
        HttpResponse error = ErrorResponse(absl::InvalidArgumentError(what));
        Report({"malformed", "", "", peer_, error.status, 0});
        // The client may still be sending (a body over the limit): closing with its bytes
        // unread would reset the connection, and a reset can destroy the answer before the
        // client reads it. Drain what it sends after the answer, then close.
        drain_before_close_ = true;
        WriteResponse(std::move(error), /*keep_alive=*/false, /*head=*/false, 11);
        return;
      }
      Shutdown();  // closed, timed out, or reset: nothing to answer
      return;
    }
    request_ = parser_->release();
    Dispatch();
  }

  void Dispatch() {
    auto started = std::chrono::steady_clock::now();
    HttpRequest req;
    req.raw = &request_;
    absl::string_view target(request_.target().data(), request_.target().size());
    size_t q = target.find('?');
    req.path = std::string(target.substr(0, q));
    req.peer = peer_;
    req.tls = kTls;
    const bool keep_alive = request_.keep_alive();
    const bool head = request_.method() == http::verb::head;
    const unsigned version = request_.version();
    if (q != absl::string_view::npos) {
      auto query = ParseQuery(target.substr(q + 1));
      if (!query) {
        HttpResponse error = ErrorResponse(
            absl::InvalidArgumentError("query: malformed percent-encoding or not UTF-8"));
        Report(
            {"malformed", std::string(request_.method_string()), req.path, peer_, error.status, 0});
        WriteResponse(std::move(error), keep_alive, head, version);
        return;
      }
      req.query = std::move(*query);
    }
    Router::Match match = server_.router->Find(request_.method(), req.path);
    if (match.handler == nullptr) {
      HttpResponse response;
      if (!match.allowed.empty()) {
        std::vector<std::string> names;
        for (http::verb v : match.allowed) names.emplace_back(http::to_string(v));
        response = ErrorResponse(absl::InvalidArgumentError(
            absl::StrCat("method ", std::string(request_.method_string()),
                         " not allowed here (allowed: ", absl::StrJoin(names, ", "), ")")));
        response.status = 405;
        response.headers.emplace_back("Allow", absl::StrJoin(names, ", "));
      } else {
        response = ErrorResponse(absl::NotFoundError(absl::StrCat("no such path: ", req.path)));
      }
      Report({"unmatched", std::string(request_.method_string()), req.path, peer_, response.status,
              0});
      WriteResponse(std::move(response), keep_alive, head, version);
      return;
    }
    req.params = std::move(match.params);
    req.route = match.pattern;
    asio::thread_pool& pool = match.pool == Pool::kSlow ? server_.slow_pool : server_.fast_pool;
    const HttpHandler* handler = match.handler;
    asio::post(pool, [self = Self(), req = std::move(req), handler, keep_alive, head, version,
                      started]() mutable {
      HttpResponse response = (*handler)(req);
      self->Report(
          {req.route, std::string(req.raw->method_string()), req.path, req.peer, response.status,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()});
      asio::post(self->stream_.get_executor(),
                 [self, response = std::move(response), keep_alive, head, version]() mutable {
                   self->WriteResponse(std::move(response), keep_alive, head, version);
                 });
    });
  }

  void Report(const HttpResponseInfo& info) {
    if (server_.options.on_response) server_.options.on_response(info);
  }

  void WriteResponse(HttpResponse response, bool keep_alive, bool head, unsigned version) {
    if (response.stream) {
      StartStream(std::move(response), version);
      return;
    }
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(version);
    res->result(response.status);
    res->keep_alive(keep_alive);
    AddCommonHeaders(res->base());
    res->set(http::field::content_type, response.content_type);
    bool cache_set = false;
    bool csp_set = false;
    for (auto& [name, value] : response.headers) {
      if (beast::iequals(name, "Cache-Control")) cache_set = true;
      if (beast::iequals(name, "Content-Security-Policy")) csp_set = true;
      res->insert(name, value);
    }
    if (!cache_set) res->set(http::field::cache_control, "no-store");
    if (!csp_set) res->set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'");
    const size_t length = response.body.size();
    if (!head) res->body() = std::move(response.body);
    res->content_length(length);
    Lowest().expires_after(kWriteTimeout);
    http::async_write(stream_, *res, [self = Self(), res](beast::error_code ec, size_t) {
      if (ec || !res->keep_alive()) {
        self->Shutdown();
        return;
      }
      self->Read();
    });
  }

  // On the I/O thread: moves queued data to the socket's queue.
  void Flush() {
    bool close = false;
    {
      absl::MutexLock lock(&pending_mu_);
      for (std::string& d : pending_) stream_queue_.push_back(std::move(d));
      pending_.clear();
      close = pending_close_;
    }
    if (stream_closed_) {
      stream_queue_.clear();
      return;
    }
    if (close) stream_close_requested_ = true;
    if (!stream_writing_) WriteStreamData();
  }

  void StartStream(HttpResponse response, unsigned version);
  void WriteStreamData();
  void EndStream();
  void WatchForClientClose();

  // Ends the connection: TLS says close_notify first (a close-delimited SSE body would look
  // truncated without it), with a deadline.
  void Shutdown() {
    if (drain_before_close_) {
      drain_before_close_ = false;
      LingeringClose();
      return;
    }
    if constexpr (kTls) {
      if (shutting_down_) return;
      shutting_down_ = true;
      Lowest().expires_after(std::chrono::seconds(5));
      stream_.async_shutdown([self = Self()](beast::error_code) { self->Close(); });
    } else {
      Close();
    }
  }
  // After an answer to a refused request: no more sending, and what the client still
  // sends is read and dropped, up to kDrainLimit bytes or kDrainTime, then the connection
  // closes (a "lingering close"). Plain TCP only: under TLS the close_notify exchange does it.
  void LingeringClose() {
    if constexpr (kTls) {
      Shutdown();
    } else {
      beast::error_code ignored;
      Lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
      Lowest().expires_after(kDrainTime);
      Drain();
    }
  }
  void Drain() {
    if constexpr (!kTls) {
      drain_buffer_.resize(64 * 1024);
      Lowest().async_read_some(asio::buffer(drain_buffer_),
                               [self = Self()](beast::error_code ec, size_t n) {
                                 self->drained_ += n;
                                 if (ec || self->drained_ > kDrainLimit) {
                                   self->Close();
                                   return;
                                 }
                                 self->Drain();
                               });
    }
  }
  void Close() {
    beast::error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    Lowest().socket().close(ignored);
  }

  Stream stream_;
  bool shutting_down_ = false;
  bool drain_before_close_ = false;  // a refused request: LingeringClose after the answer
  std::vector<char> drain_buffer_;
  size_t drained_ = 0;
  HttpServer::Impl& server_;
  std::string peer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  RawRequest request_;

  // --- streaming state (I/O thread) ---
  std::shared_ptr<StreamProducer> producer_;
  std::deque<std::string> stream_queue_;
  bool stream_writing_ = false;
  bool stream_closed_ = false;
  bool stream_close_requested_ = false;
  std::array<char, 512> discard_{};

  absl::Mutex pending_mu_;
  std::deque<std::string> pending_ ABSL_GUARDED_BY(pending_mu_);
  bool pending_close_ ABSL_GUARDED_BY(pending_mu_) = false;
};

// The producer's handle on a session. Holds the session until the producer lets go of it.
template <class Stream>
class StreamSinkImpl final : public StreamSink {
 public:
  explicit StreamSinkImpl(std::shared_ptr<HttpSession<Stream>> session)
      : session_(std::move(session)) {}

  bool Write(std::string data) override {
    if (session_->stream_refusing.load()) return false;
    size_t backlog = session_->stream_backlog.fetch_add(data.size()) + data.size();
    if (backlog > kStreamBacklogLimit) {
      spdlog::info("http stream to {}: client too far behind; dropped (it may resume)",
                   session_->peer());
      session_->stream_refusing.store(true);
      Close();
      return false;
    }
    session_->Enqueue(std::move(data));
    return true;
  }

  void Close() override { session_->Enqueue(std::nullopt); }

 private:
  std::shared_ptr<HttpSession<Stream>> session_;
};

template <class Stream>
void HttpSession<Stream>::StartStream(HttpResponse response, unsigned version) {
  producer_ = std::move(response.stream);
  if (!server_.AddStream(producer_)) {
    producer_.reset();
    Shutdown();
    return;
  }
  // Delimited by closing the connection: the stream ends only when the run does.
  auto header = std::make_shared<http::response<http::empty_body>>();
  header->version(version);
  header->result(response.status);
  header->keep_alive(false);
  AddCommonHeaders(header->base());
  header->set(http::field::content_type, response.content_type);
  header->set(http::field::cache_control, "no-store");
  header->set("X-Accel-Buffering", "no");
  for (auto& [name, value] : response.headers) header->insert(name, value);
  auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*header);
  Lowest().expires_after(kWriteTimeout);
  http::async_write_header(stream_, *serializer,
                           [self = Self(), header, serializer](beast::error_code ec, size_t) {
                             if (ec) {
                               self->EndStream();
                               return;
                             }
                             // From here on a quiet stream is normal: no timeout; the backlog limit
                             // catches a client that stopped reading.
                             self->Lowest().expires_never();
                             self->WatchForClientClose();
                             self->producer_->Start(std::make_shared<StreamSinkImpl<Stream>>(self));
                           });
}

template <class Stream>
void HttpSession<Stream>::WatchForClientClose() {
  stream_.async_read_some(asio::buffer(discard_), [self = Self()](beast::error_code ec, size_t) {
    if (self->stream_closed_) return;
    if (ec) {
      self->EndStream();
      return;
    }
    self->WatchForClientClose();  // ignore what a client sends
  });
}

template <class Stream>
void HttpSession<Stream>::WriteStreamData() {
  if (stream_closed_) return;
  if (stream_queue_.empty()) {
    stream_writing_ = false;
    if (stream_close_requested_) EndStream();
    return;
  }
  stream_writing_ = true;
  asio::async_write(stream_, asio::buffer(stream_queue_.front()),
                    [self = Self()](beast::error_code ec, size_t) {
                      if (self->stream_closed_) return;
                      self->stream_backlog.fetch_sub(self->stream_queue_.front().size());
                      self->stream_queue_.pop_front();
                      if (ec) {
                        self->EndStream();
                        return;
                      }
                      self->WriteStreamData();
                    });
}

template <class Stream>
void HttpSession<Stream>::EndStream() {
  if (stream_closed_) return;
  stream_closed_ = true;
  stream_refusing.store(true);
  stream_queue_.clear();
  if (producer_) {
    producer_->Stop();
    server_.RemoveStream(producer_);
    producer_.reset();
  }
  Shutdown();
}

}  // namespace

void HttpServer::Impl::Accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      spdlog::warn("http accept: {}", ec.message());
    } else {
      beast::error_code peer_ec;
      tcp::endpoint remote = socket.remote_endpoint(peer_ec);
      std::string peer;
      if (!peer_ec) {
        peer = remote.address().is_v6()
                   ? absl::StrCat("[", remote.address().to_string(), "]:", remote.port())
                   : absl::StrCat(remote.address().to_string(), ":", remote.port());
      }
      if (tls) {
        using TlsStream = beast::ssl_stream<beast::tcp_stream>;
        std::make_shared<HttpSession<TlsStream>>(
            TlsStream(beast::tcp_stream(std::move(socket)), *tls), *this, std::move(peer))
            ->Start();
      } else {
        std::make_shared<HttpSession<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)),
                                                         *this, std::move(peer))
            ->Start();
      }
    }
    Accept();
  });
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              const Router& router) {
  auto host_port = SplitHostPort(options.address, options.flag);
  if (!host_port.ok()) return host_port.status();
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->impl_ = std::make_unique<Impl>(options, router);
  beast::error_code ec;
  if (!options.tls_cert.empty()) {
    auto& tls = server->impl_->tls.emplace(asio::ssl::context::tls_server);
    tls.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                    asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                    asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
    tls.use_certificate_chain_file(options.tls_cert, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tls-cert ", options.tls_cert, ": ", ec.message()));
    }
    tls.use_private_key_file(options.tls_key, asio::ssl::context::pem, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tls-key ", options.tls_key, ": ", ec.message()));
    }
  }
  asio::ip::address ip =
      asio::ip::make_address(host_port->first == "localhost" ? "127.0.0.1" : host_port->first, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.flag, ": \"", host_port->first, "\" is not an IP address"));
  }
  tcp::endpoint endpoint(ip, host_port->second);
  tcp::acceptor& acceptor = server->impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat(options.flag, " ", options.address, ": ", ec.message()));
  }
  server->port_ = acceptor.local_endpoint().port();
  server->impl_->Accept();
  server->thread_ = std::thread([impl = server->impl_.get()] { impl->io.run(); });
  return server;
}

HttpServer::~HttpServer() {
  if (!impl_) return;
  std::set<std::shared_ptr<StreamProducer>> streams;
  {
    absl::MutexLock lock(&impl_->streams_mu);
    impl_->stopping = true;
    streams.swap(impl_->streams);
  }
  for (const auto& p : streams) p->Stop();
  asio::post(impl_->io, [impl = impl_.get()] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
  });
  impl_->fast_pool.join();
  impl_->slow_pool.join();
  impl_->io.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tlbfleet::api
