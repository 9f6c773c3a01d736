#pragma once
// The agent's Prometheus metrics (prometheus-cpp 1.0.1), served by `tlbfleet-agent
// --metrics-listen ADDR:PORT` at /metrics (docs/operations.md#metrics). Plain HTTP and no
// authentication: the numbers hold no secrets and the listener serves nothing else.
//
// Every value is read at scrape time (Collect), never kept up to date by hand:
//   - the flush ceiling from the sysroot (ProbeCeiling: reads, never writes, so a scrape in
//     the middle of a job cannot disturb the value the job set);
//   - connection, job, last exit status, spool and reconnects from Agent::status();
//   - workload CPU time from getrusage(RUSAGE_CHILDREN): the agent's children are its
//     workload processes (and what they waited for), so this is their user + system time.
//
// Thread-safe: Collect() may run on several of the server's threads at once.

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "agent/kernel/sysroot.h"
#include "agent/runner/agent.h"

namespace prometheus {
class Exposer;
}

namespace tlbfleet::agent {

// User + system CPU seconds of this process's waited-for children (getrusage).
double ChildrenCpuSeconds();

struct AgentMetricsSources {
  std::function<AgentStatus()> status;  // required
  const Sysroot* sysroot = nullptr;     // required; must outlive the metrics
  std::function<double()> workload_cpu_seconds = ChildrenCpuSeconds;
};

class AgentMetrics final : public prometheus::Collectable {
 public:
  explicit AgentMetrics(AgentMetricsSources sources);

  std::vector<prometheus::MetricFamily> Collect() const override;
  // Collect() as Prometheus' text exposition (tests).
  std::string Render() const;

 private:
  void Update() const;

  const AgentMetricsSources sources_;
  const std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>& connected_;
  prometheus::Family<prometheus::Gauge>& ceiling_pages_;
  prometheus::Family<prometheus::Gauge>& ceiling_readable_;
  prometheus::Family<prometheus::Gauge>& ceiling_writable_;
  prometheus::Family<prometheus::Gauge>& ceiling_degraded_;
  prometheus::Family<prometheus::Gauge>& job_running_;
  prometheus::Family<prometheus::Gauge>& last_exit_status_;
  prometheus::Family<prometheus::Gauge>& spool_records_;
  prometheus::Family<prometheus::Gauge>& spool_bytes_;
  prometheus::Family<prometheus::Counter>& reconnects_;
  prometheus::Family<prometheus::Counter>& cpu_seconds_;
  prometheus::Family<prometheus::Gauge>& build_info_;

  // Counters only grow by what their source grew since the last scrape.
  mutable absl::Mutex mu_;
  mutable uint64_t reconnects_seen_ ABSL_GUARDED_BY(mu_) = 0;
  mutable double cpu_seconds_seen_ ABSL_GUARDED_BY(mu_) = 0;
};

// An HTTP server answering GET /metrics with `metrics` (prometheus-cpp's pull Exposer).
class MetricsServer {
 public:
  // `listen` is ADDR:PORT ("127.0.0.1:9470", "0.0.0.0:9470", "[::1]:0"); port 0 picks a free
  // one. INVALID_ARGUMENT names --metrics-listen for a malformed address; UNAVAILABLE when
  // it cannot be bound (in use, no such address).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& listen, std::shared_ptr<prometheus::Collectable> metrics);
  ~MetricsServer();

  int port() const { return port_; }

 private:
  MetricsServer() = default;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<prometheus::Collectable> metrics_;
  int port_ = 0;
};

}  // namespace tlbfleet::agent
