// Boot entries through a real controller and a real agent on loopback, with the agent's
// kernel files in a fake sysroot and a "reboot" that only rewrites them and stops the agent
// (the test starts it again, as a host's init would). Nothing here can reboot this machine;
// real reboots into real kernels are in tests/vm.
//
// Checked: arms on two entries run on interleaved boots (A B B A), each on a boot of its own
// entry, and every sample records the entry and the kernel it ran on; a boot that shows
// another kernel than its entry expects fails the job naming the entry and both kernels; an
// entry no host has fails the run at once, naming it.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

void Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

class BootEntriesIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string d = dir_.path();
    root_ = d + "/sysroot";
    std::filesystem::create_directories(root_ + "/proc/sys/kernel/random");
    std::filesystem::create_directories(root_ + "/etc");
    {
      // copy_file sees /proc/cpuinfo as empty (procfs files have no size): read it.
      std::ifstream in("/proc/cpuinfo");
      std::stringstream cpuinfo;
      cpuinfo << in.rdbuf();
      Write(root_ + "/proc/cpuinfo", cpuinfo.str());
    }
    Write(root_ + "/proc/sys/kernel/hostname", "fakehost\n");
    Write(root_ + "/proc/sys/kernel/osrelease", "6.1.0-57-amd64\n");
    Write(root_ + "/proc/cmdline", "console=ttyS0 tlbfleet.entry=old\n");
    Write(root_ + "/proc/sys/kernel/random/boot_id", "boot-initial\n");
    // The select commands record the next entry; the "reboot" boots it: the kernel release the
    // entry really boots (liar's differs from what it promises), a command line naming it and
    // a new boot_id. Then it stops the agent, as a reboot would.
    Write(d + "/fake-reboot",
          "#!/bin/sh\nD=" + d +
              "\nentry=$(cat $D/next-entry)\ncase $entry in\n"
              "  new) rel=6.12.117+deb12-amd64 ;;\n  *) rel=6.1.0-57-amd64 ;;\nesac\n"
              "echo $rel > $D/sysroot/proc/sys/kernel/osrelease\n"
              "echo \"console=ttyS0 tlbfleet.entry=$entry\" > $D/sysroot/proc/cmdline\n"
              "n=$(cat $D/boots 2>/dev/null || echo 0); n=$((n + 1)); echo $n > $D/boots\n"
              "echo boot-$n > $D/sysroot/proc/sys/kernel/random/boot_id\n"
              "kill -TERM $(cat $D/agent.pid)\n");
    std::filesystem::permissions(d + "/fake-reboot", std::filesystem::perms::owner_all);
    Write(d + "/entries.yaml",
          "boot_entries:\n"
          "  - name: old\n    select: echo old > " +
              d +
              "/next-entry\n"
              "    expect: {release: 6.1.0-57-amd64, cmdline: [tlbfleet.entry=old]}\n"
              "  - name: new\n    select: echo new > " +
              d +
              "/next-entry\n"
              "    expect: {release: '6.12.*', cmdline: [tlbfleet.entry=new]}\n"
              "  - name: liar\n    select: echo liar > " +
              d +
              "/next-entry\n"
              "    expect: {release: 6.12.117+deb12-amd64}\n");
    controller_ = std::make_unique<ControllerProcess>(d);
    ASSERT_GT(controller_->grpc_port(), 0) << controller_->process().Log();
    StartAgent();
    ASSERT_TRUE(WaitFor([&] { return controller_->ConnectedHosts() == 1; }, 30s)) << Logs();
  }

  void StartAgent() {
    agent_ = std::make_unique<Process>(
        std::vector<std::string>{BinPath("tlbfleet-agent"), "--controller", controller_->address(),
                                 "--state-dir", dir_.path() + "/agent", "--sysroot", root_,
                                 "--boot-entries", dir_.path() + "/entries.yaml",
                                 "--reboot-command", dir_.path() + "/fake-reboot",
                                 "--max-backoff-seconds", "1"},
        dir_.path() + "/agent.log");
    Write(dir_.path() + "/agent.pid", std::to_string(agent_->pid()) + "\n");
  }

  // Waits for the run to end, starting the agent again whenever a "reboot" stopped it.
  v1::Run RunToEnd(const std::string& run_id, std::chrono::seconds timeout) {
    v1::Run run;
    WaitFor(
        [&] {
          if (!agent_->Running()) StartAgent();
          run = controller_->GetRun(run_id);
          return run.state() == v1::RUN_STATE_SUCCEEDED || run.state() == v1::RUN_STATE_FAILED ||
                 run.state() == v1::RUN_STATE_CANCELLED;
        },
        timeout);
    return run;
  }

  std::string Submit(const std::string& arms, const std::string& extra = "") {
    std::string run_id;
    grpc::Status s = controller_->Submit(
        "name: it-entries\nbenchmark: pipetest\nparams: {loops: 2000}\niterations: 2\n" + extra +
            "arms:\n" + arms,
        &run_id, "it.yaml");
    EXPECT_TRUE(s.ok()) << s.error_message();
    return run_id;
  }

  std::string Logs() {
    return "--- controller\n" + controller_->process().Log() + "\n--- agent\n" + agent_->Log();
  }

  TempDir dir_;
  std::string root_;
  std::unique_ptr<ControllerProcess> controller_;
  std::unique_ptr<Process> agent_;
};

TEST_F(BootEntriesIntegrationTest, ArmsOnTwoEntriesRunOnInterleavedBootsOfTheirOwnEntry) {
  // The host lists its entries, and says which one this boot is.
  grpc::ClientContext ctx;
  v1::ListHostsResponse hosts;
  ASSERT_TRUE(controller_->fleet().ListHosts(&ctx, v1::ListHostsRequest(), &hosts).ok());
  ASSERT_EQ(hosts.hosts_size(), 1);
  ASSERT_EQ(hosts.hosts(0).info().boot_entries_size(), 3);
  EXPECT_EQ(hosts.hosts(0).info().boot_entries(1).name(), "new");
  EXPECT_EQ(hosts.hosts(0).info().boot_entries(1).release(), "6.12.*");
  EXPECT_EQ(hosts.hosts(0).info().boot_entry(), "old");
  EXPECT_TRUE(hosts.hosts(0).info().can_reboot());

  const std::string run_id =
      Submit("  - {name: a, boot_entry: old}\n  - {name: b, boot_entry: new}\n", "boots: 2\n");
  ASSERT_FALSE(run_id.empty());
  const v1::Run run = RunToEnd(run_id, 120s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.error() << "\n" << Logs();
  const std::string db = controller_->db_path();
  const std::string where = " FROM samples WHERE run_id = " + run_id + " AND series = ''" +
                            " AND metric = 'usecs_per_op'";
  EXPECT_EQ(QueryInt(db, "SELECT COUNT(*)" + where), 8);
  // Four boots, none of them the one the host was on before the run: each boot index is a
  // boot the controller asked for.
  EXPECT_EQ(QueryInt(db, "SELECT COUNT(DISTINCT boot_id)" + where), 4);
  EXPECT_EQ(QueryInt(db, "SELECT COUNT(*)" + where + " AND boot_id = 'boot-initial'"), 0);
  // Every sample ran on its arm's entry, and its kernel is the one that entry boots.
  EXPECT_EQ(QueryInt(db, "SELECT COUNT(*)" + where +
                             " AND ((arm = 'a' AND boot_entry = 'old' AND kernel_release = "
                             "'6.1.0-57-amd64') OR (arm = 'b' AND boot_entry = 'new' AND "
                             "kernel_release = '6.12.117+deb12-amd64'))"),
            8);
  // A B B A: the boots in the order they ran (boot-1 .. boot-4), with their entries.
  std::string order;
  for (int b = 1; b <= 4; ++b) {
    const int64_t old_samples = QueryInt(db, "SELECT COUNT(*)" + where + " AND boot_id = 'boot-" +
                                                 std::to_string(b) + "' AND arm = 'a'");
    order += old_samples > 0 ? "A" : "B";
  }
  EXPECT_EQ(order, "ABBA");
  // The comparison of the two kernels reports a verdict for the second arm.
  grpc::ClientContext compare_ctx;
  v1::CompareRequest compare;
  compare.set_run_id(run_id);
  v1::CompareResponse response;
  ASSERT_TRUE(controller_->fleet().Compare(&compare_ctx, compare, &response).ok());
  const std::string& text = response.text();
  EXPECT_NE(text.find("Verdicts"), std::string::npos) << text;
  const bool verdict =
      text.find("b  better") != std::string::npos || text.find("b  worse") != std::string::npos ||
      text.find("b  same") != std::string::npos || text.find("b  unknown") != std::string::npos;
  EXPECT_TRUE(verdict) << text;
}

TEST_F(BootEntriesIntegrationTest, ABootOfTheWrongKernelFailsTheJobNamingTheEntryAndBothKernels) {
  const std::string run_id =
      Submit("  - {name: a, boot_entry: old}\n  - {name: b, boot_entry: liar}\n");
  const v1::Run run = RunToEnd(run_id, 90s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_FAILED) << Logs();
  EXPECT_NE(run.error().find("job needs boot entry liar (kernel 6.12.117+deb12-amd64)"),
            std::string::npos)
      << run.error();
  EXPECT_NE(run.error().find("entry liar expected release 6.12.117+deb12-amd64, booted "
                             "6.1.0-57-amd64"),
            std::string::npos)
      << run.error();
}

TEST_F(BootEntriesIntegrationTest, AnEntryNoHostHasFailsTheRunAtOnceNamingIt) {
  const std::string run_id = Submit("  - {name: a, boot_entry: 6.3-rc1}\n");
  const v1::Run run = controller_->WaitForRunEnd(run_id, 30s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_FAILED) << Logs();
  EXPECT_NE(run.error().find("host fakehost has no boot entry 6.3-rc1 (it has old, new, liar)"),
            std::string::npos)
      << run.error();
}

}  // namespace
}  // namespace tlbfleet::testing
