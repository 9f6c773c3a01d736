#pragma once
// The dashboard's built files, served at / from one directory (--dashboard-dir; by default
// <directory of the binary>/../dashboard/dist, which is build/dashboard/dist in a build
// tree). Paths with no file and no extension get index.html, so the dashboard's own routes
// survive a reload.
//
// Caching: files under /assets/ are content-hashed by the dashboard's build, so they are
// cached for a year (immutable); everything else, index.html first, is revalidated on each
// load (ETag). Every page gets a Content-Security-Policy that allows only the dashboard's
// own files: no inline script or style, no other origin.

#include <string>
#include <vector>

#include "controller/api/http_types.h"

namespace tlbfleet::api {

extern const char kDashboardCsp[];

class StaticFiles {
 public:
  explicit StaticFiles(std::string root);

  // GET/HEAD of `request.path`. 404 for anything outside the root, hidden files, or
  // (without a dashboard) every path, with a message that says how to get one.
  HttpResponse Serve(const HttpRequest& request) const;

  const std::string& root() const { return root_; }

 private:
  std::string root_;  // canonical, or empty when the directory does not exist
  std::string configured_;
};

// Where a controller finds the dashboard without --dashboard-dir, in order: built next to it
// (<dir of /proc/self/exe>/../dashboard/dist, the build tree) and installed beside it
// (<dir>/../share/tlbfleet/dashboard, `cmake --install`).
std::vector<std::string> DefaultDashboardDirs();
// The first of those that holds an index.html; the first when none does.
std::string DefaultDashboardDir();

// The Content-Type for a file name, by extension.
std::string ContentTypeFor(const std::string& file_name);

}  // namespace tlbfleet::api
