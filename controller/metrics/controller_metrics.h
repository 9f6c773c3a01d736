#pragma once
// The controller's Prometheus metrics (prometheus-cpp 1.0.1), served as text on the HTTP
// listener's /metrics (docs/operations.md#metrics). Names follow Prometheus' conventions:
// `tlbfleet_` prefix, base units (seconds), `_total` for counters.
//
// Where the numbers come from:
//   - gauges of state (agents, runs and jobs by state, queue depth) from the facade's
//     Snapshot, read at scrape time (Render), never kept up to date by hand;
//   - counters and histograms from the core's observer calls (core::FleetObserver) and from
//     the transports (HTTP responses, gRPC calls);
//   - per finished run, on a thread of its own, the headline value of each arm and the
//     comparison's verdicts (report::Compare, the one statistics pipeline).
//
// Label cardinality is bounded: states, codes and benchmarks come from closed sets; routes
// are the router's patterns, not paths; gRPC methods are FleetService's and AgentService's.
// Headline series carry user-chosen arm names, so at most `max_headline_series` of them exist
// at once: when a new (benchmark, host class, arm, metric) would exceed it, the series
// updated longest ago is removed first.
//
// Thread-safe. Observer calls never block: the finished-run analysis is queued.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "controller/core/observer.h"
#include "controller/core/run_service.h"

namespace tlbfleet::metrics {

struct ControllerMetricsOptions {
  size_t max_headline_series = 1000;
  // The metric a benchmark's comparison leads with (the workload's primary metric); "" for
  // an unknown benchmark (its runs get no headline).
  std::function<std::string(const std::string& benchmark)> primary_metric;
  // Open nightly regressions per series label ("ebizzy/Zen 3/records_per_sec"), read at
  // scrape time for tlbfleet_nightly_regressions_open. Unset: no such family.
  std::function<absl::StatusOr<std::map<std::string, int>>()> open_regressions;
  // The nightly unit's failed store calls so far by kind ("read", "write"), read at scrape
  // time for tlbfleet_nightly_store_errors_total{op}. Unset: no such samples.
  std::function<std::map<std::string, uint64_t>()> nightly_store_errors;
  // The artifact store of built kernels (docs/kernels.md), read at scrape time for
  // tlbfleet_artifact_store_bytes{kind} and tlbfleet_artifacts{state}. Unset: no such families.
  struct ArtifactUsage {
    uint64_t used_bytes = 0;
    uint64_t quota_bytes = 0;
    uint64_t published = 0;
    uint64_t quarantined = 0;  // objects in quarantine/, kept for a person to look at
  };
  std::function<ArtifactUsage()> artifact_usage;
};

class ControllerMetrics final : public core::FleetObserver {
 public:
  ControllerMetrics(core::RunService& facade, ControllerMetricsOptions options);
  ~ControllerMetrics() override;  // finishes the queued analyses

  // The text exposition of every family, with the state gauges read from the facade now.
  std::string Render();

  // --- transports ---
  // `route` is the router's pattern ("/api/v1/runs/{run_id}"), "static", or "unmatched".
  void OnHttpResponse(const std::string& route, unsigned status, double seconds);
  // `method` is "FleetService/ListRuns", "AgentService/Connect", ...; `code` the gRPC
  // code's name.
  void OnGrpcCall(const std::string& method, const std::string& code);

  // --- core::FleetObserver ---
  void OnRunFinished(const v1::Run& run) override;
  void OnJobDispatched(const std::string& benchmark, double dispatch_seconds) override;
  void OnJobFinished(const std::string& benchmark, v1::JobStatus status,
                     double elapsed_seconds) override;
  void OnSamplesIngested(uint64_t stored, double ingest_seconds) override;
  void OnLeaseExpired(const std::string& run_id, bool requeued) override;
  void OnReboot(v1::RebootEvent::Kind kind) override;

  // Waits until every finished run queued so far has been analysed (tests).
  void DrainForTest();
  size_t HeadlineSeriesForTest();

 private:
  void AnalyseLoop();
  void Analyse(const v1::Run& run);
  void SetHeadline(const prometheus::Labels& labels, double value);

  core::RunService& facade_;
  const ControllerMetricsOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;

  prometheus::Family<prometheus::Gauge>& agents_;
  prometheus::Family<prometheus::Gauge>& agents_degraded_;
  prometheus::Family<prometheus::Gauge>& runs_;
  prometheus::Family<prometheus::Gauge>& jobs_;
  prometheus::Family<prometheus::Gauge>& queue_depth_;
  prometheus::Family<prometheus::Gauge>& runs_waiting_for_lost_host_;
  prometheus::Family<prometheus::Histogram>& job_duration_;
  prometheus::Family<prometheus::Counter>& jobs_finished_;
  prometheus::Family<prometheus::Counter>& samples_ingested_;
  prometheus::Family<prometheus::Histogram>& ingest_duration_;
  prometheus::Family<prometheus::Histogram>& dispatch_latency_;
  prometheus::Family<prometheus::Counter>& grpc_requests_;
  prometheus::Family<prometheus::Counter>& http_requests_;
  prometheus::Family<prometheus::Histogram>& http_duration_;
  prometheus::Family<prometheus::Counter>& leases_expired_;
  prometheus::Family<prometheus::Counter>& reboots_;
  prometheus::Family<prometheus::Gauge>& headline_;
  prometheus::Family<prometheus::Counter>& verdicts_;
  prometheus::Family<prometheus::Counter>& runs_finished_;
  prometheus::Family<prometheus::Gauge>& scrape_errors_;
  prometheus::Family<prometheus::Gauge>& regressions_open_;
  prometheus::Family<prometheus::Counter>& nightly_store_errors_;
  absl::Mutex nightly_store_errors_mu_;  // two scrapes at once would both add the difference
  absl::Mutex regressions_mu_;
  std::set<std::string> regression_series_ ABSL_GUARDED_BY(regressions_mu_);
  prometheus::Family<prometheus::Gauge>& artifact_bytes_;
  prometheus::Family<prometheus::Gauge>& artifacts_;
  prometheus::Family<prometheus::Gauge>& build_info_;

  absl::Mutex headline_mu_;
  // Series of headline_ by last update, oldest first (the bound evicts from the front).
  std::deque<prometheus::Labels> headline_order_ ABSL_GUARDED_BY(headline_mu_);

  absl::Mutex queue_mu_;
  std::deque<v1::Run> queue_ ABSL_GUARDED_BY(queue_mu_);
  bool busy_ ABSL_GUARDED_BY(queue_mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(queue_mu_) = false;
  std::thread worker_;
};

}  // namespace tlbfleet::metrics
