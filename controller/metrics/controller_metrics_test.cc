// The controller's metrics over a real core and store (a fake agent channel): state gauges
// from the snapshot, counters from observer calls, and the headline/verdict analysis of
// finished runs with its bound on series.

#include "controller/metrics/controller_metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "controller/core/controller_fixture_for_test.h"
#include "controller/core/fake_channel_for_test.h"

namespace tlbfleet::metrics {
namespace {

class ControllerMetricsTest : public core::ControllerFixture {
 protected:
  void TearDown() override {
    metrics_.reset();
    ControllerFixture::TearDown();
  }
  void MakeMetrics(
      size_t max_headline_series = 1000,
      std::function<absl::StatusOr<std::map<std::string, int>>()> open_regressions = nullptr) {
    ControllerMetricsOptions options;
    options.open_regressions = std::move(open_regressions);
    options.max_headline_series = max_headline_series;
    options.primary_metric = [](const std::string& benchmark) {
      return benchmark == "pipetest" ? std::string("usecs_per_op") : std::string();
    };
    metrics_ = std::make_unique<ControllerMetrics>(controller_->runs(), options);
    controller_->AddObserver(metrics_.get());
  }
  void Connect() {
    v1::Hello hello;
    hello.set_protocol_version(v1::PROTOCOL_VERSION_1);
    hello.set_agent_id("a1");
    hello.mutable_host()->set_hostname("host-a1");
    hello.mutable_host()->set_boot_id("boot");
    ASSERT_TRUE(agents().Register(&channel_, hello).ok());
    v1::AgentMessage idle;
    idle.mutable_heartbeat()->set_state(v1::AGENT_STATE_IDLE);
    agents().OnMessage(&channel_, idle);
  }
  // Runs every job of `run_id` on the fake agent; arm `slow` measures `slow_value`.
  void RunAll(double fast_value, double slow_value) {
    for (int guard = 0; guard < 100; ++guard) {
      const v1::JobAssignment* a = channel_.LastAssignment();
      if (a == nullptr || a->lease_id() == last_lease_) break;
      last_lease_ = a->lease_id();
      const v1::JobAssignment job = *a;
      v1::AgentMessage batch;
      batch.mutable_samples()->set_lease_id(job.lease_id());
      v1::Sample* s = batch.mutable_samples()->add_samples();
      s->set_metric("usecs_per_op");
      s->set_value(job.arm().rfind("fast", 0) == 0 ? fast_value + job.iteration() * 0.01
                                                   : slow_value + job.iteration() * 0.01);
      s->set_better(v1::BETTER_LOWER);
      s->set_microarch("Zen 3");
      agents().OnMessage(&channel_, batch);
      v1::AgentMessage done;
      done.mutable_complete()->set_lease_id(job.lease_id());
      done.mutable_complete()->set_status(v1::JOB_STATUS_SUCCEEDED);
      done.mutable_complete()->set_sample_count(1);
      done.mutable_complete()->set_elapsed_seconds(3);
      agents().OnMessage(&channel_, done);
    }
    controller_->DeliverObserverCallsForTest();
  }
  std::string Submit(const std::string& fast, const std::string& slow) {
    auto r = runs().Submit("name: m\nbenchmark: pipetest\niterations: 6\narms: [{name: " + slow +
                               "}, {name: " + fast + "}]\n",
                           "m.yaml");
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->run_id() : "";
  }

  std::unique_ptr<ControllerMetrics> metrics_;
  core::FakeChannel channel_;
  std::string last_lease_;
};

bool Has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST_F(ControllerMetricsTest, StateGaugesAreReadFromTheSnapshotAtScrapeTime) {
  MakeMetrics();
  std::string before = metrics_->Render();
  EXPECT_TRUE(Has(before, "tlbfleet_agents{state=\"idle\"} 0")) << before;
  EXPECT_TRUE(Has(before, "tlbfleet_runs{state=\"queued\"} 0")) << before;
  EXPECT_TRUE(Has(before, "tlbfleet_build_info{"));
  EXPECT_TRUE(Has(before, "tlbfleet_metrics_snapshot_ok 1"));
  Connect();
  Submit("x", "y");
  std::string after = metrics_->Render();
  // The agent took a job at once: running, and the run with it.
  EXPECT_TRUE(Has(after, "tlbfleet_agents{state=\"running\"} 1")) << after;
  EXPECT_TRUE(Has(after, "tlbfleet_runs{state=\"running\"} 1")) << after;
  EXPECT_TRUE(Has(after, "tlbfleet_jobs{state=\"running\"} 1")) << after;
  EXPECT_TRUE(Has(after, "tlbfleet_jobs{state=\"queued\"} 11")) << after;
  EXPECT_TRUE(Has(after, "tlbfleet_queue_depth_jobs 11")) << after;
}

TEST_F(ControllerMetricsTest, ObserverCallsAndTransportsCount) {
  MakeMetrics();
  Connect();
  const std::string run = Submit("fast", "slow");
  RunAll(10, 20);
  metrics_->OnHttpResponse("/api/v1/runs", 200, 0.002);
  metrics_->OnHttpResponse("/api/v1/runs", 401, 0.001);
  metrics_->OnGrpcCall("FleetService/ListRuns", "OK");
  std::string text = metrics_->Render();
  EXPECT_TRUE(
      Has(text, "tlbfleet_jobs_finished_total{benchmark=\"pipetest\",status=\"succeeded\"} 12"))
      << text;
  EXPECT_TRUE(Has(text, "tlbfleet_samples_ingested_total 12")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_job_duration_seconds_count{benchmark=\"pipetest\"} 12")) << text;
  EXPECT_TRUE(
      Has(text, "tlbfleet_job_duration_seconds_bucket{benchmark=\"pipetest\",le=\"5\"} 12"));
  EXPECT_TRUE(Has(text, "tlbfleet_dispatch_latency_seconds_count 12")) << text;
  EXPECT_TRUE(
      Has(text, "tlbfleet_runs_finished_total{benchmark=\"pipetest\",state=\"succeeded\"} 1"));
  EXPECT_TRUE(Has(text, "tlbfleet_http_requests_total{code=\"401\",route=\"/api/v1/runs\"} 1"))
      << text;
  EXPECT_TRUE(
      Has(text, "tlbfleet_grpc_requests_total{code=\"OK\",method=\"FleetService/ListRuns\"} 1"));
  metrics_->OnLeaseExpired(run, true);
  metrics_->OnReboot(v1::RebootEvent::KIND_FAILED);
  text = metrics_->Render();
  EXPECT_TRUE(Has(text, "tlbfleet_leases_expired_total{requeued=\"true\"} 1")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_reboots_total{result=\"failed\"} 1")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_reboots_total{result=\"completed\"} 0")) << text;
}

TEST_F(ControllerMetricsTest, FinishedRunsGiveHeadlinesAndVerdictsWithinTheBound) {
  MakeMetrics(/*max_headline_series=*/2);
  Connect();
  Submit("fast-1", "slow-1");
  RunAll(10, 20);
  metrics_->DrainForTest();
  std::string first = metrics_->Render();
  // Lower is better: the fast arm's Amean, per benchmark, host class and arm.
  EXPECT_TRUE(Has(first,
                  "tlbfleet_headline_value{arm=\"fast-1\",benchmark=\"pipetest\",host_class=\"Zen "
                  "3\",metric=\"usecs_per_op\"} 10.03"))
      << first;
  EXPECT_TRUE(
      Has(first, "tlbfleet_comparison_verdicts_total{benchmark=\"pipetest\",verdict=\"better\"} 1"))
      << first;

  Submit("fast-2", "slow-2");
  RunAll(10, 20);
  metrics_->DrainForTest();
  EXPECT_EQ(metrics_->HeadlineSeriesForTest(), 2u);
  std::string second = metrics_->Render();
  EXPECT_FALSE(Has(second, "arm=\"fast-1\"")) << second;  // evicted, oldest first
  EXPECT_TRUE(Has(second, "arm=\"fast-2\"")) << second;
  EXPECT_TRUE(Has(second, "arm=\"slow-2\"")) << second;
  EXPECT_TRUE(Has(
      second, "tlbfleet_comparison_verdicts_total{benchmark=\"pipetest\",verdict=\"better\"} 2"));
}

TEST_F(ControllerMetricsTest, OpenRegressionsAreReadAtScrapeTimeAndClosedOnesDisappear) {
  std::map<std::string, int> open = {{"ebizzy/Zen 3/records_per_sec", 2},
                                     {"pipetest/Zen 3/usecs_per_op", 1}};
  bool fail = false;
  MakeMetrics(1000, [&]() -> absl::StatusOr<std::map<std::string, int>> {
    if (fail) return absl::UnavailableError("database is locked");
    return open;
  });
  std::string first = metrics_->Render();
  EXPECT_TRUE(
      Has(first, "tlbfleet_nightly_regressions_open{series=\"ebizzy/Zen 3/records_per_sec\"} 2"))
      << first;
  EXPECT_TRUE(
      Has(first, "tlbfleet_nightly_regressions_open{series=\"pipetest/Zen 3/usecs_per_op\"} 1"));

  // The pipetest regression was acknowledged: its series has no sample any more (an alert on
  // `> 0` resolves), the other keeps its count.
  open.erase("pipetest/Zen 3/usecs_per_op");
  std::string second = metrics_->Render();
  EXPECT_FALSE(Has(second, "pipetest/Zen 3/usecs_per_op")) << second;
  EXPECT_TRUE(
      Has(second, "tlbfleet_nightly_regressions_open{series=\"ebizzy/Zen 3/records_per_sec\"} 2"));

  // A failed read keeps the last values rather than dropping an alert on a storage hiccup.
  fail = true;
  std::string third = metrics_->Render();
  EXPECT_TRUE(
      Has(third, "tlbfleet_nightly_regressions_open{series=\"ebizzy/Zen 3/records_per_sec\"} 2"));
}

TEST_F(ControllerMetricsTest, WithoutNightlyThereIsNoRegressionSample) {
  MakeMetrics();
  EXPECT_FALSE(Has(metrics_->Render(), "tlbfleet_nightly_regressions_open{"));
  EXPECT_FALSE(Has(metrics_->Render(), "tlbfleet_nightly_store_errors_total{"));
}

TEST_F(ControllerMetricsTest, NightlyStoreErrorsAreReadAtScrapeTime) {
  std::map<std::string, uint64_t> errors;
  ControllerMetricsOptions options;
  options.nightly_store_errors = [&] { return errors; };
  metrics_ = std::make_unique<ControllerMetrics>(controller_->runs(), options);
  std::string first = metrics_->Render();
  // Both series from the start, so that rate() sees the first failure.
  EXPECT_TRUE(Has(first, "tlbfleet_nightly_store_errors_total{op=\"read\"} 0")) << first;
  EXPECT_TRUE(Has(first, "tlbfleet_nightly_store_errors_total{op=\"write\"} 0")) << first;
  errors = {{"read", 1}, {"write", 7}};
  std::string second = metrics_->Render();
  EXPECT_TRUE(Has(second, "tlbfleet_nightly_store_errors_total{op=\"read\"} 1")) << second;
  EXPECT_TRUE(Has(second, "tlbfleet_nightly_store_errors_total{op=\"write\"} 7")) << second;
  EXPECT_TRUE(Has(metrics_->Render(), "tlbfleet_nightly_store_errors_total{op=\"write\"} 7"));
}

TEST_F(ControllerMetricsTest, TheArtifactStoreIsReadAtScrapeTime) {
  ControllerMetricsOptions options;
  ControllerMetricsOptions::ArtifactUsage usage{4096, 1 << 30, 2, 0};
  options.artifact_usage = [&] { return usage; };
  metrics_ = std::make_unique<ControllerMetrics>(controller_->runs(), options);
  std::string first = metrics_->Render();
  EXPECT_TRUE(Has(first, "tlbfleet_artifact_store_bytes{kind=\"used\"} 4096")) << first;
  EXPECT_TRUE(Has(first, "tlbfleet_artifact_store_bytes{kind=\"quota\"} 1073741824")) << first;
  EXPECT_TRUE(Has(first, "tlbfleet_artifacts{state=\"published\"} 2")) << first;
  EXPECT_TRUE(Has(first, "tlbfleet_artifacts{state=\"quarantined\"} 0")) << first;
  usage = {1024, 1 << 30, 1, 1};  // one rotted and was quarantined
  std::string second = metrics_->Render();
  EXPECT_TRUE(Has(second, "tlbfleet_artifact_store_bytes{kind=\"used\"} 1024")) << second;
  EXPECT_TRUE(Has(second, "tlbfleet_artifacts{state=\"quarantined\"} 1")) << second;
}

TEST_F(ControllerMetricsTest, WithoutAnArtifactStoreThereIsNoArtifactSample) {
  MakeMetrics();
  EXPECT_FALSE(Has(metrics_->Render(), "tlbfleet_artifacts{"));
  EXPECT_FALSE(Has(metrics_->Render(), "tlbfleet_artifact_store_bytes{"));
}

}  // namespace
}  // namespace tlbfleet::metrics
