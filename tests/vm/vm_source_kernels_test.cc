// Kernels built from source in the microVM lab (CTest label "vm"; docs/kernels.md): two git
// revisions of the lab's planted kernel history as the two arms of one run, everything real.
//
//   1. `lab source` plants the repository (kept in /var/cache/tlbfleet-lab between runs, made
//      from Debian's linux-source-6.1 when missing), `lab builder-config` writes the builder's
//      kernel sources;
//   2. a controller on 127.0.0.1:0 with its artifact store beside its database; a builder
//      agent on the host (`--kernel-sources`: the lab's repository, its build trees kept with
//      it); one guest with `lab up --artifacts` (its agent installs with
//      /sbin/tlbfleet-install-kernel, which asks the guest's supervisor for the artifact);
//   3. a run with arms `kernel: {source: linux, rev: lab-base}` and `rev: lab-tip`: the
//      builder resolves and builds both (from scratch the first time: ~10-20 min on 2 cores;
//      a neighbouring commit in under a minute), uploads the artifacts, the guest fetches each,
//      boots it and measures;
//   4. every sample carries its arm's commit (as git resolves the revision) and build id, runs
//      on the build's kernel release and boot entry, and the builds' logs are kept.
//
// The guest's console, the supervisor's log and the agents' logs are printed on failure.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

std::string LabScript() { return std::string(TLBFLEET_SOURCE_DIR) + "/deploy/vm-lab/lab"; }
std::string LabDir() { return TLBFLEET_VM_SOURCE_DIR; }
constexpr char kRepository[] = "/var/cache/tlbfleet-lab/linux";

int Lab(std::vector<std::string> args, std::string* output) {
  std::vector<std::string> argv = {"/bin/bash", LabScript()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--out", LabDir(), "--cache", TLBFLEET_VM_LAB_CACHE, "--agent",
                           BinPath("tlbfleet-agent")});
  return RunCommand(argv, output, /*merge_stderr=*/true);
}

struct LabGuard {
  ~LabGuard() {
    std::string out;
    Lab({"down"}, &out);
  }
};

std::string Tail(const std::string& s, size_t n = 4000) {
  return s.size() > n ? s.substr(s.size() - n) : s;
}

std::string RevParse(const std::string& rev) {
  std::string out;
  RunCommand({"/usr/bin/git", "-C", kRepository, "rev-parse", "--verify", rev + "^{commit}"}, &out);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

TEST(VmSourceKernels, TwoRevisionsAsArmsEachSampleCarryingItsCommitAndBuildId) {
  TempDir dir;
  std::string out;
  // 1. The planted history and the builder's sources.
  ASSERT_EQ(Lab({"source"}, &out), 0) << out;
  const std::string base = RevParse("lab-base");
  const std::string tip = RevParse("lab-tip");
  ASSERT_EQ(base.size(), 40u) << base;
  ASSERT_EQ(tip.size(), 40u) << tip;
  const std::string sources = dir.path() + "/kernel-sources.yaml";
  ASSERT_EQ(Lab({"builder-config", "--out-file", sources}, &out), 0) << out;

  // 2. Controller, builder, guest.
  ControllerProcess controller(dir.path());
  Process builder({BinPath("tlbfleet-agent"), "--controller", controller.address(), "--state-dir",
                   dir.path() + "/builder", "--kernel-sources", sources, "--label", "role=builder"},
                  dir.path() + "/builder.log");
  const std::string run = LabDir() + "/run";
  auto diagnostics = [&] {
    return "\n--- controller log ---\n" + Tail(controller.process().Log()) +
           "\n--- builder log ---\n" + Tail(builder.Log()) + "\n--- supervisor log ---\n" +
           Tail(ReadWholeFile(run + "/vm1.supervisor.log")) + "\n--- console ---\n" +
           Tail(ReadWholeFile(run + "/vm1.log"));
  };
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() >= 1; }, 60s)) << diagnostics();
  LabGuard guard;
  ASSERT_EQ(Lab({"up", "1", "--controller-port", std::to_string(controller.grpc_port()),
                 "--artifacts", controller.db_path() + ".artifacts", "--label", "lab=vm"},
                &out),
            0)
      << out;
  ASSERT_TRUE(WaitFor([&] { return controller.ConnectedHosts() >= 2; }, 240s)) << diagnostics();

  // 3. Two revisions as the arms of one run.
  std::string run_id;
  grpc::Status submitted = controller.Submit(R"(name: vm-two-revisions
benchmark: ebizzy
params: {seconds: 2, threads: 1, chunk_size: 65536}
iterations: 2
hosts: {labels: {lab: vm}}
arms:
  - {name: base, kernel: {source: linux, rev: lab-base}}
  - {name: tip, kernel: {source: linux, rev: lab-tip}}
)",
                                             &run_id, "two-revisions.yaml");
  ASSERT_TRUE(submitted.ok()) << submitted.error_message();
  // A cold build of the lab config takes 10-20 minutes here; later ones reuse the tree.
  const v1::Run done = controller.WaitForRunEnd(run_id, 2700s);
  ASSERT_EQ(done.state(), v1::RUN_STATE_SUCCEEDED) << done.ShortDebugString() << diagnostics();

  // 4. The builds, and what every sample says it ran on.
  ASSERT_EQ(done.builds_size(), 2);
  std::map<std::string, v1::KernelBuild> build_of;
  for (const v1::KernelBuild& b : done.builds()) {
    EXPECT_EQ(b.state(), "succeeded") << b.ShortDebugString();
    EXPECT_EQ(b.build_id().size(), 64u) << b.ShortDebugString();
    EXPECT_GT(b.log_lines(), 0u) << b.ShortDebugString();
    build_of[b.arm()] = b;
  }
  EXPECT_EQ(build_of["base"].commit(), base);
  EXPECT_EQ(build_of["tip"].commit(), tip);
  EXPECT_NE(build_of["base"].build_id(), build_of["tip"].build_id());

  v1::GetResultsRequest request;
  request.set_run_id(run_id);
  v1::GetResultsResponse results;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  ASSERT_TRUE(controller.fleet().GetResults(&ctx, request, &results).ok());
  ASSERT_GT(results.samples_size(), 0);
  std::set<std::string> arms;
  for (const v1::Sample& s : results.samples()) {
    const v1::KernelBuild& b = build_of.at(s.arm());
    arms.insert(s.arm());
    EXPECT_EQ(s.commit(), b.commit()) << s.ShortDebugString();
    EXPECT_EQ(s.build_id(), b.build_id()) << s.ShortDebugString();
    EXPECT_EQ(s.boot_entry(), b.boot_entry()) << s.ShortDebugString();
    EXPECT_EQ(s.kernel_release(), b.kernel_release()) << s.ShortDebugString();
    EXPECT_NE(s.kernel_cmdline().find("tlbfleet.build=" + b.build_id().substr(0, 16)),
              std::string::npos)
        << s.kernel_cmdline();
  }
  EXPECT_EQ(arms, (std::set<std::string>{"base", "tip"}));

  // The build's log is kept and readable through the CLI.
  ASSERT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", controller.address(), "build-log",
                        std::to_string(build_of["tip"].task_id())},
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("==> "), std::string::npos) << Tail(out);
  std::printf("base %s build %s, tip %s build %s\n", base.c_str(),
              build_of["base"].build_id().c_str(), tip.c_str(), build_of["tip"].build_id().c_str());
}

}  // namespace
}  // namespace tlbfleet::testing
