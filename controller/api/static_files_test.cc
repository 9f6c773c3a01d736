#include "controller/api/static_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tlbfleet::api {
namespace {

namespace fs = std::filesystem;

class StaticFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tlbfleet-static-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "dist" / "assets");
    Write("dist/index.html", "<!doctype html><script type=module src=/assets/app-1a2b.js>");
    Write("dist/assets/app-1a2b.js", "console.log(1)");
    Write("dist/assets/app-1a2b.css", "body{}");
    Write("dist/favicon.svg", "<svg/>");
    Write("dist/.env", "SECRET=1");
    Write("outside.txt", "not yours");
    fs::create_symlink(dir_ / "outside.txt", dir_ / "dist" / "link.txt");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& rel, const std::string& text) { std::ofstream(dir_ / rel) << text; }
  HttpResponse Get(const std::string& path, const std::string& if_none_match = "") {
    raw_ = {};
    if (!if_none_match.empty()) raw_.set(beast_http::field::if_none_match, if_none_match);
    HttpRequest r;
    r.raw = &raw_;
    r.path = path;
    return StaticFiles((dir_ / "dist").string()).Serve(r);
  }
  static std::string HeaderOf(const HttpResponse& r, const std::string& name) {
    for (const auto& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return "";
  }

  fs::path dir_;
  RawRequest raw_;
};

TEST_F(StaticFilesTest, ContentTypesAndCaching) {
  HttpResponse index = Get("/");
  EXPECT_EQ(index.status, 200u);
  EXPECT_EQ(index.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(HeaderOf(index, "Cache-Control"), "no-cache");
  std::string csp = HeaderOf(index, "Content-Security-Policy");
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos);

  HttpResponse js = Get("/assets/app-1a2b.js");
  EXPECT_EQ(js.body, "console.log(1)");
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(HeaderOf(js, "Cache-Control"), "public, max-age=31536000, immutable");
  EXPECT_EQ(Get("/assets/app-1a2b.css").content_type, "text/css; charset=utf-8");
  HttpResponse svg = Get("/favicon.svg");
  EXPECT_EQ(svg.content_type, "image/svg+xml");
  EXPECT_EQ(HeaderOf(svg, "Cache-Control"), "no-cache");

  // Revalidation: the same ETag answers 304 without a body.
  HttpResponse again = Get("/", HeaderOf(index, "ETag"));
  EXPECT_EQ(again.status, 304u);
  EXPECT_TRUE(again.body.empty());
}

TEST_F(StaticFilesTest, DashboardRoutesGetIndexButMissingAssetsAre404) {
  EXPECT_EQ(Get("/runs/42").body, Get("/").body);
  EXPECT_EQ(Get("/runs/42").content_type, "text/html; charset=utf-8");
  EXPECT_EQ(Get("/assets/missing.js").status, 404u);
  EXPECT_EQ(Get("/api/v1/nothing").status, 404u);
}

TEST_F(StaticFilesTest, NothingOutsideTheRootOrHidden) {
  for (const char* path : {"/../outside.txt", "/assets/../../outside.txt", "/%2e%2e/outside.txt",
                           "/.env", "/link.txt", "/assets/%00.js"}) {
    HttpResponse r = Get(path);
    EXPECT_EQ(r.status, 404u) << path;
    EXPECT_EQ(r.body.find("not yours"), std::string::npos) << path;
    EXPECT_EQ(r.body.find("SECRET"), std::string::npos) << path;
  }
}

TEST_F(StaticFilesTest, WithoutADashboardEveryPathSaysHowToGetOne) {
  raw_ = {};
  HttpRequest r;
  r.raw = &raw_;
  r.path = "/";
  HttpResponse response = StaticFiles((dir_ / "nothing-here").string()).Serve(r);
  EXPECT_EQ(response.status, 404u);
  EXPECT_NE(response.body.find("--dashboard-dir"), std::string::npos);
}

}  // namespace
}  // namespace tlbfleet::api
