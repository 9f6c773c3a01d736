#include "agent/metrics/agent_metrics.h"

#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>
#include <sys/resource.h>

#include <exception>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/kernel/ceiling.h"
#include "common/version.h"

namespace tlbfleet::agent {

double ChildrenCpuSeconds() {
  struct rusage usage {};
  if (::getrusage(RUSAGE_CHILDREN, &usage) != 0) return 0;
  auto seconds = [](const struct timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

AgentMetrics::AgentMetrics(AgentMetricsSources sources)
    : sources_(std::move(sources)),
      registry_(std::make_shared<prometheus::Registry>()),
      connected_(prometheus::BuildGauge()
                     .Name("tlbfleet_agent_connected")
                     .Help("1 when the agent holds a stream to the controller that welcomed it")
                     .Register(*registry_)),
      ceiling_pages_(prometheus::BuildGauge()
                         .Name("tlbfleet_agent_ceiling_pages")
                         .Help("Current tlb_single_page_flush_ceiling (pages); absent when it "
                               "cannot be read")
                         .Register(*registry_)),
      ceiling_readable_(prometheus::BuildGauge()
                            .Name("tlbfleet_agent_ceiling_readable")
                            .Help("1 when the agent can read the flush ceiling")
                            .Register(*registry_)),
      ceiling_writable_(prometheus::BuildGauge()
                            .Name("tlbfleet_agent_ceiling_writable")
                            .Help("1 when the agent can write the flush ceiling (0 under kernel "
                                  "lockdown, without debugfs, or not root)")
                            .Register(*registry_)),
      ceiling_degraded_(prometheus::BuildGauge()
                            .Name("tlbfleet_agent_ceiling_degraded")
                            .Help("1 when the agent stopped trusting the ceiling (a restore "
                                  "failed or its journal is corrupt) and will not write it "
                                  "until cleared on the host")
                            .Register(*registry_)),
      job_running_(prometheus::BuildGauge()
                       .Name("tlbfleet_agent_job_running")
                       .Help("1 while a workload runs")
                       .Register(*registry_)),
      last_exit_status_(prometheus::BuildGauge()
                            .Name("tlbfleet_agent_last_workload_exit_status")
                            .Help("Exit status of the last workload process (128+N when killed "
                                  "by signal N, -1 when timed out or cancelled); absent before "
                                  "the first")
                            .Register(*registry_)),
      spool_records_(prometheus::BuildGauge()
                         .Name("tlbfleet_agent_spool_records")
                         .Help("Finished jobs' results in the spool, not yet acknowledged")
                         .Register(*registry_)),
      spool_bytes_(prometheus::BuildGauge()
                       .Name("tlbfleet_agent_spool_bytes")
                       .Help("Size of the spooled results on disk")
                       .Register(*registry_)),
      reconnects_(prometheus::BuildCounter()
                      .Name("tlbfleet_agent_reconnects_total")
                      .Help("Connection attempts to the controller after the first")
                      .Register(*registry_)),
      cpu_seconds_(prometheus::BuildCounter()
                       .Name("tlbfleet_agent_workload_cpu_seconds_total")
                       .Help("User and system CPU time of finished workload processes")
                       .Register(*registry_)),
      build_info_(prometheus::BuildGauge()
                      .Name("tlbfleet_build_info")
                      .Help("The program's version")
                      .Register(*registry_)) {
  build_info_.Add({{"version", kVersion}, {"program", "tlbfleet-agent"}}).Set(1);
  reconnects_.Add({});
  cpu_seconds_.Add({});
}

void AgentMetrics::Update() const {
  const AgentStatus status = sources_.status();
  connected_.Add({}).Set(status.connected ? 1 : 0);
  job_running_.Add({}).Set(status.job_running ? 1 : 0);
  if (status.last_exit_status.has_value()) {
    last_exit_status_.Add({}).Set(*status.last_exit_status);
  }
  spool_records_.Add({}).Set(static_cast<double>(status.spool_records));
  spool_bytes_.Add({}).Set(static_cast<double>(status.spool_bytes));

  const v1::CeilingInfo ceiling = ProbeCeiling(*sources_.sysroot);
  ceiling_readable_.Add({}).Set(ceiling.readable() ? 1 : 0);
  const bool degraded = !status.ceiling_degraded_reason.empty();
  ceiling_degraded_.Add({}).Set(degraded ? 1 : 0);
  // What the agent would do, as HostInfo tells the controller: a degraded ceiling is not
  // written even when the file could be.
  ceiling_writable_.Add({}).Set(ceiling.writable() && !degraded ? 1 : 0);
  if (ceiling.has_value()) {
    ceiling_pages_.Add({}).Set(static_cast<double>(ceiling.value()));
  } else if (ceiling_pages_.Has({})) {
    // A value from an earlier scrape would be a lie now.
    ceiling_pages_.Remove(&ceiling_pages_.Add({}));
  }

  const double cpu = sources_.workload_cpu_seconds ? sources_.workload_cpu_seconds() : 0;
  absl::MutexLock lock(&mu_);
  if (status.reconnects > reconnects_seen_) {
    reconnects_.Add({}).Increment(static_cast<double>(status.reconnects - reconnects_seen_));
    reconnects_seen_ = status.reconnects;
  }
  if (cpu > cpu_seconds_seen_) {
    cpu_seconds_.Add({}).Increment(cpu - cpu_seconds_seen_);
    cpu_seconds_seen_ = cpu;
  }
}

std::vector<prometheus::MetricFamily> AgentMetrics::Collect() const {
  Update();
  return registry_->Collect();
}

std::string AgentMetrics::Render() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, Collect());
  return out.str();
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::shared_ptr<prometheus::Collectable> metrics) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-listen '", listen, "': ", why, " (want ADDR:PORT)"));
  };
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  const std::string host = listen.substr(0, colon);
  uint32_t port = 0;
  if (!absl::SimpleAtoi(listen.substr(colon + 1), &port) || port > 65535) {
    return bad("the port is not a number in [0, 65535]");
  }
  if (host.empty()) return bad("no address (0.0.0.0 listens on every interface)");
  if (host.front() == '[' && host.back() != ']') return bad("unterminated IPv6 address");

  auto server = std::unique_ptr<MetricsServer>(new MetricsServer());
  try {
    // One thread: a scrape is cheap, and a second scraper can wait.
    server->exposer_ = std::make_unique<prometheus::Exposer>(listen, 1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("--metrics-listen '", listen, "': cannot listen: ", e.what()));
  }
  server->metrics_ = std::move(metrics);
  server->exposer_->RegisterCollectable(server->metrics_);
  std::vector<int> ports = server->exposer_->GetListeningPorts();
  server->port_ = ports.empty() ? static_cast<int>(port) : ports.front();
  return server;
}

MetricsServer::~MetricsServer() = default;

}  // namespace tlbfleet::agent
