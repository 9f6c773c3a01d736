// Kernels from source through the whole agent and a fake controller: a builder's Hello and a
// build task over the stream, and a boot of a built kernel in Hello and in samples.
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "agent/builder/test_repo_for_test.h"
#include "agent/kernel/fake_sysroot_for_test.h"
#include "agent/runner/agent.h"
#include "agent/runner/boot_entries.h"
#include "agent/runner/fake_controller_for_test.h"
#include "common/artifacts/sha256.h"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;

constexpr char kKernelMetric[] =
    R"({"metric":"records_per_sec","value":100,"unit":"records/s","better":"higher","iteration":1})";

class AgentKernelsTest : public ::testing::Test {
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
    state_dir_ = repo_.temp().File("state");
  }
  void TearDown() override {
    if (agent_ == nullptr) return;
    agent_->Shutdown("test over");
    runner_.join();
    agent_.reset();
  }

  AgentOptions Options() {
    AgentOptions options;
    options.controller = server_.address();
    options.state_dir = state_dir_;
    options.sysroot = &root_;
    options.workloads = {"sh"};
    options.check_assignments = false;
    options.initial_backoff_seconds = 0.05;
    options.max_backoff_seconds = 0.2;
    options.argv_for = [](const v1::JobAssignment& a) {
      return std::vector<std::string>{"/bin/sh", "-c", a.params().at("script")};
    };
    return options;
  }
  void Start(AgentOptions options) {
    absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(std::move(options));
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
    runner_ = std::thread([this] { (void)agent_->Run(); });
  }
  v1::Hello Handshake(size_t* cursor, v1::ControllerMessage welcome = WelcomeMessage()) {
    std::optional<v1::AgentMessage> hello = controller_.Await(IsHello, cursor);
    EXPECT_TRUE(hello.has_value()) << "no Hello";
    if (!hello.has_value()) return {};
    EXPECT_TRUE(controller_.Send(welcome));
    return hello->hello();
  }

  builder::TestRepo repo_;
  FakeSysroot root_{repo_.temp()};
  FakeControllerServer server_;
  FakeController& controller_ = server_.controller();
  std::string state_dir_;
  std::unique_ptr<Agent> agent_;
  std::thread runner_;
};

TEST_F(AgentKernelsTest, ABuilderSaysSoAndBuildsATaskFromTheStream) {
  const std::string base = repo_.Commit({{"Makefile", builder::kFakeKernelMakefile},
                                         {"VERSION", "6.1.0-fake\n"},
                                         {"configs/defconfig", "CONFIG_FOO=y\n"},
                                         {"kernel/a.c", "int a;\n"}},
                                        "fake kernel 6.1");
  AgentOptions options = Options();
  options.kernel_sources = builder::KernelSources::Parse(
                               absl::StrCat("sources:\n  linux:\n    repository: ", repo_.path(),
                                            "\n    work_dir: ", repo_.temp().File("build"),
                                            "\nconfigs:\n  lab: {base: defconfig}\n"),
                               "test")
                               .value();
  options.builder.jobs = 2;
  options.kernel_install_command = "true";
  std::string uploaded;
  options.upload_artifact = [&uploaded](
                                const std::string& dir,
                                const std::function<bool()>&) -> absl::StatusOr<std::string> {
    uploaded = ReadFile(dir + "/manifest").value_or("");
    return artifacts::Sha256Hex(uploaded);
  };
  Start(std::move(options));
  size_t cursor = 0;
  v1::Hello hello = Handshake(&cursor);
  EXPECT_THAT(hello.capabilities(), Contains("builder"));
  ASSERT_EQ(hello.host().kernel_sources_size(), 1);
  EXPECT_EQ(hello.host().kernel_sources(0).name(), "linux");
  EXPECT_EQ(hello.host().kernel_sources(0).arch(), "x86_64");
  EXPECT_THAT(hello.host().kernel_sources(0).configs(), ElementsAre("lab"));
  EXPECT_TRUE(hello.host().can_install_kernels());
  EXPECT_EQ(hello.host().arch(), MachineArch());
  EXPECT_EQ(hello.host().DebugString().find(repo_.path()), std::string::npos)
      << "a path of the agent's own configuration went to the controller";

  v1::ControllerMessage task;
  task.mutable_build()->set_task_id(5);
  task.mutable_build()->set_source("linux");
  task.mutable_build()->set_rev("main");
  task.mutable_build()->set_config("lab");
  ASSERT_TRUE(controller_.Send(task));
  std::optional<v1::AgentMessage> first =
      controller_.Await([](const v1::AgentMessage& m) { return m.has_build_progress(); }, &cursor);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->build_progress().task_id(), 5);
  EXPECT_EQ(first->build_progress().commit(), base);
  std::optional<v1::AgentMessage> complete =
      controller_.Await([](const v1::AgentMessage& m) { return m.has_build_complete(); }, &cursor,
                        std::chrono::seconds(60));
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->build_complete().status(), v1::BUILD_STATUS_SUCCEEDED)
      << complete->build_complete().reason();
  EXPECT_EQ(complete->build_complete().artifact_id(), artifacts::Sha256Hex(uploaded));
  EXPECT_EQ(complete->build_complete().kernel_release(), "6.1.0-fake");
  // Built under the default staging dir, and gone once uploaded.
  EXPECT_TRUE(std::filesystem::exists(state_dir_ + "/kernels/builds"));
  EXPECT_FALSE(std::filesystem::exists(state_dir_ + "/kernels/builds/task-5"));
}

TEST_F(AgentKernelsTest, AnAgentWithoutSourcesIsNoBuilder) {
  Start(Options());
  size_t cursor = 0;
  v1::Hello hello = Handshake(&cursor);
  EXPECT_THAT(hello.capabilities(), ::testing::Not(Contains("builder")));
  EXPECT_EQ(hello.host().kernel_sources_size(), 0);
  EXPECT_FALSE(hello.host().can_install_kernels());
}

TEST_F(AgentKernelsTest, ABootOfABuiltKernelIsInHelloAndInEverySample) {
  // What the agent that installed the build left before the reboot.
  ASSERT_TRUE(MakeDirs(state_dir_).ok());
  const std::string build_id = artifacts::Sha256Hex("image");
  const std::string commit(40, 'c');
  ASSERT_TRUE(SaveKernelEntry(state_dir_, {"kernel-b7", build_id, "6.1.192-lab", commit,
                                           artifacts::Sha256Hex("manifest")})
                  .ok());
  ASSERT_TRUE(WriteFileAtomic(BootEntryJournalFile(state_dir_),
                              FormatBootEntryJournal({"kernel-b7", "boot-0", ""}))
                  .ok());
  // The boot it asked for.
  root_.WriteFile("/proc/sys/kernel/osrelease", "6.1.192-lab\n");
  root_.WriteFile("/proc/cmdline", "root=/dev/vda " + BuildTag(build_id) + "\n");
  Start(Options());

  size_t cursor = 0;
  v1::ControllerMessage welcome = WelcomeMessage();
  welcome.mutable_welcome()->set_accepts_shared_origin(true);
  v1::Hello hello = Handshake(&cursor, welcome);
  EXPECT_EQ(hello.host().boot_entry(), "kernel-b7");
  EXPECT_EQ(hello.host().boot_entry_error(), "");
  EXPECT_EQ(hello.host().build_id(), build_id);
  EXPECT_EQ(hello.host().commit(), commit);

  ASSERT_TRUE(controller_.Await(IsHeartbeat(v1::AGENT_STATE_IDLE), &cursor));
  v1::ControllerMessage assign;
  v1::JobAssignment* a = assign.mutable_assignment();
  a->set_lease_id("lease-k");
  a->set_job_id(1);
  a->set_run_id("run-1");
  a->set_benchmark("sh");
  (*a->mutable_params())["script"] = std::string("echo '") + kKernelMetric + "'";
  a->set_arm("new");
  a->set_iteration(1);
  a->set_boot_entry("kernel-b7");
  a->set_timeout_seconds(60);
  ASSERT_TRUE(controller_.Send(assign));
  std::optional<v1::AgentMessage> batch = controller_.Await(IsBatchOf("lease-k"), &cursor);
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->samples().samples_size(), 1);
  // Shared once per batch, as the other provenance fields are.
  EXPECT_EQ(batch->samples().shared_origin().build_id(), build_id);
  EXPECT_EQ(batch->samples().shared_origin().commit(), commit);
  EXPECT_EQ(batch->samples().shared_origin().boot_entry(), "kernel-b7");
  EXPECT_EQ(batch->samples().samples(0).build_id(), "");
  std::optional<v1::AgentMessage> complete = controller_.Await(IsCompleteOf("lease-k"), &cursor);
  ASSERT_TRUE(complete.has_value());
  EXPECT_EQ(complete->complete().status(), v1::JOB_STATUS_SUCCEEDED)
      << complete->complete().error();
}

}  // namespace
}  // namespace tlbfleet::agent
