#include "controller/metrics/controller_metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "common/version.h"
#include "controller/report/comparison.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::metrics {

namespace {

using prometheus::Labels;

// "RUN_STATE_QUEUED" -> "queued": the enum name without its prefix, lower case.
template <typename Enum>
std::string StateLabel(const std::string& name, absl::string_view prefix) {
  return absl::AsciiStrToLower(absl::StripPrefix(name, prefix));
}

const std::vector<double>& JobSeconds() {
  static const auto* kBuckets =
      new std::vector<double>{1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 14400};
  return *kBuckets;
}
const std::vector<double>& FastSeconds() {
  static const auto* kBuckets = new std::vector<double>{
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};
  return *kBuckets;
}
const std::vector<double>& DispatchSeconds() {
  static const auto* kBuckets =
      new std::vector<double>{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300};
  return *kBuckets;
}

}  // namespace

ControllerMetrics::ControllerMetrics(core::RunService& facade, ControllerMetricsOptions options)
    : facade_(facade),
      options_(std::move(options)),
      registry_(std::make_shared<prometheus::Registry>()),
      agents_(prometheus::BuildGauge()
                  .Name("tlbfleet_agents")
                  .Help("Agents known to the controller, by state")
                  .Register(*registry_)),
      agents_degraded_(prometheus::BuildGauge()
                           .Name("tlbfleet_agents_degraded")
                           .Help("Connected agents that cannot write the flush ceiling")
                           .Register(*registry_)),
      runs_(prometheus::BuildGauge()
                .Name("tlbfleet_runs")
                .Help("Runs in the database, by state")
                .Register(*registry_)),
      jobs_(prometheus::BuildGauge()
                .Name("tlbfleet_jobs")
                .Help("Jobs in the database, by state")
                .Register(*registry_)),
      queue_depth_(prometheus::BuildGauge()
                       .Name("tlbfleet_queue_depth_jobs")
                       .Help("Queued jobs of runs that are queued or running")
                       .Register(*registry_)),
      runs_waiting_for_lost_host_(
          prometheus::BuildGauge()
              .Name("tlbfleet_runs_waiting_for_lost_host")
              .Help("Active runs with a slot whose host is silent (on_host_lost decides when "
                    "they stop waiting)")
              .Register(*registry_)),
      job_duration_(prometheus::BuildHistogram()
                        .Name("tlbfleet_job_duration_seconds")
                        .Help("Time jobs ran on their host, by benchmark")
                        .Register(*registry_)),
      jobs_finished_(prometheus::BuildCounter()
                         .Name("tlbfleet_jobs_finished_total")
                         .Help("Jobs that ended, by benchmark and status")
                         .Register(*registry_)),
      samples_ingested_(prometheus::BuildCounter()
                            .Name("tlbfleet_samples_ingested_total")
                            .Help("Samples stored (replays not counted)")
                            .Register(*registry_)),
      ingest_duration_(prometheus::BuildHistogram()
                           .Name("tlbfleet_ingest_duration_seconds")
                           .Help("Time to store one batch of samples")
                           .Register(*registry_)),
      dispatch_latency_(prometheus::BuildHistogram()
                            .Name("tlbfleet_dispatch_latency_seconds")
                            .Help("From a host (or job) becoming ready to its job being sent")
                            .Register(*registry_)),
      grpc_requests_(prometheus::BuildCounter()
                         .Name("tlbfleet_grpc_requests_total")
                         .Help("gRPC calls and agent streams, by method and code")
                         .Register(*registry_)),
      http_requests_(prometheus::BuildCounter()
                         .Name("tlbfleet_http_requests_total")
                         .Help("HTTP responses, by route pattern and status code")
                         .Register(*registry_)),
      http_duration_(prometheus::BuildHistogram()
                         .Name("tlbfleet_http_request_duration_seconds")
                         .Help("Time to answer an HTTP request, by route pattern")
                         .Register(*registry_)),
      leases_expired_(prometheus::BuildCounter()
                          .Name("tlbfleet_leases_expired_total")
                          .Help("Leases whose agent went silent; requeued or the run failed")
                          .Register(*registry_)),
      reboots_(prometheus::BuildCounter()
                   .Name("tlbfleet_reboots_total")
                   .Help("Host reboots the controller asked for, by outcome")
                   .Register(*registry_)),
      headline_(prometheus::BuildGauge()
                    .Name("tlbfleet_headline_value")
                    .Help("Latest headline statistic (Hmean if higher is better, else Amean) of "
                          "the primary metric of a finished run, per benchmark, host class "
                          "(microarchitecture) and arm, at the run's last sweep value")
                    .Register(*registry_)),
      verdicts_(prometheus::BuildCounter()
                    .Name("tlbfleet_comparison_verdicts_total")
                    .Help("Verdicts of finished runs' comparisons (primary metric, every sweep "
                          "value, every arm against the baseline), by benchmark and verdict")
                    .Register(*registry_)),
      runs_finished_(prometheus::BuildCounter()
                         .Name("tlbfleet_runs_finished_total")
                         .Help("Runs that ended, by benchmark and state")
                         .Register(*registry_)),
      scrape_errors_(prometheus::BuildGauge()
                         .Name("tlbfleet_metrics_snapshot_ok")
                         .Help("1 when the state gauges of this scrape were read, 0 when not")
                         .Register(*registry_)),
      regressions_open_(prometheus::BuildGauge()
                            .Name("tlbfleet_nightly_regressions_open")
                            .Help("Open regressions that nightly schedules found, per series")
                            .Register(*registry_)),
      nightly_store_errors_(
          prometheus::BuildCounter()
              .Name("tlbfleet_nightly_store_errors_total")
              .Help("Store calls of the nightly unit that failed (each logged at error); its "
                    "work is redone later, a user's call is told, by op (read, write)")
              .Register(*registry_)),
      artifact_bytes_(prometheus::BuildGauge()
                          .Name("tlbfleet_artifact_store_bytes")
                          .Help("The artifact store of built kernels: bytes its published "
                                "artifacts hold (kind=used) and its quota (kind=quota)")
                          .Register(*registry_)),
      artifacts_(prometheus::BuildGauge()
                     .Name("tlbfleet_artifacts")
                     .Help("Artifacts of built kernels, by state: published (served) or "
                           "quarantined (failed a checksum, never served)")
                     .Register(*registry_)),
      build_info_(prometheus::BuildGauge()
                      .Name("tlbfleet_build_info")
                      .Help("The controller's version")
                      .Register(*registry_)) {
  build_info_.Add({{"version", kVersion}, {"program", "tlbfleet-controller"}}).Set(1);
  for (const char* kind : {"requested", "completed", "failed"}) reboots_.Add({{"result", kind}});
  for (const char* requeued : {"true", "false"}) leases_expired_.Add({{"requeued", requeued}});
  samples_ingested_.Add({});
  if (options_.nightly_store_errors) {
    for (const char* op : {"read", "write"}) nightly_store_errors_.Add({{"op", op}});
  }
  worker_ = std::thread([this] { AnalyseLoop(); });
}

ControllerMetrics::~ControllerMetrics() {
  {
    absl::MutexLock lock(&queue_mu_);
    stopping_ = true;
  }
  worker_.join();
}

std::string ControllerMetrics::Render() {
  absl::StatusOr<core::FleetSnapshot> snapshot = facade_.Snapshot();
  if (snapshot.ok()) {
    for (const auto& [state, n] : snapshot->agents) {
      agents_.Add({{"state", std::string(core::AgentStateName(state))}})
          .Set(static_cast<double>(n));
    }
    agents_degraded_.Add({}).Set(static_cast<double>(snapshot->agents_degraded));
    for (const auto& [state, n] : snapshot->runs) {
      runs_.Add({{"state", StateLabel<v1::RunState>(v1::RunState_Name(state), "RUN_STATE_")}})
          .Set(static_cast<double>(n));
    }
    for (const auto& [state, n] : snapshot->jobs) {
      jobs_.Add({{"state", StateLabel<v1::JobState>(v1::JobState_Name(state), "JOB_STATE_")}})
          .Set(static_cast<double>(n));
    }
    queue_depth_.Add({}).Set(static_cast<double>(snapshot->queue_depth));
    runs_waiting_for_lost_host_.Add({}).Set(
        static_cast<double>(snapshot->runs_waiting_for_lost_host));
    scrape_errors_.Add({}).Set(1);
  } else {
    // Stale gauges are worse than none for alerting; say so instead.
    spdlog::warn("metrics: cannot read the fleet snapshot: {}", snapshot.status().ToString());
    scrape_errors_.Add({}).Set(0);
  }
  if (options_.open_regressions) {
    absl::StatusOr<std::map<std::string, int>> open = options_.open_regressions();
    if (open.ok()) {
      absl::MutexLock lock(&regressions_mu_);
      // A series whose regressions were all closed loses its gauge (no stale 1 to alert on).
      for (const std::string& series : regression_series_) {
        if (open->count(series) == 0)
          regressions_open_.Remove(&regressions_open_.Add({{"series", series}}));
      }
      regression_series_.clear();
      for (const auto& [series, n] : *open) {
        regressions_open_.Add({{"series", series}}).Set(n);
        regression_series_.insert(series);
      }
    } else {
      spdlog::warn("metrics: cannot read open regressions: {}", open.status().ToString());
    }
  }
  if (options_.artifact_usage) {
    const ControllerMetricsOptions::ArtifactUsage usage = options_.artifact_usage();
    artifact_bytes_.Add({{"kind", "used"}}).Set(static_cast<double>(usage.used_bytes));
    artifact_bytes_.Add({{"kind", "quota"}}).Set(static_cast<double>(usage.quota_bytes));
    artifacts_.Add({{"state", "published"}}).Set(static_cast<double>(usage.published));
    artifacts_.Add({{"state", "quarantined"}}).Set(static_cast<double>(usage.quarantined));
  }
  if (options_.nightly_store_errors) {
    // The nightly unit keeps the totals; the counter follows them (they never go down).
    absl::MutexLock lock(&nightly_store_errors_mu_);
    for (const auto& [op, total] : options_.nightly_store_errors()) {
      prometheus::Counter& counter = nightly_store_errors_.Add({{"op", op}});
      const double behind = static_cast<double>(total) - counter.Value();
      if (behind > 0) counter.Increment(behind);
    }
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

void ControllerMetrics::OnHttpResponse(const std::string& route, unsigned status, double seconds) {
  http_requests_.Add({{"route", route}, {"code", std::to_string(status)}}).Increment();
  http_duration_.Add({{"route", route}}, FastSeconds()).Observe(seconds);
}

void ControllerMetrics::OnGrpcCall(const std::string& method, const std::string& code) {
  grpc_requests_.Add({{"method", method}, {"code", code}}).Increment();
}

void ControllerMetrics::OnJobDispatched(const std::string& benchmark, double dispatch_seconds) {
  dispatch_latency_.Add({}, DispatchSeconds()).Observe(dispatch_seconds);
}

void ControllerMetrics::OnJobFinished(const std::string& benchmark, v1::JobStatus status,
                                      double elapsed_seconds) {
  job_duration_.Add({{"benchmark", benchmark}}, JobSeconds()).Observe(elapsed_seconds);
  jobs_finished_
      .Add({{"benchmark", benchmark},
            {"status", StateLabel<v1::JobStatus>(v1::JobStatus_Name(status), "JOB_STATUS_")}})
      .Increment();
}

void ControllerMetrics::OnSamplesIngested(uint64_t stored, double ingest_seconds) {
  samples_ingested_.Add({}).Increment(static_cast<double>(stored));
  ingest_duration_.Add({}, FastSeconds()).Observe(ingest_seconds);
}

void ControllerMetrics::OnLeaseExpired(const std::string&, bool requeued) {
  leases_expired_.Add({{"requeued", requeued ? "true" : "false"}}).Increment();
}

void ControllerMetrics::OnReboot(v1::RebootEvent::Kind kind) {
  std::string result = StateLabel<v1::RebootEvent::Kind>(v1::RebootEvent::Kind_Name(kind), "KIND_");
  reboots_.Add({{"result", result}}).Increment();
}

void ControllerMetrics::OnRunFinished(const v1::Run& run) {
  runs_finished_
      .Add({{"benchmark", run.spec().benchmark()},
            {"state", StateLabel<v1::RunState>(v1::RunState_Name(run.state()), "RUN_STATE_")}})
      .Increment();
  if (run.state() != v1::RUN_STATE_SUCCEEDED) return;
  absl::MutexLock lock(&queue_mu_);
  queue_.push_back(run);
}

void ControllerMetrics::AnalyseLoop() {
  for (;;) {
    v1::Run run;
    {
      absl::MutexLock lock(&queue_mu_);
      queue_mu_.Await(absl::Condition(
          +[](ControllerMetrics* m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(m->queue_mu_) {
            return m->stopping_ || !m->queue_.empty();
          },
          this));
      if (queue_.empty()) return;  // stopping, nothing left
      run = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    Analyse(run);
    absl::MutexLock lock(&queue_mu_);
    busy_ = false;
  }
}

void ControllerMetrics::DrainForTest() {
  absl::MutexLock lock(&queue_mu_);
  queue_mu_.Await(absl::Condition(
      +[](ControllerMetrics* m)
           ABSL_EXCLUSIVE_LOCKS_REQUIRED(m->queue_mu_) { return m->queue_.empty() && !m->busy_; },
      this));
}

size_t ControllerMetrics::HeadlineSeriesForTest() {
  absl::MutexLock lock(&headline_mu_);
  return headline_order_.size();
}

void ControllerMetrics::Analyse(const v1::Run& run) {
  const std::string& benchmark = run.spec().benchmark();
  const std::string primary = options_.primary_metric ? options_.primary_metric(benchmark) : "";
  if (primary.empty()) return;
  absl::StatusOr<v1::GetResultsResponse> results = facade_.GetResults(run.id());
  if (!results.ok()) {
    spdlog::warn("metrics: run={} results: {}", run.id(), results.status().ToString());
    return;
  }
  std::vector<v1::Sample> samples(results->samples().begin(), results->samples().end());
  std::set<std::string> microarchs;
  for (const v1::Sample& s : samples) {
    if (s.metric() == primary) microarchs.insert(s.microarch());
  }
  if (microarchs.empty()) return;
  const std::string host_class = microarchs.size() == 1 ? *microarchs.begin() : "mixed";
  report::CompareOptions options;
  for (const v1::ArmSpec& arm : run.spec().arms()) options.arm_order.push_back(arm.name());
  absl::StatusOr<report::Comparison> comparison =
      report::Compare(report::ObservationsFromSamples(samples), options);
  if (!comparison.ok()) {
    spdlog::warn("metrics: run={} comparison: {}", run.id(), comparison.status().ToString());
    return;
  }
  const report::GroupResult* last = nullptr;
  for (const report::GroupResult& group : comparison->groups) {
    if (group.metric != primary) continue;
    last = &group;  // groups come in sweep order; the last is the largest value
    for (const report::ArmResult& arm : group.arms) {
      if (arm.verdict == report::Verdict::kBaseline) continue;
      verdicts_.Add({{"benchmark", benchmark}, {"verdict", report::VerdictName(arm.verdict)}})
          .Increment();
    }
  }
  if (last == nullptr) return;
  for (const report::ArmResult& arm : last->arms) {
    const std::optional<double> value = last->direction == stats::Direction::kHigherIsBetter
                                            ? arm.summary.hmean
                                            : arm.summary.amean;
    if (!value) continue;
    SetHeadline({{"benchmark", benchmark},
                 {"host_class", host_class},
                 {"arm", arm.arm},
                 {"metric", primary}},
                *value);
  }
}

void ControllerMetrics::SetHeadline(const Labels& labels, double value) {
  absl::MutexLock lock(&headline_mu_);
  auto it = std::find(headline_order_.begin(), headline_order_.end(), labels);
  if (it != headline_order_.end()) headline_order_.erase(it);
  while (headline_order_.size() >= std::max<size_t>(1, options_.max_headline_series)) {
    headline_.Remove(&headline_.Add(headline_order_.front()));
    headline_order_.pop_front();
  }
  headline_order_.push_back(labels);
  headline_.Add(labels).Set(value);
}

}  // namespace tlbfleet::metrics
