// The SSE broadcaster with a fake event source and a fake sink: live delivery, resume after
// Last-Event-ID, wake-ups in any order, the end of a run, and slow or vanished clients.

#include "controller/api/run_event_streams.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"

namespace tlbfleet::api {
namespace {

class FakeSource : public RunEventSource {
 public:
  absl::StatusOr<std::vector<v1::RunEvent>> RunEventsSince(const std::string& run_id,
                                                           uint64_t after_id,
                                                           uint32_t limit) override {
    absl::MutexLock lock(&mu_);
    ++reads_;
    std::vector<v1::RunEvent> out;
    for (const v1::RunEvent& e : events_) {
      if (e.run_id() == run_id && e.id() > after_id && out.size() < limit) out.push_back(e);
    }
    return out;
  }
  absl::StatusOr<v1::Run> GetRun(const std::string& run_id) override {
    absl::MutexLock lock(&mu_);
    auto it = runs_.find(run_id);
    if (it == runs_.end()) return absl::NotFoundError("run " + run_id + " not found");
    return it->second;
  }

  int reads() {
    absl::MutexLock lock(&mu_);
    return reads_;
  }
  void SetRun(const std::string& id, v1::RunState state) {
    absl::MutexLock lock(&mu_);
    runs_[id].set_id(id);
    runs_[id].set_state(state);
  }
  // Stores an event (as the core does) and returns it with its id.
  v1::RunEvent Store(const std::string& run_id, v1::RunState state = v1::RUN_STATE_RUNNING) {
    absl::MutexLock lock(&mu_);
    v1::RunEvent e;
    e.set_id(++next_id_);
    e.set_run_id(run_id);
    e.mutable_state()->set_state(state);
    events_.push_back(e);
    return e;
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::RunEvent> events_;
  std::map<std::string, v1::Run> runs_;
  uint64_t next_id_ = 0;
  int reads_ = 0;
};

class FakeSink : public StreamSink {
 public:
  bool Write(std::string data) override {
    absl::MutexLock lock(&mu_);
    if (refuse_) return false;
    text_ += data;
    return true;
  }
  void Close() override {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  std::string text() {
    absl::MutexLock lock(&mu_);
    return text_;
  }
  bool closed() {
    absl::MutexLock lock(&mu_);
    return closed_;
  }
  void Refuse() {
    absl::MutexLock lock(&mu_);
    refuse_ = true;
  }
  // Waits (with a deadline) until the text contains `what`.
  bool WaitFor(const std::string& what) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (text().find(what) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

 private:
  absl::Mutex mu_;
  std::string text_;
  bool closed_ = false;
  bool refuse_ = false;
};

class RunEventStreamsTest : public ::testing::Test {
 protected:
  HttpResponse Open(const std::string& run_id, const std::string& last_event_id = "") {
    raw_ = {};
    if (!last_event_id.empty()) raw_.set("Last-Event-ID", last_event_id);
    HttpRequest r;
    r.raw = &raw_;
    r.params["run_id"] = run_id;
    Caller viewer;
    viewer.name = "v";
    viewer.role = v1::ROLE_VIEWER;
    return streams_.Open(viewer, r);
  }
  std::shared_ptr<FakeSink> Start(const HttpResponse& r) {
    auto sink = std::make_shared<FakeSink>();
    r.stream->Start(sink);
    return sink;
  }
  static std::vector<uint64_t> Ids(const std::string& text) {
    std::vector<uint64_t> ids;
    size_t pos = 0;
    while ((pos = text.find("id: ", pos)) != std::string::npos) {
      ids.push_back(std::stoull(text.substr(pos + 4)));
      pos += 4;
    }
    return ids;
  }

  FakeSource source_;
  RunEventStreams streams_{source_, RunEventStreamsOptions{.keepalive_ms = 60'000, .batch = 2}};
  RawRequest raw_;
};

TEST_F(RunEventStreamsTest, ReplaysThenFollowsLiveThenEndsWithTheRun) {
  source_.SetRun("1", v1::RUN_STATE_RUNNING);
  source_.Store("1");
  source_.Store("2");  // another run's event: never sent to run 1's watchers
  source_.Store("1");
  source_.Store("1");
  HttpResponse r = Open("1");
  ASSERT_NE(r.stream, nullptr);
  EXPECT_EQ(r.content_type, "text/event-stream");
  auto sink = Start(r);
  ASSERT_TRUE(sink->WaitFor("id: 4\n"));  // three events, read two at a time

  v1::RunEvent live = source_.Store("1");
  streams_.OnRunEvent(live);
  ASSERT_TRUE(sink->WaitFor("id: 5\n"));
  v1::RunEvent end = source_.Store("1", v1::RUN_STATE_SUCCEEDED);
  streams_.OnRunEvent(end);
  ASSERT_TRUE(sink->WaitFor("event: end"));
  EXPECT_TRUE(sink->closed());
  EXPECT_EQ(Ids(sink->text()), (std::vector<uint64_t>{1, 3, 4, 5, 6}));
  EXPECT_NE(sink->text().find("\"runId\":\"1\""), std::string::npos);
  EXPECT_EQ(streams_.StreamCountForTest(), 0u);
}

TEST_F(RunEventStreamsTest, ResumesAfterLastEventIdMissingNothing) {
  source_.SetRun("1", v1::RUN_STATE_RUNNING);
  for (int i = 0; i < 5; ++i) source_.Store("1");
  auto sink = Start(Open("1", "3"));
  ASSERT_TRUE(sink->WaitFor("id: 5\n"));
  EXPECT_EQ(Ids(sink->text()), (std::vector<uint64_t>{4, 5}));
}

TEST_F(RunEventStreamsTest, AWakeUpWithoutAnEventOrForAnOlderOneLosesNothing) {
  // Observers may be called in any order: the stored events are what counts.
  source_.SetRun("1", v1::RUN_STATE_RUNNING);
  auto sink = Start(Open("1"));
  v1::RunEvent a = source_.Store("1");
  v1::RunEvent b = source_.Store("1");
  streams_.OnRunEvent(b);
  ASSERT_TRUE(sink->WaitFor("id: 2\n"));
  streams_.OnRunEvent(a);  // late: nothing new, nothing repeated
  v1::RunEvent c = source_.Store("1");
  streams_.OnRunEvent(c);
  ASSERT_TRUE(sink->WaitFor("id: 3\n"));
  EXPECT_EQ(Ids(sink->text()), (std::vector<uint64_t>{1, 2, 3}));
}

TEST_F(RunEventStreamsTest, ManyWatchersShareOneReadPerEvent) {
  source_.SetRun("1", v1::RUN_STATE_RUNNING);
  source_.Store("1");
  constexpr int kWatchers = 40;
  constexpr int kLive = 30;
  std::vector<std::shared_ptr<FakeSink>> sinks;
  std::vector<HttpResponse> responses;
  for (int i = 0; i < kWatchers; ++i) {
    responses.push_back(Open("1"));
    sinks.push_back(Start(responses.back()));
  }
  for (auto& sink : sinks) ASSERT_TRUE(sink->WaitFor("id: 1\n"));
  const int reads_before = source_.reads();
  std::vector<uint64_t> expected = {1};
  for (int i = 0; i < kLive; ++i) {
    v1::RunEvent e = source_.Store("1");
    expected.push_back(e.id());
    streams_.OnRunEvent(e);
    // One event at a time, so that every wake-up finds something new.
    for (auto& sink : sinks) ASSERT_TRUE(sink->WaitFor(absl::StrCat("id: ", e.id(), "\n")));
  }
  for (auto& sink : sinks) EXPECT_EQ(Ids(sink->text()), expected);
  // Without sharing every watcher reads every event: 40 x 30 = 1,200 reads. Shared: about
  // one per event (a wake-up that finds the feed already read costs none).
  EXPECT_LE(source_.reads() - reads_before, 2 * kLive) << source_.reads() - reads_before;
}

TEST_F(RunEventStreamsTest, AWatcherFarBehindTheFeedReadsForItselfAndMissesNothing) {
  // A feed of 3 events at most, read 2 at a time: a resume from id 0 is behind it.
  RunEventStreams streams(
      source_, RunEventStreamsOptions{.keepalive_ms = 60'000, .batch = 2, .feed_events = 3});
  source_.SetRun("1", v1::RUN_STATE_RUNNING);
  Caller viewer;
  viewer.name = "v";
  viewer.role = v1::ROLE_VIEWER;
  auto open = [&](const std::string& last_event_id) {
    RawRequest raw;
    if (!last_event_id.empty()) raw.set("Last-Event-ID", last_event_id);
    HttpRequest r;
    r.raw = &raw;
    r.params["run_id"] = "1";
    HttpResponse response = streams.Open(viewer, r);
    auto sink = std::make_shared<FakeSink>();
    response.stream->Start(sink);
    return std::make_pair(response, sink);
  };
  auto [live_response, live] = open("");
  std::vector<uint64_t> all;
  for (int i = 0; i < 9; ++i) {
    v1::RunEvent e = source_.Store("1");
    all.push_back(e.id());
    streams.OnRunEvent(e);
  }
  ASSERT_TRUE(live->WaitFor("id: 9\n"));
  auto [late_response, late] = open("1");  // ids 2..9: most are no longer in the feed
  ASSERT_TRUE(late->WaitFor("id: 9\n"));
  v1::RunEvent end = source_.Store("1", v1::RUN_STATE_SUCCEEDED);
  all.push_back(end.id());
  streams.OnRunEvent(end);
  ASSERT_TRUE(live->WaitFor("event: end"));
  ASSERT_TRUE(late->WaitFor("event: end"));
  EXPECT_EQ(Ids(live->text()), all);
  EXPECT_EQ(Ids(late->text()), std::vector<uint64_t>(all.begin() + 1, all.end()));
}

TEST_F(RunEventStreamsTest, AFinishedRunEndsAtOnce) {
  source_.SetRun("1", v1::RUN_STATE_RUNNING);
  source_.Store("1");
  source_.Store("1", v1::RUN_STATE_FAILED);
  source_.SetRun("1", v1::RUN_STATE_FAILED);
  auto all = Start(Open("1"));
  ASSERT_TRUE(all->WaitFor("event: end"));
  EXPECT_EQ(Ids(all->text()), (std::vector<uint64_t>{1, 2}));
  auto caught_up = Start(Open("1", "2"));
  ASSERT_TRUE(caught_up->WaitFor("event: end"));
  EXPECT_TRUE(Ids(caught_up->text()).empty());
  EXPECT_TRUE(caught_up->closed());
}

TEST_F(RunEventStreamsTest, BadRequestsAndStrangers) {
  source_.SetRun("1", v1::RUN_STATE_RUNNING);
  EXPECT_EQ(Open("404").status, 404u);
  EXPECT_EQ(Open("1", "seven").status, 400u);
  raw_ = {};
  HttpRequest r;
  r.raw = &raw_;
  r.params["run_id"] = "1";
  Caller anonymous;
  anonymous.status = absl::UnauthenticatedError("no credentials");
  EXPECT_EQ(streams_.Open(anonymous, r).status, 401u);
  Caller agent;
  agent.role = v1::ROLE_AGENT;
  EXPECT_EQ(streams_.Open(agent, r).status, 403u);
}

TEST_F(RunEventStreamsTest, AClientThatGoesAwayIsForgotten) {
  source_.SetRun("1", v1::RUN_STATE_RUNNING);
  HttpResponse r = Open("1");
  auto sink = Start(r);
  ASSERT_TRUE(sink->WaitFor("retry:"));
  EXPECT_EQ(streams_.StreamCountForTest(), 1u);
  r.stream->Stop();
  EXPECT_EQ(streams_.StreamCountForTest(), 0u);
  // A sink that refuses (a client too far behind) ends its stream too.
  auto refusing = Start(Open("1"));
  ASSERT_TRUE(refusing->WaitFor("retry:"));
  refusing->Refuse();
  streams_.OnRunEvent(source_.Store("1"));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (streams_.StreamCountForTest() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(streams_.StreamCountForTest(), 0u);
}

}  // namespace
}  // namespace tlbfleet::api
