// The agent against an in-process fake controller: a real gRPC stream on 127.0.0.1:0,
// workloads replaced by /bin/sh scripts, the host by a fake sysroot.
#include "agent/runner/agent.h"

#include <fcntl.h>

#include <cerrno>
#include <filesystem>
#include <optional>
#include <set>
#include <thread>

#include "absl/strings/numbers.h"
#include "agent/kernel/ceiling.h"
#include "agent/kernel/ceiling_control.h"
#include "agent/kernel/ceiling_health.h"
#include "agent/kernel/fake_sysroot_for_test.h"
#include "agent/runner/fake_controller_for_test.h"
#include "agent/runner/paths.h"
#include "agent/runner/spool.h"
#include "agent/runner/test_util_for_test.h"
#include "catalogue/catalogue.h"
#include "common/files.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

using namespace std::chrono_literals;

constexpr char kMetric[] =
    R"({"metric":"records_per_sec","value":100,"unit":"records/s","better":"higher","iteration":1})";

v1::ControllerMessage Assign(const std::string& lease, const std::string& script,
                             const std::string& ceiling = "") {
  v1::ControllerMessage m;
  v1::JobAssignment* a = m.mutable_assignment();
  a->set_lease_id(lease);
  a->set_job_id(11);
  a->set_run_id("run-1");
  a->set_benchmark("sh");
  (*a->mutable_params())["script"] = script;
  a->set_arm("base");
  a->set_iteration(1);
  a->set_ceiling(ceiling);
  a->set_timeout_seconds(60);
  return m;
}

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_.WriteFile("/proc/sys/kernel/hostname", "fake-host\n");
    root_.WriteFile("/etc/machine-id", "0123456789abcdef0123456789abcdef\n");
    root_.WriteFile("/proc/sys/kernel/osrelease", "6.1.0-57-amd64\n");
    root_.WriteFile("/proc/cmdline", "root=/dev/vda\n");
    root_.WriteFile("/proc/sys/kernel/random/boot_id", "boot-1\n");
    root_.WriteFile("/proc/cpuinfo",
                    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 58\n"
                    "model name\t: Intel(R) Core(TM) i7-3770 CPU @ 3.40GHz\nstepping\t: 9\n");
    root_.WriteFile("/proc/mounts", "debugfs /sys/kernel/debug debugfs rw 0 0\n");
    ASSERT_TRUE(server_.started());
    state_dir_ = dir_.path() + "/state";
  }

  void TearDown() override { StopAgent(); }

  void StartAgent() {
    AgentOptions options;
    options.controller = server_.address();
    options.state_dir = state_dir_;
    options.sysroot = &root_;
    options.labels = {{"rack", "b2"}};
    options.workloads = {"sh"};
    options.check_assignments = false;  // "sh" runs shell scripts, which the checks refuse
    options.initial_backoff_seconds = 0.05;
    options.max_backoff_seconds = 0.2;
    // The "workload" is the assignment's script parameter, run by /bin/sh.
    options.argv_for = [](const v1::JobAssignment& a) {
      return std::vector<std::string>{"/bin/sh", "-c", a.params().at("script")};
    };
    absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(std::move(options));
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
    runner_ = std::thread([this] { run_status_ = agent_->Run(); });
  }

  void StopAgent() {
    if (agent_ == nullptr) return;
    agent_->Shutdown("test over");
    runner_.join();
    EXPECT_TRUE(run_status_.ok()) << run_status_;
    agent_.reset();
  }

  // Waits for the agent's Hello and welcomes it.
  v1::Hello Handshake(size_t* cursor, v1::ControllerMessage welcome = WelcomeMessage()) {
    std::optional<v1::AgentMessage> hello = controller_.Await(IsHello, cursor);
    EXPECT_TRUE(hello.has_value()) << "no Hello";
    if (!hello.has_value()) return {};
    EXPECT_TRUE(controller_.Send(welcome));
    return hello->hello();
  }

  bool SpoolHas(const std::string& lease) {
    return std::filesystem::exists(paths::SpoolFile(state_dir_, lease));
  }

  // Polls the spool directory (no event to wait on) until `lease` is gone.
  bool SpoolDropsWithin(const std::string& lease, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (SpoolHas(lease)) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

  TempDir dir_;
  FakeSysroot root_{dir_};
  FakeControllerServer server_;
  FakeController& controller_ = server_.controller();
  std::string state_dir_;
  std::unique_ptr<Agent> agent_;
  std::thread runner_;
  absl::Status run_status_;
};

TEST_F(AgentTest, AControllerThatAcceptsASharedOriginGetsItOncePerBatch) {
  StartAgent();
  size_t cursor = 0;
  v1::ControllerMessage welcome = WelcomeMessage();
  welcome.mutable_welcome()->set_accepts_shared_origin(true);
  v1::Hello hello = Handshake(&cursor, welcome);
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_IDLE), &cursor));
  ASSERT_TRUE(controller_.Send(
      Assign("lease-a", std::string("echo '") + kMetric + "'; echo '" + kMetric + "'")));
  std::optional<v1::AgentMessage> batch = controller_.Await(IsBatchOf("lease-a"), &cursor);
  ASSERT_TRUE(batch.has_value());
  const v1::SampleBatch& b = batch->samples();
  ASSERT_EQ(b.samples_size(), 2);
  EXPECT_EQ(b.shared_origin().host(), "fake-host");
  EXPECT_EQ(b.shared_origin().boot_id(), hello.host().boot_id());
  EXPECT_EQ(b.shared_origin().microarch(), "IvyBridge");
  for (const v1::Sample& s : b.samples()) {
    EXPECT_EQ(s.host(), "");
    EXPECT_EQ(s.boot_id(), "");
    EXPECT_EQ(s.microarch(), "");
    EXPECT_EQ(s.agent_id(), agent_->agent_id()) << "not a provenance field: kept";
  }
  // What the agent spooled keeps every field (a resend may go to another controller).
  std::optional<v1::AgentMessage> done = controller_.Await(IsCompleteOf("lease-a"), &cursor);
  ASSERT_TRUE(done.has_value());
  absl::StatusOr<Spool> spool = Spool::Open(state_dir_);
  ASSERT_TRUE(spool.ok()) << spool.status();
  absl::StatusOr<v1::SpooledJob> spooled = spool->Read("lease-a");
  ASSERT_TRUE(spooled.ok()) << spooled.status();
  ASSERT_EQ(spooled->samples_size(), 2);
  EXPECT_EQ(spooled->samples(0).host(), "fake-host");
  StopAgent();
}

TEST_F(AgentTest, HelloWelcomeJobAndAck) {
  StartAgent();
  size_t cursor = 0;
  v1::Hello hello = Handshake(&cursor);
  EXPECT_EQ(hello.protocol_version(), v1::PROTOCOL_VERSION_1);
  EXPECT_EQ(hello.agent_id(), agent_->agent_id());
  EXPECT_EQ(hello.host().hostname(), "fake-host");
  EXPECT_EQ(hello.host().cpu().microarch(), "IvyBridge");
  EXPECT_EQ(hello.host().labels().at("rack"), "b2");
  EXPECT_FALSE(hello.host().ceiling().readable());
  // Its one workload, then every monitor it can run (the catalogue's, none left out).
  ASSERT_EQ(hello.capabilities_size(), 1 + static_cast<int>(catalogue::Monitors().size()));
  EXPECT_EQ(hello.capabilities(0), "workload:sh");
  std::set<std::string> advertised(hello.capabilities().begin() + 1, hello.capabilities().end());
  for (const catalogue::MonitorInfo& monitor : catalogue::Monitors()) {
    EXPECT_TRUE(advertised.contains("monitor:" + monitor.name)) << monitor.name;
  }
  EXPECT_EQ(hello.spooled_size(), 0);

  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_IDLE), &cursor));
  ASSERT_TRUE(controller_.Send(
      Assign("lease-a", std::string("echo '") + kMetric + "'; echo '" + kMetric + "'")));
  std::optional<v1::AgentMessage> batch = controller_.Await(IsBatchOf("lease-a"), &cursor);
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->samples().samples_size(), 2);
  EXPECT_EQ(batch->samples().job_id(), 11);
  EXPECT_EQ(batch->samples().samples(1).seq(), 1u);
  // This controller's Welcome does not accept a shared origin: every sample carries its own.
  EXPECT_EQ(batch->samples().samples(1).host(), "fake-host");
  EXPECT_FALSE(batch->samples().samples(1).boot_id().empty());
  EXPECT_FALSE(batch->samples().has_shared_origin());
  EXPECT_EQ(batch->samples().samples(1).agent_id(), agent_->agent_id());
  std::optional<v1::AgentMessage> done = controller_.Await(IsCompleteOf("lease-a"), &cursor);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->complete().status(), v1::JOB_STATUS_SUCCEEDED) << done->complete().error();
  EXPECT_EQ(done->complete().sample_count(), 2u);
  EXPECT_TRUE(SpoolHas("lease-a")) << "the result must stay spooled until acked";
  AgentStatus status = agent_->status();  // what --metrics-listen shows
  EXPECT_TRUE(status.connected);
  EXPECT_EQ(status.last_exit_status, 0);
  EXPECT_EQ(status.spool_records, 1u);
  EXPECT_GT(status.spool_bytes, 0u);
  EXPECT_EQ(status.reconnects, 0u);

  ASSERT_TRUE(controller_.Send(CompletionAckMessage("lease-a")));
  EXPECT_TRUE(SpoolDropsWithin("lease-a", 10s));
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_IDLE), &cursor));
  EXPECT_EQ(agent_->status().spool_records, 0u);
}

TEST_F(AgentTest, StreamBreakMidJobResendsAfterReconnect) {
  StartAgent();
  size_t cursor = 0;
  Handshake(&cursor);
  std::string gate = dir_.path() + "/gate";
  // The job runs until the test creates the gate file.
  ASSERT_TRUE(controller_.Send(Assign(
      "lease-b", "while [ ! -e " + gate + " ]; do sleep 0.05; done; echo '" + kMetric + "'")));
  std::optional<v1::AgentMessage> running =
      controller_.Await(IsHeartbeat(v1::AGENT_STATE_RUNNING), &cursor);
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->heartbeat().lease_id(), "lease-b");

  controller_.DropStream();
  // The agent dials again and says hello while its job still runs.
  v1::Hello again = Handshake(&cursor);
  EXPECT_EQ(again.agent_id(), agent_->agent_id());
  EXPECT_GE(controller_.connections(), 2);
  EXPECT_TRUE(agent_->status().job_running);
  EXPECT_GE(agent_->status().reconnects, 1u);
  ASSERT_TRUE(WriteFileAtomic(gate, "go").ok());

  std::optional<v1::AgentMessage> batch = controller_.Await(IsBatchOf("lease-b"), &cursor);
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->samples().samples_size(), 1);
  std::optional<v1::AgentMessage> done = controller_.Await(IsCompleteOf("lease-b"), &cursor);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->complete().status(), v1::JOB_STATUS_SUCCEEDED) << done->complete().error();
  ASSERT_TRUE(controller_.Send(CompletionAckMessage("lease-b")));
  EXPECT_TRUE(SpoolDropsWithin("lease-b", 10s));
}

TEST_F(AgentTest, UnackedResultIsResentAfterReconnect) {
  StartAgent();
  size_t cursor = 0;
  Handshake(&cursor);
  ASSERT_TRUE(controller_.Send(Assign("lease-c", std::string("echo '") + kMetric + "'")));
  ASSERT_TRUE(controller_.Await(IsCompleteOf("lease-c"), &cursor));
  controller_.DropStream();  // before any ack

  v1::Hello again = Handshake(&cursor);
  ASSERT_EQ(again.spooled_size(), 1);
  EXPECT_EQ(again.spooled(0).lease_id(), "lease-c");
  EXPECT_EQ(again.spooled(0).samples(), 1u);
  EXPECT_TRUE(again.spooled(0).complete());
  ASSERT_TRUE(controller_.Await(IsBatchOf("lease-c"), &cursor));
  ASSERT_TRUE(controller_.Await(IsCompleteOf("lease-c"), &cursor));
  ASSERT_TRUE(controller_.Send(CompletionAckMessage("lease-c")));
  EXPECT_TRUE(SpoolDropsWithin("lease-c", 10s));
}

TEST_F(AgentTest, SpoolSurvivesARestartAndIsResent) {
  absl::StatusOr<Spool> spool = Spool::Open(state_dir_);
  ASSERT_TRUE(spool.ok());
  v1::SpooledJob old;
  old.mutable_assignment()->set_lease_id("lease-old");
  old.mutable_assignment()->set_job_id(5);
  old.add_samples()->set_metric("m");
  old.mutable_complete()->set_lease_id("lease-old");
  old.mutable_complete()->set_status(v1::JOB_STATUS_SUCCEEDED);
  old.mutable_complete()->set_sample_count(1);
  ASSERT_TRUE(spool->Write(old).ok());

  StartAgent();
  size_t cursor = 0;
  v1::Hello hello = Handshake(&cursor);
  ASSERT_EQ(hello.spooled_size(), 1);
  EXPECT_EQ(hello.spooled(0).job_id(), 5);
  ASSERT_TRUE(controller_.Await(IsBatchOf("lease-old"), &cursor));
  ASSERT_TRUE(controller_.Await(IsCompleteOf("lease-old"), &cursor));
  // The controller dispatches on the first heartbeat: the replay must come before it.
  size_t complete_at = cursor - 1;
  size_t heartbeat_cursor = 0;
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_IDLE), &heartbeat_cursor));
  EXPECT_LT(complete_at, heartbeat_cursor - 1);
  v1::ControllerMessage rejected;
  rejected.mutable_completion_ack()->set_lease_id("lease-old");
  rejected.mutable_completion_ack()->set_rejected(true);
  rejected.mutable_completion_ack()->set_reason("lease expired");
  ASSERT_TRUE(controller_.Send(rejected));
  EXPECT_TRUE(SpoolDropsWithin("lease-old", 10s));
}

// The agent died (kill -9) with the ceiling changed; its next start in the same boot puts
// the journaled original back before doing anything else.
TEST_F(AgentTest, StartRestoresTheCeilingAfterACrashInTheSameBoot) {
  root_.WriteFile(kCeilingPath, "512\n");
  const std::string journal = paths::CeilingJournalFile(state_dir_);
  ASSERT_TRUE(MakeDirs(state_dir_, 0700).ok());
  ASSERT_TRUE(WriteCeilingJournal(journal, {"boot-1", 33}).ok());
  StartAgent();
  EXPECT_EQ(*ReadCeiling(root_), 33);
  EXPECT_EQ(::access(journal.c_str(), F_OK), -1);
}

TEST_F(AgentTest, StartDiscardsACeilingJournalOfAnEarlierBoot) {
  root_.WriteFile(kCeilingPath, "512\n");  // set by someone after the reboot: left alone
  const std::string journal = paths::CeilingJournalFile(state_dir_);
  ASSERT_TRUE(MakeDirs(state_dir_, 0700).ok());
  ASSERT_TRUE(WriteCeilingJournal(journal, {"boot-0", 33}).ok());
  StartAgent();
  EXPECT_EQ(*ReadCeiling(root_), 512);
  EXPECT_EQ(::access(journal.c_str(), F_OK), -1);
}

// A corrupt journal of this boot: the boot's value is unknown, so the agent's first Hello
// already says the host is degraded and cannot take ceiling jobs.
TEST_F(AgentTest, CorruptJournalAtStartDegradesTheHost) {
  root_.WriteFile(kCeilingPath, "512\n");
  ASSERT_TRUE(MakeDirs(state_dir_, 0700).ok());
  ASSERT_TRUE(WriteFileAtomic(paths::CeilingJournalFile(state_dir_), "boot_id boot-1\n#").ok());
  StartAgent();
  size_t cursor = 0;
  v1::Hello hello = Handshake(&cursor);
  EXPECT_TRUE(hello.host().ceiling_degraded());
  EXPECT_NE(hello.host().ceiling_degraded_reason().find("unknown"), std::string::npos)
      << hello.host().ceiling_degraded_reason();
  EXPECT_FALSE(hello.host().ceiling().writable());
  EXPECT_EQ(hello.host().ceiling().reason().rfind("degraded: ", 0), 0u)
      << hello.host().ceiling().reason();
  EXPECT_EQ(agent_->ceiling_degraded_reason(), hello.host().ceiling_degraded_reason());
  EXPECT_EQ(*ReadCeiling(root_), 512) << "nothing written on a guess";
}

// A job whose restore fails: it fails, and the agent reconnects so that the controller sees
// the degraded host before the completion; the operator's ceiling-known-good clears it and
// the agent reconnects again with the good news.
TEST_F(AgentTest, FailedRestoreDegradesTheHostUntilTheOperatorNamesTheValue) {
  root_.WriteFile(kCeilingPath, "33\n");
  root_.StoreOnWrite(kCeilingPath, "33\n", "34\n");
  StartAgent();
  size_t cursor = 0;
  v1::Hello hello = Handshake(&cursor);
  ASSERT_FALSE(hello.host().ceiling_degraded());
  ASSERT_TRUE(hello.host().ceiling().writable()) << hello.host().ceiling().reason();
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_IDLE), &cursor));
  ASSERT_TRUE(controller_.Send(Assign("lease-r", std::string("echo '") + kMetric + "'", "512")));

  v1::Hello degraded = Handshake(&cursor);
  const size_t hello_at = cursor - 1;
  size_t first_complete = 0;
  ASSERT_TRUE(controller_.Await(IsCompleteOf("lease-r"), &first_complete));
  EXPECT_GT(first_complete - 1, hello_at) << "the completion came before the degraded Hello";
  EXPECT_TRUE(degraded.host().ceiling_degraded());
  EXPECT_NE(degraded.host().ceiling_degraded_reason().find("cannot restore the flush ceiling"),
            std::string::npos)
      << degraded.host().ceiling_degraded_reason();
  EXPECT_FALSE(degraded.host().ceiling().writable());
  std::optional<v1::AgentMessage> done = controller_.Await(IsCompleteOf("lease-r"), &cursor);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->complete().status(), v1::JOB_STATUS_FAILED);
  ASSERT_TRUE(controller_.Send(CompletionAckMessage("lease-r")));

  root_.StoreOnWrite(kCeilingPath, "33\n", "");
  ASSERT_TRUE(DeclareCeilingKnownGood(root_, paths::CeilingJournalFile(state_dir_),
                                      paths::CeilingDegradedFile(state_dir_), 33)
                  .ok());
  v1::Hello healed = Handshake(&cursor);
  EXPECT_FALSE(healed.host().ceiling_degraded());
  EXPECT_TRUE(healed.host().ceiling().writable());
  EXPECT_EQ(healed.host().ceiling().value(), 33);
}

TEST_F(AgentTest, CancelKillsTheJob) {
  StartAgent();
  size_t cursor = 0;
  Handshake(&cursor);
  ASSERT_TRUE(controller_.Send(Assign("lease-d", "sleep 1000")));
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_RUNNING), &cursor));
  v1::ControllerMessage cancel;
  cancel.mutable_cancel()->set_lease_id("lease-d");
  cancel.mutable_cancel()->set_reason("run deleted");
  ASSERT_TRUE(controller_.Send(cancel));
  std::optional<v1::AgentMessage> done = controller_.Await(IsCompleteOf("lease-d"), &cursor);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->complete().status(), v1::JOB_STATUS_CANCELLED);
  EXPECT_EQ(done->complete().error(),
            "workload sh cancelled: cancelled by the controller: run deleted");
}

TEST_F(AgentTest, CeilingUnderLockdownFailsFast) {
  root_.WriteFile(kCeilingPath, "33\n");
  root_.WriteFile(kLockdownPath, "none [integrity] confidentiality\n");
  root_.FailOpen(kCeilingPath, O_RDONLY, EPERM);
  root_.FailOpen(kCeilingPath, O_WRONLY, EPERM);
  StartAgent();
  size_t cursor = 0;
  v1::Hello hello = Handshake(&cursor);
  EXPECT_FALSE(hello.host().ceiling().writable());
  EXPECT_EQ(hello.host().ceiling().reason(), "kernel lockdown (integrity)");
  ASSERT_TRUE(controller_.Send(Assign("lease-e", "echo never", "512")));
  std::optional<v1::AgentMessage> done = controller_.Await(IsCompleteOf("lease-e"), &cursor);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_EQ(done->complete().error(),
            "ceiling 512 requested but the flush ceiling is not writable on this host: "
            "kernel lockdown (integrity)");
}

TEST_F(AgentTest, UnknownWorkloadIsRefused) {
  StartAgent();
  size_t cursor = 0;
  Handshake(&cursor);
  v1::ControllerMessage m = Assign("lease-f", "echo x");
  m.mutable_assignment()->set_benchmark("rm-rf");
  ASSERT_TRUE(controller_.Send(m));
  std::optional<v1::AgentMessage> done = controller_.Await(IsCompleteOf("lease-f"), &cursor);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_EQ(done->complete().error(), "workload 'rm-rf' is not in this agent's catalogue (sh)");
}

TEST_F(AgentTest, ShutdownKillsTheWorkloadAndReportsNothing) {
  StartAgent();
  size_t cursor = 0;
  Handshake(&cursor);
  std::string pid_file = dir_.path() + "/pid";
  ASSERT_TRUE(
      controller_.Send(Assign("lease-g", "sleep 1000 & echo $! > " + pid_file + ".tmp; mv " +
                                             pid_file + ".tmp " + pid_file + "; wait")));
  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_RUNNING), &cursor));
  pid_t grandchild = 0;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (grandchild == 0 && std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<std::string> text = ReadFile(pid_file);
    if (!text.ok() || !absl::SimpleAtoi(Trim(*text), &grandchild))
      std::this_thread::sleep_for(10ms);
  }
  ASSERT_NE(grandchild, 0);

  StopAgent();
  EXPECT_TRUE(ProcessGoneWithin(grandchild, 5s));
  // Not a result: the controller re-queues the job when its lease expires.
  EXPECT_FALSE(SpoolHas("lease-g"));
  size_t late = cursor;
  EXPECT_FALSE(controller_.Await(IsCompleteOf("lease-g"), &late, 100ms));
}

TEST_F(AgentTest, KeepsRetryingWhileTheControllerIsDown) {
  server_.Shutdown();
  StartAgent();
  // Several attempts fail; the agent stays in `connecting` and stops promptly on request.
  std::this_thread::sleep_for(500ms);  // let a few backoff rounds pass; nothing to wait on
  EXPECT_EQ(agent_->state(), Agent::State::kConnecting);
  auto start = std::chrono::steady_clock::now();
  StopAgent();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

}  // namespace
}  // namespace tlbfleet::agent
