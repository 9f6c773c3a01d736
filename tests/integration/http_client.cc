#include "tests/integration/http_client.h"

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast.hpp>
#include <boost/beast/ssl.hpp>
#include <regex>

namespace tlbfleet::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

template <class Stream>
HttpResult Exchange(Stream& stream, const std::string& method, const std::string& target,
                    const Headers& headers, const std::string& body) {
  HttpResult result;
  http::request<http::string_body> req(http::string_to_verb(method), target, 11);
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(256 << 20);
  if (method == "HEAD") parser.skip(true);
  http::read(stream, buffer, parser);
  auto& res = parser.get();
  result.status = static_cast<int>(res.result_int());
  for (const auto& field : res) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    result.headers[name] = std::string(field.value());
  }
  result.body = res.body();
  return result;
}

}  // namespace

HttpResult HttpsCall(int port, const std::string& ca_file, const std::string& method,
                     const std::string& target, const Headers& headers, const std::string& body) {
  HttpResult result;
  try {
    asio::io_context io;
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    ctx.load_verify_file(ca_file);
    ctx.set_verify_mode(asio::ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
    // Check the certificate names 127.0.0.1, as a browser would.
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(stream.native_handle()), "127.0.0.1");
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(60));
    beast::get_lowest_layer(stream).connect(
        tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)));
    stream.handshake(asio::ssl::stream_base::client);
    result = Exchange(stream, method, target, headers, body);
    beast::error_code ignored;
    stream.shutdown(ignored);
  } catch (const std::exception& e) {
    result.status = 0;
    result.body = e.what();
  }
  return result;
}

HttpResult HttpCall(int port, const std::string& method, const std::string& target,
                    const Headers& headers, const std::string& body) {
  HttpResult result;
  try {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(60));
    stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)));
    result = Exchange(stream, method, target, headers, body);
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  } catch (const std::exception& e) {
    result.status = 0;
    result.body = e.what();
  }
  return result;
}

std::string RawHttp(int port, const std::string& bytes) {
  std::string out;
  try {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(30));
    stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)));
    beast::error_code ec;
    asio::write(stream.socket(), asio::buffer(bytes), ec);
    char buf[4096];
    for (;;) {
      size_t n = stream.socket().read_some(asio::buffer(buf), ec);
      if (ec) break;
      out.append(buf, n);
    }
  } catch (const std::exception& e) {
    out += e.what();
  }
  return out;
}

std::string JsonField(const std::string& json, const std::string& key) {
  std::smatch m;
  std::regex re("\"" + key + "\":(\"([^\"]*)\"|([-0-9.a-z]+))");
  if (!std::regex_search(json, m, re)) return "";
  return m[2].matched ? m[2].str() : m[3].str();
}

struct SseClient::Impl {
  asio::io_context io;
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  char chunk[4096];
};

SseClient::SseClient(int port, const std::string& target, const Headers& headers)
    : impl_(std::make_unique<Impl>()) {
  try {
    impl_->stream.expires_after(std::chrono::seconds(30));
    impl_->stream.connect(
        tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)));
    http::request<http::empty_body> req(http::verb::get, target, 11);
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::accept, "text/event-stream");
    for (const auto& [k, v] : headers) req.set(k, v);
    http::write(impl_->stream, req);
    http::read_header(impl_->stream, impl_->buffer, impl_->parser);
    status_ = static_cast<int>(impl_->parser.get().result_int());
  } catch (const std::exception& e) {
    closed_ = true;
    text_ = e.what();
  }
}

SseClient::~SseClient() = default;

bool SseClient::ReadSome(std::chrono::milliseconds timeout) {
  if (closed_) return false;
  auto& p = impl_->parser;
  if (p.is_done()) {
    closed_ = true;
    return false;
  }
  p.get().body().data = impl_->chunk;
  p.get().body().size = sizeof impl_->chunk;
  impl_->stream.expires_after(timeout);
  beast::error_code ec;
  http::read_some(impl_->stream, impl_->buffer, p, ec);
  size_t n = sizeof impl_->chunk - p.get().body().size;
  text_.append(impl_->chunk, n);
  if (ec == http::error::need_buffer) ec = {};
  if (ec == beast::error::timeout) return n > 0;
  if (ec || p.is_done()) closed_ = true;
  return n > 0;
}

bool SseClient::WaitFor(const std::string& what, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (text_.find(what) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || closed_) break;
    ReadSome(left);
  }
  return text_.find(what) != std::string::npos;
}

bool SseClient::WaitClosed(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!closed_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    ReadSome(left);
  }
  return closed_;
}

std::vector<uint64_t> SseClient::Ids() const {
  std::vector<uint64_t> ids;
  std::regex re("(^|\n)id: ([0-9]+)\n");
  for (auto it = std::sregex_iterator(text_.begin(), text_.end(), re); it != std::sregex_iterator();
       ++it) {
    ids.push_back(std::stoull((*it)[2].str()));
  }
  return ids;
}

}  // namespace tlbfleet::testing
