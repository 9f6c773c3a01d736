#include "controller/api/router.h"

#include "absl/strings/str_split.h"

namespace tlbfleet::api {

namespace {

std::vector<std::string> SplitPath(absl::string_view path) {
  std::vector<std::string> out;
  for (absl::string_view s : absl::StrSplit(path, '/', absl::SkipEmpty())) out.emplace_back(s);
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool IsValidUtf8(absl::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

std::optional<std::string> PercentDecode(absl::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      int hi = HexValue(text[i + 1]);
      int lo = HexValue(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  if (out.find('\0') != std::string::npos || !IsValidUtf8(out)) return std::nullopt;
  return out;
}

std::optional<std::vector<std::pair<std::string, std::string>>> ParseQuery(
    absl::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  for (absl::string_view part : absl::StrSplit(query, '&', absl::SkipEmpty())) {
    size_t eq = part.find('=');
    std::optional<std::string> key = PercentDecode(part.substr(0, eq), true);
    std::optional<std::string> value =
        PercentDecode(eq == absl::string_view::npos ? "" : part.substr(eq + 1), true);
    if (!key || !value) return std::nullopt;
    out.emplace_back(std::move(*key), std::move(*value));
  }
  return out;
}

void Router::Add(beast_http::verb method, absl::string_view pattern, HttpHandler handler,
                 Pool pool) {
  routes_.push_back(
      Route{method, std::string(pattern), SplitPath(pattern), std::move(handler), pool});
}

Router::Match Router::Find(beast_http::verb method, absl::string_view path) const {
  Match match;
  std::vector<std::string> segments = SplitPath(path);
  std::vector<std::string> decoded;
  for (const std::string& s : segments) {
    std::optional<std::string> d = PercentDecode(s, false);
    if (!d) return match;
    decoded.push_back(std::move(*d));
  }
  if (path.empty() || path[0] != '/') return match;
  for (const Route& route : routes_) {
    if (route.segments.size() != decoded.size()) continue;
    std::map<std::string, std::string> params;
    bool ok = true;
    for (size_t i = 0; i < decoded.size() && ok; ++i) {
      const std::string& want = route.segments[i];
      if (want.size() > 2 && want.front() == '{' && want.back() == '}') {
        params[want.substr(1, want.size() - 2)] = decoded[i];
      } else {
        // Literal segments compare with the raw text: "%61pi" is not "api".
        ok = want == segments[i];
      }
    }
    if (!ok) continue;
    const bool head_as_get =
        method == beast_http::verb::head && route.method == beast_http::verb::get;
    if (route.method == method || head_as_get) {
      match.handler = &route.handler;
      match.pool = route.pool;
      match.pattern = route.pattern;
      match.params = std::move(params);
      match.allowed.clear();
      return match;
    }
    match.allowed.push_back(route.method);
  }
  if (match.allowed.empty() && fallback_ &&
      (method == beast_http::verb::get || method == beast_http::verb::head)) {
    match.handler = &fallback_;
    match.pattern = "static";
  }
  return match;
}

}  // namespace tlbfleet::api
