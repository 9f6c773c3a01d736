#include "controller/api/run_event_streams.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <boost/asio/post.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/api/http_json.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::api {

bool EndsRun(const v1::RunEvent& event) {
  if (!event.has_state()) return false;
  v1::RunState s = event.state().state();
  return s == v1::RUN_STATE_SUCCEEDED || s == v1::RUN_STATE_FAILED || s == v1::RUN_STATE_CANCELLED;
}

namespace {

bool Terminal(v1::RunState s) {
  return s == v1::RUN_STATE_SUCCEEDED || s == v1::RUN_STATE_FAILED || s == v1::RUN_STATE_CANCELLED;
}

constexpr char kEndMessage[] = "event: end\ndata: {}\n\n";

}  // namespace

std::string FormatSseEvent(const v1::RunEvent& event) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  // One line: the JSON printer escapes newlines inside strings.
  (void)google::protobuf::util::MessageToJsonString(event, &json, options);
  return absl::StrCat("id: ", event.id(), "\ndata: ", json, "\n\n");
}

// One client's stream of one run. Reads are serialised by fetch_mu_; wake-ups that arrive
// during a read schedule another read, so none is lost.
class RunEventStreams::Watcher : public StreamProducer,
                                 public std::enable_shared_from_this<Watcher> {
 public:
  Watcher(RunEventStreams& owner, std::string run_id, uint64_t after_id)
      : owner_(owner), run_id_(std::move(run_id)), last_id_(after_id) {}

  void Start(std::shared_ptr<StreamSink> sink) override {
    {
      absl::MutexLock lock(&mu_);
      if (stopped_) return;
      sink_ = std::move(sink);
    }
    // A short retry keeps a reconnect after a dropped connection quick.
    Send("retry: 2000\n\n");
    bool stopping = false;
    {
      absl::MutexLock lock(&owner_.mu_);
      stopping = owner_.stopping_;
      if (!stopping) owner_.watchers_[run_id_].insert(shared_from_this());
    }
    if (stopping) {
      Stop();
      return;
    }
    // Registered before the first read: an event stored from now on wakes us, and the read
    // below sees everything stored before.
    Wake();
  }

  void Stop() override {
    std::shared_ptr<StreamSink> sink;
    {
      absl::MutexLock lock(&mu_);
      stopped_ = true;
      sink.swap(sink_);
    }
    owner_.Remove(run_id_, this);
  }

  void Wake() {
    if (scheduled_.exchange(true)) return;
    boost::asio::post(owner_.pool_, [self = shared_from_this()] { self->Drain(); });
  }

  // Sends `text` unless stopped; false when the stream is gone.
  bool Send(std::string text) {
    std::shared_ptr<StreamSink> sink;
    {
      absl::MutexLock lock(&mu_);
      sink = sink_;
    }
    if (sink == nullptr) return false;
    if (!sink->Write(std::move(text))) {
      Stop();
      return false;
    }
    return true;
  }

 private:
  void Drain() {
    absl::MutexLock fetch(&fetch_mu_);
    scheduled_.store(false);
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        if (stopped_) return;
      }
      absl::StatusOr<std::vector<FeedEvent>> events =
          owner_.Fetch(run_id_, last_id_, owner_.options_.batch);
      if (!events.ok()) {
        spdlog::warn("run={} event stream: {}", run_id_, events.status().ToString());
        Finish(false);
        return;
      }
      for (const FeedEvent& e : *events) {
        if (!Send(*e.text)) return;
        last_id_ = e.id;
        if (e.ends_run) {
          Finish(true);
          return;
        }
      }
      if (events->size() < owner_.options_.batch) break;
    }
    if (!checked_run_) {
      // A run that ended before its events were stored (or whose end the client already
      // has) would otherwise keep the stream open for ever.
      checked_run_ = true;
      absl::StatusOr<v1::Run> run = owner_.source_.GetRun(run_id_);
      if (run.ok() && Terminal(run->state())) Finish(true);
    }
  }

  void Finish(bool send_end) {
    std::shared_ptr<StreamSink> sink;
    {
      absl::MutexLock lock(&mu_);
      if (stopped_) return;
      stopped_ = true;
      sink.swap(sink_);
    }
    if (send_end) sink->Write(kEndMessage);
    sink->Close();
    owner_.Remove(run_id_, this);
  }

  RunEventStreams& owner_;
  const std::string run_id_;
  std::atomic<bool> scheduled_{false};

  absl::Mutex fetch_mu_;
  uint64_t last_id_ ABSL_GUARDED_BY(fetch_mu_);
  bool checked_run_ ABSL_GUARDED_BY(fetch_mu_) = false;

  absl::Mutex mu_;
  std::shared_ptr<StreamSink> sink_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

RunEventStreams::RunEventStreams(RunEventSource& source, RunEventStreamsOptions options)
    : source_(source), options_(options) {
  keepalive_ = std::thread([this] { KeepaliveLoop(); });
}

RunEventStreams::~RunEventStreams() {
  std::vector<std::shared_ptr<Watcher>> all;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [run, set] : watchers_) all.insert(all.end(), set.begin(), set.end());
    wake_.SignalAll();
  }
  for (auto& w : all) w->Stop();
  keepalive_.join();
  pool_.join();
}

void RunEventStreams::Remove(const std::string& run_id, Watcher* watcher) {
  std::shared_ptr<Watcher> keep;  // destroyed outside the lock
  absl::MutexLock lock(&mu_);
  auto it = watchers_.find(run_id);
  if (it == watchers_.end()) return;
  for (auto w = it->second.begin(); w != it->second.end(); ++w) {
    if (w->get() == watcher) {
      keep = *w;
      it->second.erase(w);
      break;
    }
  }
  if (it->second.empty()) {
    watchers_.erase(it);
    feeds_.erase(run_id);
  }
}

std::shared_ptr<RunEventStreams::RunFeed> RunEventStreams::FeedOf(const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<RunFeed>& feed = feeds_[run_id];
  if (feed == nullptr) feed = std::make_shared<RunFeed>();
  return feed;
}

absl::StatusOr<std::vector<RunEventStreams::FeedEvent>> RunEventStreams::ReadSource(
    const std::string& run_id, uint64_t after_id, uint32_t limit) {
  absl::StatusOr<std::vector<v1::RunEvent>> events =
      source_.RunEventsSince(run_id, after_id, limit);
  if (!events.ok()) return events.status();
  std::vector<FeedEvent> out;
  out.reserve(events->size());
  for (const v1::RunEvent& e : *events) {
    out.push_back({e.id(), std::make_shared<const std::string>(FormatSseEvent(e)), EndsRun(e)});
  }
  return out;
}

absl::StatusOr<std::vector<RunEventStreams::FeedEvent>> RunEventStreams::Fetch(
    const std::string& run_id, uint64_t after_id, uint32_t limit) {
  std::shared_ptr<RunFeed> feed = FeedOf(run_id);
  absl::MutexLock lock(&feed->mu);
  if (!feed->valid || after_id < feed->covered_after) {
    // Not covered: read for this watcher alone. A feed that has never been read starts
    // from here: it then covers (after_id, the last id read].
    const uint64_t generation = feed->generation.load();
    absl::StatusOr<std::vector<FeedEvent>> read = ReadSource(run_id, after_id, limit);
    if (!read.ok() || feed->valid) return read;
    feed->valid = true;
    feed->covered_after = after_id;
    feed->read_to = read->empty() ? after_id : read->back().id;
    feed->read_generation = generation;
    feed->more = read->size() == limit;
    feed->events.assign(read->begin(), read->end());
    return read;
  }
  // Covered: first bring the feed up to date, once for every watcher, when a wake-up came
  // since the last read (the source stored the event before the wake-up was sent).
  for (;;) {
    const uint64_t generation = feed->generation.load();
    if (generation == feed->read_generation && !feed->more) break;
    absl::StatusOr<std::vector<FeedEvent>> read = ReadSource(run_id, feed->read_to, limit);
    if (!read.ok()) return read.status();
    for (FeedEvent& e : *read) feed->events.push_back(std::move(e));
    if (!read->empty()) feed->read_to = feed->events.back().id;
    feed->read_generation = generation;
    feed->more = read->size() == limit;  // a full read: more may follow
    while (feed->events.size() > options_.feed_events) {
      feed->covered_after = feed->events.front().id;
      feed->events.pop_front();
    }
    if (after_id < feed->covered_after) return ReadSource(run_id, after_id, limit);
  }
  std::vector<FeedEvent> out;
  auto it = std::upper_bound(feed->events.begin(), feed->events.end(), after_id,
                             [](uint64_t id, const FeedEvent& e) { return id < e.id; });
  for (; it != feed->events.end() && out.size() < limit; ++it) out.push_back(*it);
  return out;
}

void RunEventStreams::OnRunEvent(const v1::RunEvent& event) {
  std::vector<std::shared_ptr<Watcher>> woken;
  {
    absl::MutexLock lock(&mu_);
    auto it = watchers_.find(event.run_id());
    if (it == watchers_.end()) return;
    auto feed = feeds_.find(event.run_id());
    if (feed != feeds_.end()) ++feed->second->generation;
    woken.assign(it->second.begin(), it->second.end());
  }
  for (auto& w : woken) w->Wake();
}

size_t RunEventStreams::StreamCountForTest() {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (auto& [run, set] : watchers_) n += set.size();
  return n;
}

void RunEventStreams::KeepaliveLoop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    wake_.WaitWithTimeout(&mu_, absl::Milliseconds(options_.keepalive_ms));
    if (stopping_) break;
    std::vector<std::shared_ptr<Watcher>> all;
    for (auto& [run, set] : watchers_) all.insert(all.end(), set.begin(), set.end());
    mu_.Unlock();
    for (auto& w : all) w->Send(": keepalive\n\n");
    mu_.Lock();
  }
}

HttpResponse RunEventStreams::Open(const Caller& caller, const HttpRequest& request) {
  if (absl::Status s = Require(caller, v1::ROLE_VIEWER, "watching a run"); !s.ok()) {
    return ErrorResponse(s);
  }
  const std::string run_id = request.params.at("run_id");
  // EventSource sends Last-Event-ID when it reconnects; a first connection may resume from
  // a known id with ?last_event_id=N.
  std::string resume = request.Header("Last-Event-ID");
  std::string field = "Last-Event-ID";
  for (const auto& [key, value] : request.query) {
    if (key == "last_event_id" || key == "lastEventId") {
      if (resume.empty()) {
        resume = value;
        field = key;
      }
    } else {
      return ErrorResponse(absl::InvalidArgumentError(
          absl::StrCat(key, ": unknown query parameter (known: last_event_id)")));
    }
  }
  uint64_t after = 0;
  if (!resume.empty() && !absl::SimpleAtoi(resume, &after)) {
    return ErrorResponse(absl::InvalidArgumentError(
        absl::StrCat(field, ": not an event id (a non-negative integer)")));
  }
  absl::StatusOr<v1::Run> run = source_.GetRun(run_id);
  if (!run.ok()) return ErrorResponse(run.status());
  HttpResponse response;
  response.content_type = "text/event-stream";
  response.stream = std::make_shared<Watcher>(*this, run_id, after);
  return response;
}

}  // namespace tlbfleet::api
