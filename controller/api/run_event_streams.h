#pragma once
// Live run progress as Server-Sent Events (GET /api/v1/runs/{run_id}/events).
//
// The core stores every run event before it publishes it (docs/architecture.md, seams), so
// the stored events are the truth and a live event is only a wake-up: each stream reads
// what follows the last id it sent, whether it resumes after a reconnect (Last-Event-ID)
// or follows a run live. Nothing is missed and nothing is sent twice, whatever order
// observers are called in. A stream ends after the event that ends its run (at once for a
// run that has ended and has nothing after Last-Event-ID) with an `event: end` message, on
// which a client closes (EventSource would reconnect otherwise).
//
// Thread-safe. Reads run on a small pool of its own, never on the core's threads.

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "controller/api/auth.h"
#include "controller/api/http_types.h"
#include "controller/core/observer.h"
#include "controller/core/run_service.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::api {

// What the streams read; the controller's facade in production.
class RunEventSource {
 public:
  virtual ~RunEventSource() = default;
  // Events of `run_id` with id > after_id, in id order, at most `limit`.
  virtual absl::StatusOr<std::vector<v1::RunEvent>> RunEventsSince(const std::string& run_id,
                                                                   uint64_t after_id,
                                                                   uint32_t limit) = 0;
  virtual absl::StatusOr<v1::Run> GetRun(const std::string& run_id) = 0;
};

// The controller's facade as a RunEventSource.
class FacadeRunEventSource final : public RunEventSource {
 public:
  explicit FacadeRunEventSource(core::RunService& controller) : controller_(controller) {}
  absl::StatusOr<std::vector<v1::RunEvent>> RunEventsSince(const std::string& run_id,
                                                           uint64_t after_id,
                                                           uint32_t limit) override {
    return controller_.RunEventsSince(run_id, after_id, limit);
  }
  absl::StatusOr<v1::Run> GetRun(const std::string& run_id) override {
    return controller_.GetRun(run_id);
  }

 private:
  core::RunService& controller_;
};

struct RunEventStreamsOptions {
  int64_t keepalive_ms = 15'000;  // a comment line this often keeps proxies from timing out
  uint32_t batch = 200;           // events per read
  // Formatted events kept per run for its watchers (the run's feed, see Fetch).
  size_t feed_events = 2000;
};

class RunEventStreams final : public core::FleetObserver {
 public:
  RunEventStreams(RunEventSource& source, RunEventStreamsOptions options = {});
  ~RunEventStreams() override;  // ends every stream

  // The response to a GET of the events of `request.params["run_id"]`: a stream, or an
  // error (401/403 for the caller, 404 for an unknown run, 400 for a bad Last-Event-ID).
  HttpResponse Open(const Caller& caller, const HttpRequest& request);

  // core::FleetObserver: wakes the streams of the event's run. Never blocks.
  void OnRunEvent(const v1::RunEvent& event) override;

  size_t StreamCountForTest();

  class Watcher;

  // One event as a stream sends it, formatted once for every watcher of its run.
  struct FeedEvent {
    uint64_t id = 0;
    std::shared_ptr<const std::string> text;  // FormatSseEvent
    bool ends_run = false;
  };

 private:
  friend class Watcher;
  // A run's events as its watchers share them: it holds, formatted, every event of the run
  // with an id in (covered_after, read_to]. A wake-up makes the next Fetch read what follows
  // read_to from the source once, for every watcher; a watcher behind covered_after (a
  // resume from far back) reads the source itself. So N watchers cost one read and one
  // formatting per event, not N (docs/performance.md, HTTP API under load).
  struct RunFeed {
    absl::Mutex mu;
    bool valid ABSL_GUARDED_BY(mu) = false;
    uint64_t covered_after ABSL_GUARDED_BY(mu) = 0;
    uint64_t read_to ABSL_GUARDED_BY(mu) = 0;
    // Wake-ups counted by OnRunEvent; read_generation is the count the last read saw.
    std::atomic<uint64_t> generation{0};
    uint64_t read_generation ABSL_GUARDED_BY(mu) = 0;
    bool more ABSL_GUARDED_BY(mu) = false;  // the last read was full: read again
    std::deque<FeedEvent> events ABSL_GUARDED_BY(mu);
  };
  // Events of `run_id` after `after_id`, at most `limit`, from the run's feed when it covers
  // them, else from the source.
  absl::StatusOr<std::vector<FeedEvent>> Fetch(const std::string& run_id, uint64_t after_id,
                                               uint32_t limit);
  absl::StatusOr<std::vector<FeedEvent>> ReadSource(const std::string& run_id, uint64_t after_id,
                                                    uint32_t limit);
  std::shared_ptr<RunFeed> FeedOf(const std::string& run_id);
  void Remove(const std::string& run_id, Watcher* watcher);
  void KeepaliveLoop();

  RunEventSource& source_;
  const RunEventStreamsOptions options_;
  boost::asio::thread_pool pool_{1};

  absl::Mutex mu_;
  // Open streams by run id.
  std::map<std::string, std::set<std::shared_ptr<Watcher>>> watchers_ ABSL_GUARDED_BY(mu_);
  // Feeds of runs that have watchers.
  std::map<std::string, std::shared_ptr<RunFeed>> feeds_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::CondVar wake_;
  std::thread keepalive_;
};

// One SSE message for `event` ("id: N\ndata: {json}\n\n").
std::string FormatSseEvent(const v1::RunEvent& event);
bool EndsRun(const v1::RunEvent& event);

}  // namespace tlbfleet::api
