#include "controller/api/static_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "controller/api/http_json.h"
#include "controller/api/router.h"

namespace tlbfleet::api {

namespace fs = std::filesystem;

const char kDashboardCsp[] =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'";

namespace {

constexpr uintmax_t kMaxFileBytes = 64 << 20;

HttpResponse NotFound(const std::string& message) {
  return ErrorResponse(absl::NotFoundError(message));
}

}  // namespace

std::string ContentTypeFor(const std::string& file_name) {
  static const auto* kTypes = new std::map<std::string, std::string>{
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".webmanifest", "application/manifest+json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".webp", "image/webp"},
      {".ico", "image/x-icon"},
      {".woff", "font/woff"},
      {".woff2", "font/woff2"},
      {".ttf", "font/ttf"},
      {".txt", "text/plain; charset=utf-8"},
      {".wasm", "application/wasm"},
  };
  std::string ext = absl::AsciiStrToLower(fs::path(file_name).extension().string());
  auto it = kTypes->find(ext);
  return it == kTypes->end() ? "application/octet-stream" : it->second;
}

std::vector<std::string> DefaultDashboardDirs() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {"dashboard/dist"};
  const fs::path prefix = exe.parent_path().parent_path();
  return {(prefix / "dashboard" / "dist").string(),
          (prefix / "share" / "tlbfleet" / "dashboard").string()};
}

std::string DefaultDashboardDir() {
  const std::vector<std::string> candidates = DefaultDashboardDirs();
  for (const std::string& dir : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(fs::path(dir) / "index.html", ec)) return dir;
  }
  return candidates.front();
}

StaticFiles::StaticFiles(std::string root) : configured_(std::move(root)) {
  std::error_code ec;
  fs::path canonical = fs::canonical(configured_, ec);
  if (!ec && fs::is_directory(canonical, ec)) root_ = canonical.string();
}

HttpResponse StaticFiles::Serve(const HttpRequest& request) const {
  if (root_.empty()) {
    return NotFound(absl::StrCat("no dashboard at ", configured_,
                                 ": build it (dashboard/) or start the controller with "
                                 "--dashboard-dir DIR; the API is at /api/v1/"));
  }
  if (absl::StartsWith(request.path, "/api/")) {
    return NotFound(absl::StrCat("no such path: ", request.path));
  }
  std::optional<std::string> decoded = PercentDecode(request.path, false);
  if (!decoded) return NotFound("no such file");
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(*decoded, '/', absl::SkipEmpty())) {
    // No way up, and no hidden files (.git, .env) even if the build left some.
    if (part == ".." || part == "." || part.front() == '.' || part.find('\\') != part.npos) {
      return NotFound("no such file");
    }
    parts.emplace_back(part);
  }
  fs::path path(root_);
  for (const std::string& p : parts) path /= p;
  std::error_code ec;
  if (parts.empty() || fs::is_directory(path, ec)) path /= "index.html";
  bool is_index = false;
  if (!fs::is_regular_file(path, ec)) {
    // A route of the dashboard (no extension): its page is index.html.
    if (!parts.empty() && fs::path(parts.back()).extension().empty()) {
      path = fs::path(root_) / "index.html";
    }
    if (!fs::is_regular_file(path, ec)) return NotFound("no such file");
  }
  is_index = path.filename() == "index.html";
  // Symbolic links may point anywhere; serve only what resolves inside the root.
  fs::path real = fs::canonical(path, ec);
  if (ec || !absl::StartsWith(real.string(), root_ + "/")) return NotFound("no such file");
  struct stat st {};
  if (::stat(real.c_str(), &st) != 0 || static_cast<uintmax_t>(st.st_size) > kMaxFileBytes) {
    return NotFound("no such file");
  }
  HttpResponse response;
  response.content_type = ContentTypeFor(real.filename().string());
  std::string etag =
      absl::StrCat("\"", st.st_size, "-", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, "\"");
  response.headers.emplace_back("ETag", etag);
  const bool hashed_asset = !parts.empty() && parts.front() == "assets" && !is_index;
  response.headers.emplace_back("Cache-Control",
                                hashed_asset ? "public, max-age=31536000, immutable" : "no-cache");
  response.headers.emplace_back("Content-Security-Policy", kDashboardCsp);
  if (request.Header(beast_http::field::if_none_match) == etag) {
    response.status = 304;
    return response;
  }
  std::ifstream in(real, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) return ErrorResponse(absl::InternalError("cannot read file"));
  response.body = ss.str();
  return response;
}

}  // namespace tlbfleet::api
