// What the agent refuses, over a real stream from an in-process fake controller: crafted
// assignments (each answered FAILED naming the field, logged, nothing started), assignments
// while it is busy or rebooting (REFUSED, so the controller re-queues them), a second agent
// on its state directory, and a state directory it cannot write. Also: a reconnecting agent
// names the lease it is still running in its Hello.

#include <atomic>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>
#include <thread>

#include "agent/kernel/fake_sysroot_for_test.h"
#include "agent/runner/agent.h"
#include "agent/runner/fake_controller_for_test.h"
#include "agent/runner/test_util_for_test.h"
#include "agent/workloads/workload.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::agent {
namespace {

// A valid ebizzy assignment; cases below break one thing each.
v1::JobAssignment Valid(const std::string& lease) {
  v1::JobAssignment a;
  a.set_lease_id(lease);
  a.set_job_id(7);
  a.set_run_id("12");
  a.set_benchmark("ebizzy");
  (*a.mutable_params())["threads"] = "1";
  (*a.mutable_params())["seconds"] = "1";
  a.set_arm("base");
  a.set_iteration(1);
  a.set_timeout_seconds(60);
  return a;
}

class AgentRefusalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    workloads::LinkAllWorkloads();
    root_.WriteFile("/proc/sys/kernel/hostname", "fake-host\n");
    root_.WriteFile("/etc/machine-id", "0123456789abcdef0123456789abcdef\n");
    root_.WriteFile("/proc/sys/kernel/osrelease", "6.1.0-57-amd64\n");
    root_.WriteFile("/proc/cmdline", "root=/dev/vda\n");
    root_.WriteFile("/proc/sys/kernel/random/boot_id", "boot-1\n");
    root_.WriteFile("/proc/cpuinfo",
                    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 58\n");
    ASSERT_TRUE(server_.started());
    controller_.set_auto_welcome(true);
    state_dir_ = dir_.path() + "/state";
    // What the agent logs, to check that refusals are logged.
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    spdlog::default_logger()->sinks().push_back(sink_);
  }

  void TearDown() override {
    StopAgent();
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }

  AgentOptions Options() {
    AgentOptions options;
    options.controller = server_.address();
    options.state_dir = state_dir_;
    options.sysroot = &root_;
    options.workloads = workloads::Registry::Get().Names();
    options.peer_networks = {*Network::Parse("127.0.0.0/8")};
    options.initial_backoff_seconds = 0.05;
    options.max_backoff_seconds = 0.2;
    // Whatever would start is a harmless sleep, and counted.
    options.argv_for = [this](const v1::JobAssignment& a) {
      ++started_;
      return std::vector<std::string>{"/bin/sh", "-c", script_};
    };
    return options;
  }

  void StartAgent(AgentOptions options) {
    absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(std::move(options));
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
    runner_ = std::thread([this] { (void)agent_->Run(); });
  }

  void StopAgent() {
    if (agent_ == nullptr) return;
    agent_->Shutdown("test over");
    runner_.join();
    agent_.reset();
  }

  bool Send(const v1::JobAssignment& a) {
    v1::ControllerMessage m;
    *m.mutable_assignment() = a;
    return controller_.Send(m);
  }

  std::string Log() {
    sink_->flush();
    return log_.str();
  }

  TempDir dir_;
  FakeSysroot root_{dir_};
  FakeControllerServer server_;
  FakeController& controller_ = server_.controller();
  std::string state_dir_;
  std::unique_ptr<Agent> agent_;
  std::thread runner_;
  std::atomic<int> started_{0};
  std::string script_ = "sleep 30";
  std::ostringstream log_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

TEST_F(AgentRefusalsTest, CraftedAssignmentsAreRefusedNamingTheFieldLoggedAndNeverRun) {
  struct Case {
    std::string name;
    std::function<void(v1::JobAssignment&)> craft;
    std::string field;  // the refusal names it
  };
  const std::string huge(100 * 1024, 'x');
  const std::vector<Case> cases = {
      {"unknown workload", [](auto& a) { a.set_benchmark("rm-rf"); }, "benchmark"},
      {"shell in benchmark", [](auto& a) { a.set_benchmark("ebizzy;reboot"); }, "benchmark"},
      {"shell in run_id", [](auto& a) { a.set_run_id("12$(id)"); }, "run_id"},
      {"shell in arm", [](auto& a) { a.set_arm("a`id`"); }, "arm"},
      {"shell in param_name", [](auto& a) { a.set_param_name("threads|sh"); }, "param_name"},
      {"shell in param_value", [](auto& a) { a.set_param_value("1;id"); }, "param_value"},
      {"shell in peer_host", [](auto& a) { a.set_peer_host("h&&id"); }, "peer_host"},
      {"shell in ceiling", [](auto& a) { a.set_ceiling("33;id"); }, "ceiling"},
      {"shell in a parameter value", [](auto& a) { (*a.mutable_params())["mmap"] = "$(reboot)"; },
       "params.mmap"},
      {"shell in a parameter name", [](auto& a) { (*a.mutable_params())["x>y"] = "1"; }, "params"},
      {"newline in a value", [](auto& a) { (*a.mutable_params())["mmap"] = "never\nid"; },
       "params.mmap"},
      {"shell in a monitor", [](auto& a) { a.add_monitors("vmstat;id"); }, "monitors"},
      {"unknown monitor", [](auto& a) { a.add_monitors("keylogger"); }, "monitors"},
      {"unknown parameter", [](auto& a) { (*a.mutable_params())["command"] = "id"; }, "params"},
      {"threads out of range", [](auto& a) { (*a.mutable_params())["threads"] = "100000000"; },
       "params"},
      {"negative threads", [](auto& a) { (*a.mutable_params())["threads"] = "-1"; }, "params"},
      {"ceiling out of range", [](auto& a) { a.set_ceiling("99999999999"); }, "ceiling"},
      {"negative ceiling", [](auto& a) { a.set_ceiling("-1"); }, "ceiling"},
      {"no timeout", [](auto& a) { a.set_timeout_seconds(0); }, "timeout_seconds"},
      {"timeout of years", [](auto& a) { a.set_timeout_seconds(400'000'000); }, "timeout_seconds"},
      {"iteration 0", [](auto& a) { a.set_iteration(0); }, "iteration"},
      {"boot index huge", [](auto& a) { a.set_boot_index(4'000'000'000u); }, "boot_index"},
      {"job id negative", [](auto& a) { a.set_job_id(-5); }, "job_id"},
      {"many parameters",
       [](auto& a) {
         for (int i = 0; i < 5000; ++i) (*a.mutable_params())["p" + std::to_string(i)] = "1";
       },
       "params"},
      {"many monitors",
       [](auto& a) {
         for (int i = 0; i < 1000; ++i) a.add_monitors("vmstat");
       },
       "monitors"},
      {"huge value", [&](auto& a) { (*a.mutable_params())["mmap"] = huge; }, "assignment"},
      {"netperf to a host not allowed",
       [](auto& a) {
         a.set_benchmark("netperf");
         a.mutable_params()->clear();
         (*a.mutable_params())["server"] = "10.9.9.9";
         (*a.mutable_params())["port"] = "12865";
       },
       "params.server"},
  };
  StartAgent(Options());
  size_t cursor = 0;
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_IDLE), &cursor));
  int n = 0;
  for (const Case& c : cases) {
    v1::JobAssignment a = Valid("crafted-" + std::to_string(n++));
    c.craft(a);
    ASSERT_TRUE(Send(a)) << c.name;
    std::optional<v1::AgentMessage> done = controller_.Await(IsCompleteOf(a.lease_id()), &cursor);
    ASSERT_TRUE(done.has_value()) << c.name;
    EXPECT_EQ(done->complete().status(), v1::JOB_STATUS_FAILED) << c.name;
    EXPECT_NE(done->complete().error().find(c.field + ":"), std::string::npos)
        << c.name << ": " << done->complete().error();
    EXPECT_NE(Log().find("refusing: assignment refused: " + c.field), std::string::npos) << c.name;
  }
  EXPECT_EQ(started_.load(), 0);
  // The untouched assignment is accepted and runs.
  script_ = "true";
  ASSERT_TRUE(Send(Valid("fine")));
  ASSERT_TRUE(controller_.Await(IsCompleteOf("fine"), &cursor));
  EXPECT_EQ(started_.load(), 1);
}

TEST_F(AgentRefusalsTest, ABusyAgentRefusesASecondAssignmentSoItIsRequeued) {
  StartAgent(Options());
  size_t cursor = 0;
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_IDLE), &cursor));
  ASSERT_TRUE(Send(Valid("first")));
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_RUNNING), &cursor));
  ASSERT_TRUE(Send(Valid("second")));
  std::optional<v1::AgentMessage> refused = controller_.Await(IsCompleteOf("second"), &cursor);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->complete().status(), v1::JOB_STATUS_REFUSED);
  EXPECT_NE(refused->complete().error().find("busy with lease first"), std::string::npos);
  EXPECT_EQ(started_.load(), 1);
}

TEST_F(AgentRefusalsTest, ARebootingAgentSaysSoAndRefusesAssignments) {
  AgentOptions options = Options();
  // "Succeeds" without rebooting anything: the agent then waits for the host to go down.
  options.reboot_command = "true";
  options.reboot_grace_seconds = 60;
  StartAgent(std::move(options));
  size_t cursor = 0;
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_IDLE), &cursor));
  v1::ControllerMessage reboot;
  reboot.mutable_reboot()->set_reason("test");
  reboot.mutable_reboot()->set_boot_id("boot-1");
  ASSERT_TRUE(controller_.Send(reboot));
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_REBOOTING), &cursor));
  ASSERT_TRUE(Send(Valid("during-reboot")));
  std::optional<v1::AgentMessage> refused =
      controller_.Await(IsCompleteOf("during-reboot"), &cursor);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->complete().status(), v1::JOB_STATUS_REFUSED);
  EXPECT_NE(refused->complete().error().find("rebooting"), std::string::npos);
  EXPECT_EQ(started_.load(), 0);
}

TEST_F(AgentRefusalsTest, AReconnectingAgentNamesTheLeaseItStillRuns) {
  StartAgent(Options());
  size_t cursor = 0;
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_IDLE), &cursor));
  ASSERT_TRUE(Send(Valid("long")));
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_RUNNING), &cursor));
  controller_.DropStream();
  std::optional<v1::AgentMessage> hello = controller_.Await(IsHello, &cursor);
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->hello().running_lease_id(), "long");
  EXPECT_EQ(hello->hello().spooled_size(), 0);
}

TEST_F(AgentRefusalsTest, OneAgentPerStateDirectory) {
  StartAgent(Options());
  absl::StatusOr<std::unique_ptr<Agent>> second = Agent::Create(Options());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("--state-dir " + state_dir_), std::string::npos)
      << second.status();
  EXPECT_NE(second.status().message().find("in use by another tlbfleet-agent (pid "),
            std::string::npos)
      << second.status();
  // Once the first is gone (the kernel drops its lock), the directory is free again.
  StopAgent();
  EXPECT_TRUE(Agent::Create(Options()).ok());
}

TEST_F(AgentRefusalsTest, AStateDirectoryThatCannotBeWrittenIsRefusedNamingTheFlag) {
  AgentOptions options = Options();
  options.state_dir = "/proc/tlbfleet-agent-state";  // procfs: nothing can be created, even by root
  absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(std::move(options));
  ASSERT_FALSE(agent.ok());
  EXPECT_EQ(agent.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(agent.status().message().find("--state-dir /proc/tlbfleet-agent-state"),
            std::string::npos)
      << agent.status();
}

}  // namespace
}  // namespace tlbfleet::agent
