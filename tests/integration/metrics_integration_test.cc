// Prometheus metrics of a real controller and agent on loopback: their live /metrics during
// a run pass `promtool check metrics` and show the run, and Debian's real `prometheus`
// server scrapes both and answers a query for tlbfleet metrics through its HTTP API.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <regex>

#include "tests/integration/harness.h"
#include "tests/integration/http_client.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kPromtool[] = "/usr/bin/promtool";
constexpr char kPrometheus[] = "/usr/bin/prometheus";

// Two jobs of a few seconds each, so that a scrape can catch the run and a job running.
constexpr char kSpec[] = R"(name: metrics-run
benchmark: ebizzy
params: {seconds: 2, chunks: 4, chunk_size: 65536}
iterations: 1
arms:
  - {name: mmap,   params: {mmap: always}}
  - {name: malloc, params: {mmap: never}}
)";

// A loopback port nobody listens on now (Prometheus cannot listen on port 0).
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

bool HasLine(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

class MetricsIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controller_ = std::make_unique<ControllerProcess>(dir_.path());
    ASSERT_GT(controller_->http_port(), 0) << controller_->process().Log();
    agent_ = std::make_unique<Process>(
        std::vector<std::string>{BinPath("tlbfleet-agent"), "--controller", controller_->address(),
                                 "--state-dir", dir_.path() + "/agent", "--max-backoff-seconds",
                                 "1", "--metrics-listen", "127.0.0.1:0"},
        dir_.path() + "/agent.log");
    ASSERT_TRUE(WaitFor([&] { return controller_->ConnectedHosts() == 1; }, 30s))
        << controller_->process().Log() << agent_->Log();
    std::smatch m;
    std::string log;
    ASSERT_TRUE(WaitFor(
        [&] {
          log = agent_->Log();
          return std::regex_search(log, m, std::regex("serving metrics on port (\\d+)"));
        },
        10s))
        << log;
    agent_metrics_port_ = std::stoi(m[1]);
  }
  std::string ControllerMetrics() {
    HttpResult r = HttpCall(controller_->http_port(), "GET", "/metrics");
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.Header("content-type").rfind("text/plain", 0), 0u) << r.Header("content-type");
    return r.body;
  }
  std::string AgentMetrics() {
    HttpResult r = HttpCall(agent_metrics_port_, "GET", "/metrics");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.body;
  }
  // `promtool check metrics` on `text`: "" when it passes, else what it said.
  std::string Promtool(const std::string& text, const std::string& name) {
    std::string file = dir_.path() + "/" + name + ".prom";
    std::ofstream(file) << text;
    std::string output;
    int rc = RunCommand({"/bin/sh", "-c", std::string(kPromtool) + " check metrics < " + file},
                        &output, /*merge_stderr=*/true);
    return rc == 0 ? "" : "promtool exit " + std::to_string(rc) + ": " + output;
  }

  TempDir dir_;
  std::unique_ptr<ControllerProcess> controller_;
  std::unique_ptr<Process> agent_;
  int agent_metrics_port_ = 0;
};

TEST_F(MetricsIntegrationTest, LiveMetricsDuringARunPassPromtool) {
  std::string run_id;
  ASSERT_TRUE(controller_->Submit(kSpec, &run_id).ok());

  // Caught mid-run: the controller counts the run as running, the agent its job.
  std::string agent_text;
  ASSERT_TRUE(WaitFor(
      [&] {
        agent_text = AgentMetrics();
        return HasLine(agent_text, "tlbfleet_agent_job_running 1");
      },
      60s))
      << agent_text << agent_->Log();
  std::string controller_text = ControllerMetrics();
  EXPECT_TRUE(HasLine(controller_text, "tlbfleet_runs{state=\"running\"} 1")) << controller_text;
  EXPECT_TRUE(HasLine(controller_text, "tlbfleet_agents{state=\"running\"} 1")) << controller_text;
  EXPECT_TRUE(HasLine(agent_text, "tlbfleet_agent_connected 1")) << agent_text;
  EXPECT_EQ(Promtool(controller_text, "controller-running"), "");
  EXPECT_EQ(Promtool(agent_text, "agent-running"), "");

  ASSERT_EQ(controller_->WaitForRunEnd(run_id, 120s).state(), v1::RUN_STATE_SUCCEEDED)
      << agent_->Log();
  controller_text = ControllerMetrics();
  EXPECT_TRUE(HasLine(controller_text,
                      "tlbfleet_runs_finished_total{benchmark=\"ebizzy\",state=\"succeeded\"} 1"))
      << controller_text;
  EXPECT_TRUE(HasLine(controller_text,
                      "tlbfleet_jobs_finished_total{benchmark=\"ebizzy\",status=\"succeeded\"} 2"))
      << controller_text;
  EXPECT_TRUE(HasLine(controller_text, "tlbfleet_runs{state=\"succeeded\"} 1")) << controller_text;
  // The HTTP requests of this test, by route pattern rather than path.
  EXPECT_NE(controller_text.find("tlbfleet_http_requests_total{code=\"200\",route=\"/metrics\"}"),
            std::string::npos)
      << controller_text;
  EXPECT_EQ(Promtool(controller_text, "controller-after"), "");

  // The agent's job has ended and its result was acknowledged.
  ASSERT_TRUE(WaitFor(
      [&] {
        agent_text = AgentMetrics();
        return HasLine(agent_text, "tlbfleet_agent_job_running 0") &&
               HasLine(agent_text, "tlbfleet_agent_spool_records 0");
      },
      30s))
      << agent_text;
  EXPECT_TRUE(HasLine(agent_text, "tlbfleet_agent_last_workload_exit_status 0")) << agent_text;
  std::smatch cpu;
  ASSERT_TRUE(std::regex_search(agent_text, cpu,
                                std::regex("\ntlbfleet_agent_workload_cpu_seconds_total (\\S+)\n")))
      << agent_text;
  EXPECT_GT(std::stod(cpu[1]), 0.0) << "two ebizzy runs of 2 s used no CPU?";
  EXPECT_EQ(Promtool(agent_text, "agent-after"), "");
}

TEST_F(MetricsIntegrationTest, PrometheusScrapesTheControllerAndTheAgent) {
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::string config = dir_.path() + "/prometheus.yml";
  std::ofstream(config) << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                        << "scrape_configs:\n"
                        << "  - job_name: tlbfleet-controller\n"
                        << "    static_configs: [{targets: ['127.0.0.1:" << controller_->http_port()
                        << "']}]\n"
                        << "  - job_name: tlbfleet-agent\n"
                        << "    static_configs: [{targets: ['127.0.0.1:" << agent_metrics_port_
                        << "']}]\n";
  Process prometheus(
      {kPrometheus, "--config.file=" + config, "--storage.tsdb.path=" + dir_.path() + "/tsdb",
       "--web.listen-address=127.0.0.1:" + std::to_string(port)},
      dir_.path() + "/prometheus.log");

  // A controller metric and an agent metric, each from its own scrape job, through PromQL.
  auto query = [&](const std::string& promql) {
    return HttpCall(port, "GET", "/api/v1/query?query=" + promql).body;
  };
  std::string agents;
  EXPECT_TRUE(WaitFor(
      [&] {
        agents = query("tlbfleet_agents");
        return agents.find("\"job\":\"tlbfleet-controller\"") != std::string::npos &&
               std::regex_search(agents,
                                 std::regex("\"state\":\"idle\"\\},\"value\":\\[[0-9.]+,\"1\"\\]"));
      },
      60s))
      << agents << prometheus.Log();
  std::string connected;
  EXPECT_TRUE(WaitFor(
      [&] {
        connected = query("tlbfleet_agent_connected");
        return connected.find("\"job\":\"tlbfleet-agent\"") != std::string::npos &&
               connected.find(",\"1\"]") != std::string::npos;
      },
      60s))
      << connected << prometheus.Log();
  // Both targets up: the scrapes themselves succeeded.
  std::string up = query("sum(up)");
  EXPECT_NE(up.find(",\"2\"]"), std::string::npos) << up;
}

}  // namespace
}  // namespace tlbfleet::testing
