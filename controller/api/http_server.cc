#include "controller/api/http_server.h"

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <charconv>

#include "absl/strings/str_cat.h"
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

namespace {

// One connection: reads requests and answers them until the client closes.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  explicit HttpSession(tcp::socket socket) : stream_(std::move(socket)) {}

  void Start() { Read(); }

 private:
  void Read() {
    request_ = {};
    stream_.expires_after(std::chrono::seconds(30));
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return;  // closed, timed out, or garbage: drop the connection
                       self->Respond();
                     });
  }

  void Respond() {
    auto response = std::make_shared<http::response<http::string_body>>();
    response->version(request_.version());
    response->keep_alive(request_.keep_alive());
    response->set(http::field::server, "tlbfleet-controller");
    response->set(http::field::content_type, "text/plain; charset=utf-8");
    if (request_.target() == "/healthz" &&
        (request_.method() == http::verb::get || request_.method() == http::verb::head)) {
      response->result(http::status::ok);
      response->body() = "ok\n";
    } else {
      response->result(http::status::not_found);
      response->body() = "not found\n";
    }
    response->prepare_payload();
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response](beast::error_code ec, size_t) {
                        if (ec || !response->keep_alive()) {
                          beast::error_code ignored;
                          self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                          return;
                        }
                        self->Read();
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
};

}  // namespace

struct HttpServer::Impl {
  asio::io_context io{1};
  tcp::acceptor acceptor{io};

  void Accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) {
        if (ec != asio::error::operation_aborted) {
          spdlog::warn("http accept: {}", ec.message());
        }
        if (!acceptor.is_open()) return;
      } else {
        std::make_shared<HttpSession>(std::move(socket))->Start();
      }
      Accept();
    });
  }
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& address) {
  auto host_port = SplitHostPort(address, "--http-listen");
  if (!host_port.ok()) return host_port.status();
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->impl_ = std::make_unique<Impl>();
  beast::error_code ec;
  asio::ip::address ip =
      asio::ip::make_address(host_port->first == "localhost" ? "127.0.0.1" : host_port->first, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-listen: \"", host_port->first, "\" is not an IP address"));
  }
  tcp::endpoint endpoint(ip, host_port->second);
  tcp::acceptor& acceptor = server->impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat("--http-listen ", address, ": ", ec.message()));
  }
  server->port_ = acceptor.local_endpoint().port();
  server->impl_->Accept();
  server->thread_ = std::thread([impl = server->impl_.get()] { impl->io.run(); });
  return server;
}

HttpServer::~HttpServer() {
  if (impl_) {
    asio::post(impl_->io, [impl = impl_.get()] {
      beast::error_code ignored;
      impl->acceptor.close(ignored);
    });
    impl_->io.stop();
  }
  if (thread_.joinable()) thread_.join();
}

}  // namespace tlbfleet::api
