// netperf with `server: peer`, end to end: a real controller, agent A (the client, no
// netserver) and agent B (--netserver-listen 127.0.0.2:0). The run waits while no agent
// advertises a netserver, then A's jobs dial B's netserver: B's log shows it served them.
// Loopback addresses only (127.0.0.0/8).

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Only the host labelled role=client runs the client; B is not selected.
constexpr char kPeerSpec[] = R"(
name: it-netperf-peer
benchmark: netperf
params: {test: tcp_rr, message_size: 1, seconds: 1, server: peer}
iterations: 2
arms: [{name: only}]
hosts: {labels: {role: client}}
)";

class NetperfPeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    controller_ = std::make_unique<ControllerProcess>(dir_.path());
    ASSERT_GT(controller_->grpc_port(), 0) << controller_->process().Log();
  }

  std::unique_ptr<Process> StartAgent(const std::string& name, const std::string& role,
                                      std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {BinPath("tlbfleet-agent"),
                                     "--controller",
                                     controller_->address(),
                                     "--state-dir",
                                     dir_.path() + "/" + name,
                                     "--label",
                                     "role=" + role,
                                     "--max-backoff-seconds",
                                     "2"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<Process>(argv, dir_.path() + "/" + name + ".log");
  }

  grpc::Status Submit(const std::string& yaml, std::string* run_id) {
    return controller_->Submit(yaml, run_id, "peer.yaml");
  }

  v1::Run GetRun(const std::string& run_id) { return controller_->GetRun(run_id); }

  bool Terminal(const std::string& run_id) {
    v1::RunState s = GetRun(run_id).state();
    return s == v1::RUN_STATE_SUCCEEDED || s == v1::RUN_STATE_FAILED ||
           s == v1::RUN_STATE_CANCELLED;
  }

  std::string Logs() {
    std::string all = "--- controller\n" + controller_->process().Log();
    if (a_) all += "--- agent a\n" + a_->Log();
    if (b_) all += "--- agent b\n" + b_->Log();
    return all;
  }

  double Q(const std::string& sql) { return QueryNumber(controller_->db_path(), sql); }

  TempDir dir_;
  std::unique_ptr<ControllerProcess> controller_;
  std::unique_ptr<Process> a_;
  std::unique_ptr<Process> b_;
};

TEST_F(NetperfPeerTest, TcpRrRunsAgainstThePeersNetserverAndWaitsForOne) {
  a_ = StartAgent("a", "client");
  ASSERT_TRUE(WaitFor([&] { return controller_->ConnectedHosts() == 1; }, 30s)) << Logs();
  std::string run_id;
  grpc::Status s = Submit(kPeerSpec, &run_id);
  ASSERT_TRUE(s.ok()) << s.error_message();

  // No agent advertises a netserver: the run waits, queued, and the operator is told once.
  ASSERT_TRUE(WaitFor(
      [&] {
        return controller_->process().Log().find("advertises a netserver") != std::string::npos;
      },
      10s))
      << Logs();
  EXPECT_FALSE(WaitFor([&] { return GetRun(run_id).state() != v1::RUN_STATE_QUEUED; }, 2s))
      << Logs();
  EXPECT_EQ(GetRun(run_id).jobs().running(), 0u);
  EXPECT_EQ(Count(controller_->process().Log(), "advertises a netserver"), 1) << Logs();

  // B brings a netserver on another loopback address.
  b_ = StartAgent("b", "server", {"--netserver-listen", "127.0.0.2:0"});
  ASSERT_TRUE(WaitFor([&] { return Terminal(run_id); }, 120s)) << Logs();
  v1::Run run = GetRun(run_id);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << "\n" << Logs();
  EXPECT_EQ(run.jobs().succeeded(), 2u);

  // Two plausible results, both measured on A.
  const std::string r =
      " FROM samples WHERE run_id = " + run_id + " AND metric = 'trans_per_sec' AND series = ''";
  EXPECT_EQ(Q("SELECT COUNT(*)" + r), 2);
  EXPECT_GT(Q("SELECT MIN(value)" + r), 10) << "trans/s";
  EXPECT_EQ(Q("SELECT COUNT(DISTINCT agent_id)" + r), 1);

  // B advertised what it bound, and served exactly those two tests, for A.
  std::smatch bound;
  const std::string b_log = b_->Log();
  ASSERT_TRUE(std::regex_search(b_log, bound,
                                std::regex("advertised to peers as (127\\.0\\.0\\.2:[0-9]+)")))
      << b_log;
  EXPECT_EQ(Count(b_log, "netserver: served tcp_rr message_size=1 for 127."), 2) << b_log;
  EXPECT_EQ(Count(b_log, "did not complete"), 0) << b_log;
  // A was told to dial exactly that address, and B never ran a job of the run itself.
  const std::string a_log = a_->Log();
  const std::string port = bound[1].str().substr(bound[1].str().find(':') + 1);
  EXPECT_EQ(Count(a_log, "(127.0.0.2 port " + port + ")"), 2) << a_log;
  EXPECT_EQ(Count(b_log, "assignment netperf"), 0) << b_log;
  EXPECT_EQ(Count(controller_->process().Log(), "netperf peer agent="), 2) << Logs();

  // `tlbfleet hosts` shows B's netserver.
  std::string out;
  ASSERT_EQ(
      RunCommand({BinPath("tlbfleet"), "--controller", controller_->address(), "hosts"}, &out), 0)
      << out;
  EXPECT_NE(out.find("NETSERVER"), std::string::npos) << out;
  EXPECT_NE(out.find(bound[1].str()), std::string::npos) << out;
}

TEST_F(NetperfPeerTest, AWildcardListenAddressNeedsAdvertise) {
  b_ = StartAgent("b", "server", {"--netserver-listen", "0.0.0.0:0"});
  const int status = b_->Wait(30s);
  ASSERT_NE(status, -1) << "the agent did not exit\n" << b_->Log();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  EXPECT_NE(b_->Log().find("--netserver-listen: 0.0.0.0:0 listens on every address"),
            std::string::npos)
      << b_->Log();
  EXPECT_NE(b_->Log().find("--netserver-advertise"), std::string::npos) << b_->Log();
  EXPECT_EQ(controller_->ConnectedHosts(), 0);
}

}  // namespace
}  // namespace tlbfleet::testing
