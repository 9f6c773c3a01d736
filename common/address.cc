#include "common/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>

#include "absl/strings/str_cat.h"

namespace tlbfleet {

absl::StatusOr<std::string> CanonicalAddress(std::string_view text) {
  const std::string s(text);
  unsigned char raw[sizeof(in6_addr)];
  char out[INET6_ADDRSTRLEN];
  for (int family : {AF_INET, AF_INET6}) {
    if (::inet_pton(family, s.c_str(), raw) == 1 &&
        ::inet_ntop(family, raw, out, sizeof out) != nullptr) {
      return std::string(out);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("not an IPv4 or IPv6 address: \"", s, "\" (host names are not resolved)"));
}

bool IsLoopbackAddress(std::string_view address) {
  const std::string s(address);
  in_addr v4;
  in6_addr v6;
  if (::inet_pton(AF_INET, s.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  return ::inet_pton(AF_INET6, s.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

bool IsWildcardAddress(std::string_view address) {
  const std::string s(address);
  in_addr v4;
  in6_addr v6;
  if (::inet_pton(AF_INET, s.c_str(), &v4) == 1) return v4.s_addr == htonl(INADDR_ANY);
  return ::inet_pton(AF_INET6, s.c_str(), &v6) == 1 && IN6_IS_ADDR_UNSPECIFIED(&v6);
}

absl::StatusOr<Endpoint> ParseEndpoint(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("want address:port (IPv6: [address]:port), ",
                                                   std::string(why), ", got \"", std::string(text),
                                                   "\""));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  uint32_t port = 0;
  const bool digits =
      !port_text.empty() && port_text.find_first_not_of("0123456789") == std::string_view::npos;
  const char* port_end = port_text.data() + port_text.size();
  if (!digits || std::from_chars(port_text.data(), port_end, port).ptr != port_end ||
      port > 65535) {
    return bad("the port must be an integer in [0, 65535]");
  }
  absl::StatusOr<std::string> address = CanonicalAddress(host);
  if (!address.ok()) return bad("the address must be an IP literal");
  // "::1:80" could be read two ways; brackets say which.
  if (address->find(':') != std::string::npos && !bracketed) {
    return bad("an IPv6 address needs brackets");
  }
  return Endpoint{*address, static_cast<uint16_t>(port)};
}

std::string FormatEndpoint(const Endpoint& endpoint) {
  return endpoint.address.find(':') != std::string::npos
             ? absl::StrCat("[", endpoint.address, "]:", endpoint.port)
             : absl::StrCat(endpoint.address, ":", endpoint.port);
}

bool IsDialableEndpoint(std::string_view server) {
  absl::StatusOr<Endpoint> endpoint = ParseEndpoint(server);
  return endpoint.ok() && endpoint->port != 0;
}

}  // namespace tlbfleet
