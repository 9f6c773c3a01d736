#include "controller/api/router.h"

#include <gtest/gtest.h>

namespace tlbfleet::api {
namespace {

using beast_http::verb;

HttpHandler Named(const std::string& name) {
  return [name](HttpRequest&) {
    HttpResponse r;
    r.body = name;
    return r;
  };
}

std::string Call(const Router::Match& m) {
  if (m.handler == nullptr) return "";
  HttpRequest r;
  return (*m.handler)(r).body;
}

TEST(RouterTest, MatchesMethodAndPatternAndDecodesParameters) {
  Router router;
  router.Add(verb::get, "/api/v1/runs", Named("list"));
  router.Add(verb::get, "/api/v1/runs/{run_id}", Named("get"));
  router.Add(verb::post, "/api/v1/runs/{run_id}/cancel", Named("cancel"), Pool::kSlow);

  EXPECT_EQ(Call(router.Find(verb::get, "/api/v1/runs")), "list");
  Router::Match get = router.Find(verb::get, "/api/v1/runs/4%32");
  EXPECT_EQ(Call(get), "get");
  EXPECT_EQ(get.params.at("run_id"), "42");
  Router::Match cancel = router.Find(verb::post, "/api/v1/runs/7/cancel");
  EXPECT_EQ(Call(cancel), "cancel");
  EXPECT_EQ(cancel.pool, Pool::kSlow);
  // HEAD is answered like GET.
  EXPECT_EQ(Call(router.Find(verb::head, "/api/v1/runs")), "list");
}

TEST(RouterTest, WrongMethodListsTheAllowedOnesAndUnknownPathsMatchNothing) {
  Router router;
  router.Add(verb::get, "/api/v1/runs", Named("list"));
  router.Add(verb::post, "/api/v1/runs", Named("submit"));
  Router::Match m = router.Find(verb::delete_, "/api/v1/runs");
  EXPECT_EQ(m.handler, nullptr);
  EXPECT_EQ(m.allowed, (std::vector<verb>{verb::get, verb::post}));
  Router::Match none = router.Find(verb::get, "/api/v1/nothing");
  EXPECT_EQ(none.handler, nullptr);
  EXPECT_TRUE(none.allowed.empty());
  // Literal segments compare undecoded, and an empty parameter segment is no match.
  EXPECT_EQ(router.Find(verb::get, "/%61pi/v1/runs").handler, nullptr);
}

TEST(RouterTest, FallbackTakesOnlyUnmatchedGets) {
  Router router;
  router.Add(verb::post, "/api/v1/login", Named("login"));
  router.SetFallback(Named("static"));
  EXPECT_EQ(Call(router.Find(verb::get, "/runs/5")), "static");
  EXPECT_EQ(Call(router.Find(verb::post, "/runs/5")), "");
  // A GET of a POST-only path is a 405, not a file.
  EXPECT_EQ(router.Find(verb::get, "/api/v1/login").handler, nullptr);
}

TEST(RouterTest, UndecodableSegmentsMatchNothing) {
  Router router;
  router.Add(verb::get, "/api/v1/runs/{run_id}", Named("get"));
  for (const char* path :
       {"/api/v1/runs/%zz", "/api/v1/runs/%", "/api/v1/runs/%00", "/api/v1/runs/%ff%fe"}) {
    EXPECT_EQ(router.Find(verb::get, path).handler, nullptr) << path;
  }
}

TEST(PercentDecodeTest, QueryStrings) {
  auto q = ParseQuery("a=1&b=x+y%21&c&=v&states=running,failed");
  ASSERT_TRUE(q.has_value());
  ASSERT_EQ(q->size(), 5u);
  EXPECT_EQ((*q)[1], (std::pair<std::string, std::string>("b", "x y!")));
  EXPECT_EQ((*q)[2], (std::pair<std::string, std::string>("c", "")));
  EXPECT_FALSE(ParseQuery("a=%G1").has_value());
  EXPECT_FALSE(ParseQuery("a=%C3%28").has_value());  // not UTF-8
}

TEST(Utf8Test, RejectsOverlongSurrogatesAndTruncation) {
  EXPECT_TRUE(IsValidUtf8("plain ascii, é, 日本, 🙂"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // U+D800
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE6\x97"));          // truncated
  EXPECT_FALSE(IsValidUtf8("\xFF"));
}

}  // namespace
}  // namespace tlbfleet::api
