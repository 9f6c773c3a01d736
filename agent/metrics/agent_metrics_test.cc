// The agent's metrics: values read at scrape time from the agent's status, the sysroot's
// ceiling and the CPU source; counters that follow their source; and the HTTP server that
// serves them (a real socket on loopback, port 0).

#include "agent/metrics/agent_metrics.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "agent/kernel/ceiling.h"
#include "agent/kernel/fake_sysroot_for_test.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

class AgentMetricsTest : public ::testing::Test {
 protected:
  AgentMetricsSources Sources() {
    AgentMetricsSources sources;
    sources.status = [this] { return status_; };
    sources.sysroot = &root_;
    sources.workload_cpu_seconds = [this] { return cpu_; };
    return sources;
  }
  static bool Has(const std::string& text, const std::string& line) {
    return absl::StrContains(text, "\n" + line + "\n") || absl::StartsWith(text, line + "\n");
  }

  TempDir dir_;
  FakeSysroot root_{dir_};
  AgentStatus status_;
  double cpu_ = 0;
};

TEST_F(AgentMetricsTest, EveryValueIsReadAtScrapeTime) {
  root_.WriteFile(kCeilingPath, "33\n");
  AgentMetrics metrics(Sources());
  std::string text = metrics.Render();
  EXPECT_TRUE(Has(text, "tlbfleet_agent_connected 0")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_ceiling_pages 33")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_ceiling_writable 1")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_job_running 0")) << text;
  EXPECT_FALSE(absl::StrContains(text, "tlbfleet_agent_last_workload_exit_status ")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_reconnects_total 0")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_build_info{program=\"tlbfleet-agent\",version=\"0.1.0\"} 1"))
      << text;

  status_.connected = true;
  status_.job_running = true;
  status_.last_exit_status = 137;
  status_.spool_records = 3;
  status_.spool_bytes = 4096;
  status_.reconnects = 2;
  cpu_ = 1.5;
  root_.WriteFile(kCeilingPath, "512\n");
  text = metrics.Render();
  EXPECT_TRUE(Has(text, "tlbfleet_agent_connected 1")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_ceiling_pages 512")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_job_running 1")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_last_workload_exit_status 137")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_spool_records 3")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_spool_bytes 4096")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_reconnects_total 2")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_workload_cpu_seconds_total 1.5")) << text;

  // Counters follow their source without counting twice.
  status_.reconnects = 5;
  cpu_ = 2;
  text = metrics.Render();
  EXPECT_TRUE(Has(text, "tlbfleet_agent_reconnects_total 5")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_workload_cpu_seconds_total 2")) << text;

  // A degraded ceiling is not writable for the agent, whatever the file allows.
  EXPECT_TRUE(Has(text, "tlbfleet_agent_ceiling_degraded 0")) << text;
  status_.ceiling_degraded_reason = "degraded: restore failed";
  text = metrics.Render();
  EXPECT_TRUE(Has(text, "tlbfleet_agent_ceiling_degraded 1")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_ceiling_writable 0")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_ceiling_pages 512")) << text;
}

TEST_F(AgentMetricsTest, ALockedDownCeilingIsNotWritableAndHasNoValue) {
  root_.WriteFile(kCeilingPath, "33\n");
  AgentMetrics metrics(Sources());
  EXPECT_TRUE(Has(metrics.Render(), "tlbfleet_agent_ceiling_pages 33"));
  root_.FailOpen(kCeilingPath, O_RDONLY, EPERM);
  root_.FailOpen(kCeilingPath, O_WRONLY, EPERM);
  std::string text = metrics.Render();
  EXPECT_TRUE(Has(text, "tlbfleet_agent_ceiling_readable 0")) << text;
  EXPECT_TRUE(Has(text, "tlbfleet_agent_ceiling_writable 0")) << text;
  // The old value is gone rather than stale.
  EXPECT_FALSE(absl::StrContains(text, "tlbfleet_agent_ceiling_pages ")) << text;
}

// GET /metrics over a real socket; "" when the request fails.
std::string Scrape(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) answer.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return answer;
}

TEST_F(AgentMetricsTest, ServedOverHttpOnAFreePort) {
  root_.WriteFile(kCeilingPath, "64\n");
  status_.spool_records = 7;
  auto metrics = std::make_shared<AgentMetrics>(Sources());
  absl::StatusOr<std::unique_ptr<MetricsServer>> server =
      MetricsServer::Start("127.0.0.1:0", metrics);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  std::string answer = Scrape((*server)->port());
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 200")) << answer;
  EXPECT_TRUE(absl::StrContains(answer, "\ntlbfleet_agent_spool_records 7\n")) << answer;
  EXPECT_TRUE(absl::StrContains(answer, "\ntlbfleet_agent_ceiling_pages 64\n")) << answer;

  // The same address again: in use, a clear error naming the flag.
  absl::StatusOr<std::unique_ptr<MetricsServer>> again =
      MetricsServer::Start("127.0.0.1:" + std::to_string((*server)->port()), metrics);
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(absl::IsUnavailable(again.status())) << again.status();
  EXPECT_TRUE(absl::StrContains(again.status().message(), "--metrics-listen")) << again.status();
}

TEST_F(AgentMetricsTest, MalformedListenAddressesNameTheFlag) {
  auto metrics = std::make_shared<AgentMetrics>(Sources());
  for (const char* bad : {"9470", ":9470", "127.0.0.1:http", "127.0.0.1:70000", "[::1:9470"}) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> server = MetricsServer::Start(bad, metrics);
    ASSERT_FALSE(server.ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(server.status())) << bad << ": " << server.status();
    EXPECT_TRUE(absl::StartsWith(server.status().message(), "--metrics-listen")) << bad;
  }
}

}  // namespace
}  // namespace tlbfleet::agent
