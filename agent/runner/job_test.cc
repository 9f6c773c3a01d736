#include "agent/runner/job.h"

#include <fcntl.h>

#include <cerrno>
#include <map>

#include "agent/kernel/ceiling.h"
#include "agent/kernel/fake_sysroot_for_test.h"
#include "agent/runner/test_util_for_test.h"
#include "common/files.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent {
namespace {

using namespace std::chrono_literals;

constexpr char kTwoLines[] =
    R"(echo '{"metric":"records_per_sec","value":100.5,"unit":"records/s","better":"higher",)"
    R"("series":"thread0","iteration":1,"param":{"threads":"2"}}'; )"
    R"(echo '{"metric":"records_per_sec","value":201,"unit":"records/s","better":"higher",)"
    R"("iteration":1,"param":{"threads":"2"}}')";

v1::JobAssignment Assignment() {
  v1::JobAssignment a;
  a.set_lease_id("lease-7");
  a.set_job_id(7);
  a.set_run_id("run-3");
  a.set_benchmark("ebizzy");
  (*a.mutable_params())["threads"] = "2";
  (*a.mutable_params())["mmap"] = "always";
  a.set_arm("base");
  a.set_param_name("threads");
  a.set_param_value("2");
  a.set_iteration(4);
  a.set_timeout_seconds(30);
  return a;
}

HostContext Host() {
  HostContext h;
  h.agent_id = "00112233445566778899aabbccddeeff";
  h.host.set_hostname("lab-ivb-01");
  h.host.set_boot_id("boot-1");
  h.host.set_kernel_release("6.1.0-57-amd64");
  h.host.set_kernel_cmdline("root=/dev/sda1 pti=on");
  h.host.mutable_cpu()->set_microarch("IvyBridge");
  return h;
}

class JobTest : public ::testing::Test {
 protected:
  v1::SpooledJob Run(const std::string& script, const v1::JobAssignment& a = Assignment(),
                     CancelToken* cancel = nullptr) {
    JobOptions options;
    options.sysroot = &root_;
    options.ceiling_journal = journal_;
    options.progress = [this](const std::string& note) { notes_.push_back(note); };
    options.on_child_exit = [this](const ChildResult& r) { exits_.push_back(r.Describe()); };
    options.argv_for = [script](const v1::JobAssignment&) {
      return std::vector<std::string>{"/bin/sh", "-c", script};
    };
    return RunJob(a, Host(), options, cancel);
  }

  TempDir dir_;
  FakeSysroot root_{dir_};
  std::string journal_ = dir_.path() + "/ceiling-journal";
  std::vector<std::string> notes_;
  std::vector<std::string> exits_;  // on_child_exit calls
};

TEST(WorkloadArgvTest, RunsTheAgentBinaryInWorkloadMode) {
  EXPECT_EQ(WorkloadArgv(Assignment()),
            (std::vector<std::string>{"/proc/self/exe", "run-workload", "ebizzy", "--json", "--set",
                                      "mmap=always", "--set", "threads=2"}));
}

TEST_F(JobTest, JsonLinesBecomeSamplesWithProvenance) {
  v1::SpooledJob job = Run(kTwoLines);
  ASSERT_EQ(job.complete().status(), v1::JOB_STATUS_SUCCEEDED) << job.complete().error();
  EXPECT_EQ(job.complete().lease_id(), "lease-7");
  EXPECT_EQ(job.complete().job_id(), 7);
  EXPECT_EQ(job.complete().sample_count(), 2u);
  EXPECT_GT(job.complete().elapsed_seconds(), 0);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(job.assignment(), Assignment()));
  ASSERT_EQ(job.samples_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const v1::Sample& s = job.samples(i);
    EXPECT_EQ(s.seq(), static_cast<uint64_t>(i));
    EXPECT_EQ(s.run_id(), "run-3");
    EXPECT_EQ(s.job_id(), 7);
    EXPECT_EQ(s.lease_id(), "lease-7");
    EXPECT_EQ(s.arm(), "base");
    EXPECT_EQ(s.param_name(), "threads");
    EXPECT_EQ(s.param_value(), "2");
    EXPECT_EQ(s.iteration(), 4u);  // from the assignment, not the workload's own count
    EXPECT_EQ(s.metric(), "records_per_sec");
    EXPECT_EQ(s.unit(), "records/s");
    EXPECT_EQ(s.better(), v1::BETTER_HIGHER);
    EXPECT_EQ(s.host(), "lab-ivb-01");
    EXPECT_EQ(s.agent_id(), "00112233445566778899aabbccddeeff");
    EXPECT_EQ(s.boot_id(), "boot-1");
    EXPECT_EQ(s.kernel_release(), "6.1.0-57-amd64");
    EXPECT_EQ(s.kernel_cmdline(), "root=/dev/sda1 pti=on");
    EXPECT_EQ(s.microarch(), "IvyBridge");
    EXPECT_FALSE(s.ceiling_applied());
  }
  EXPECT_EQ(job.samples(0).series(), "thread0");
  EXPECT_DOUBLE_EQ(job.samples(0).value(), 100.5);
  EXPECT_EQ(job.samples(1).series(), "");
  EXPECT_DOUBLE_EQ(job.samples(1).value(), 201);
}

TEST_F(JobTest, NonzeroExitFailsWithStderrTail) {
  v1::SpooledJob job = Run("echo 'threads: must be an integer in [1, 4096]' >&2; exit 2");
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_EQ(job.complete().error(),
            "workload ebizzy exited with status 2: threads: must be an integer in [1, 4096]");
  EXPECT_EQ(exits_, std::vector<std::string>{"exited with status 2"});
}

TEST_F(JobTest, CrashFailsAndKeepsEarlierSamples) {
  v1::SpooledJob job = Run(std::string(kTwoLines) + "; echo 'Segfault!' >&2; kill -SEGV $$");
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_EQ(job.complete().error(),
            "workload ebizzy killed by signal 11 (Segmentation fault): Segfault!");
  EXPECT_EQ(job.complete().sample_count(), 2u);
  EXPECT_EQ(exits_, std::vector<std::string>{"killed by signal 11 (Segmentation fault)"});
}

TEST_F(JobTest, TimeoutIsTimedOut) {
  v1::JobAssignment a = Assignment();
  a.set_timeout_seconds(1);
  v1::SpooledJob job = Run("sleep 1000 & wait", a);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_TIMED_OUT);
  EXPECT_EQ(job.complete().error(),
            "workload ebizzy exceeded its 1 s timeout; its process group was killed");
}

TEST_F(JobTest, CancelIsCancelledWithTheReason) {
  CancelToken cancel;
  cancel.Cancel("cancelled by the controller: run deleted");
  v1::SpooledJob job = Run("sleep 1000", Assignment(), &cancel);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_CANCELLED);
  EXPECT_EQ(job.complete().error(),
            "workload ebizzy cancelled: cancelled by the controller: run deleted");
}

TEST_F(JobTest, MalformedOutputFails) {
  v1::SpooledJob job = Run(std::string(kTwoLines) + "; echo '1234 records/s'");
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_NE(job.complete().error().find("output line 3 is not a metric"), std::string::npos)
      << job.complete().error();
}

TEST_F(JobTest, NoMetricsFails) {
  v1::SpooledJob job = Run("exit 0");
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_EQ(job.complete().error(),
            "workload ebizzy exited 0 but printed no metrics: "
            "(no stderr output)");
}

TEST_F(JobTest, CeilingUnderLockdownFailsFastWithoutRunning) {
  root_.WriteFile(kCeilingPath, "33\n");
  root_.WriteFile(kLockdownPath, "none [integrity] confidentiality\n");
  root_.FailOpen(kCeilingPath, O_RDONLY, EPERM);
  root_.FailOpen(kCeilingPath, O_WRONLY, EPERM);
  std::string marker = dir_.path() + "/ran";
  v1::JobAssignment a = Assignment();
  a.set_ceiling("512");
  v1::SpooledJob job = Run("touch " + marker + "; " + kTwoLines, a);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_EQ(job.complete().error(),
            "ceiling 512 requested but the flush ceiling is not writable on this host: "
            "kernel lockdown (integrity)");
  EXPECT_EQ(job.samples_size(), 0);
  EXPECT_EQ(::access(marker.c_str(), F_OK), -1) << "the workload ran anyway";
}

TEST_F(JobTest, CeilingIsAppliedDuringTheJobAndRestoredAfter) {
  root_.WriteFile(kCeilingPath, "33\n");
  v1::JobAssignment a = Assignment();
  a.set_ceiling("512");
  // The workload records the ceiling it ran under.
  std::string seen = dir_.path() + "/seen";
  v1::SpooledJob job = Run("cat " + root_.Path(kCeilingPath) + " > " + seen + "; " + kTwoLines, a);
  ASSERT_EQ(job.complete().status(), v1::JOB_STATUS_SUCCEEDED) << job.complete().error();
  EXPECT_EQ(Trim(*ReadFile(seen)), "512");
  EXPECT_EQ(*ReadCeiling(root_), 33);
  for (const v1::Sample& s : job.samples()) {
    EXPECT_TRUE(s.ceiling_applied());
    EXPECT_EQ(s.ceiling(), 512);
  }
}

TEST_F(JobTest, DefaultCeilingIsTheValueThisBootStartedWith) {
  root_.WriteFile(kCeilingPath, "512\n");
  v1::JobAssignment a = Assignment();
  a.set_ceiling("default");
  v1::SpooledJob job = Run(kTwoLines, a);
  ASSERT_EQ(job.complete().status(), v1::JOB_STATUS_SUCCEEDED) << job.complete().error();
  EXPECT_TRUE(job.samples(0).ceiling_applied());
  EXPECT_EQ(job.samples(0).ceiling(), 512);
  EXPECT_EQ(*ReadCeiling(root_), 512);
}

TEST_F(JobTest, CeilingIsJournaledWhileTheWorkloadRuns) {
  root_.WriteFile(kCeilingPath, "33\n");
  v1::JobAssignment a = Assignment();
  a.set_ceiling("1");
  std::string seen = dir_.path() + "/journal-seen";
  v1::SpooledJob job = Run("cat " + journal_ + " > " + seen + "; " + kTwoLines, a);
  ASSERT_EQ(job.complete().status(), v1::JOB_STATUS_SUCCEEDED) << job.complete().error();
  EXPECT_EQ(*ReadFile(seen), "boot_id boot-1\noriginal 33\n");
  EXPECT_EQ(::access(journal_.c_str(), F_OK), -1) << "journal left after the restore";
  EXPECT_EQ(*ReadCeiling(root_), 33);
}

TEST_F(JobTest, KernelRejectingTheValueFailsTheJobAndRestores) {
  root_.WriteFile(kCeilingPath, "33\n");
  root_.FailWrite(kCeilingPath, ERANGE, "512\n");
  v1::JobAssignment a = Assignment();
  a.set_ceiling("512");
  std::string marker = dir_.path() + "/ran";
  v1::SpooledJob job = Run("touch " + marker + "; " + kTwoLines, a);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_EQ(job.complete().error(), "cannot set the flush ceiling to 512: write 512 to " +
                                        root_.Path(kCeilingPath) +
                                        ": Numerical result out of range");
  EXPECT_EQ(::access(marker.c_str(), F_OK), -1) << "the workload ran anyway";
  EXPECT_EQ(*ReadCeiling(root_), 33);
  EXPECT_EQ(::access(journal_.c_str(), F_OK), -1) << "restore did not complete";
}

TEST_F(JobTest, UnknownMonitorFailsBeforeAnything) {
  v1::JobAssignment a = Assignment();
  a.add_monitors("crystal_ball");
  v1::SpooledJob job = Run(kTwoLines, a);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_NE(job.complete().error().find("unknown monitor 'crystal_ball'"), std::string::npos)
      << job.complete().error();
}

TEST_F(JobTest, MonitorSamplesFollowTheWorkloadsWithProvenance) {
  root_.WriteFile("/proc/vmstat", "nr_free_pages 100\nnr_tlb_remote_flush 7\npgfault 10\n");
  root_.WriteFile("/proc/interrupts",
                  "           CPU0       CPU1\n  0:         40          0   IO-APIC    2-edge "
                  "timer\nTLB:         10         20   TLB shootdowns\n");
  v1::JobAssignment a = Assignment();
  a.add_monitors("vmstat");
  a.add_monitors("interrupts");
  // The "workload" changes the counters the monitors diff.
  std::string script = std::string(kTwoLines) +
                       "; printf 'nr_free_pages 100\nnr_tlb_remote_flush 7\n" + "pgfault 15\n' > " +
                       root_.Path("/proc/vmstat") +
                       "; printf '           CPU0       CPU1\nTLB:         13         20   TLB "
                       "shootdowns\n' > " +
                       root_.Path("/proc/interrupts");
  v1::SpooledJob job = Run(script, a);
  ASSERT_EQ(job.complete().status(), v1::JOB_STATUS_SUCCEEDED) << job.complete().error();
  std::map<std::string, double> got;
  for (int i = 0; i < job.samples_size(); ++i) {
    const v1::Sample& s = job.samples(i);
    EXPECT_EQ(s.seq(), static_cast<uint64_t>(i));
    EXPECT_EQ(s.lease_id(), "lease-7");
    EXPECT_EQ(s.boot_id(), "boot-1");
    if (i >= 2) got[s.metric() + "/" + s.series()] = s.value();
  }
  EXPECT_EQ(got, (std::map<std::string, double>{
                     {"vmstat_pgfault/", 5},
                     {"vmstat_nr_tlb_remote_flush/", 0},  // nr_tlb_* always reported
                     {"tlb_shootdown_interrupts/cpu0", 3},
                     {"tlb_shootdown_interrupts/cpu1", 0},
                     {"tlb_shootdown_interrupts/total", 3},
                 }));
  EXPECT_EQ(job.complete().sample_count(), static_cast<uint64_t>(job.samples_size()));
}

TEST_F(JobTest, PerfNeverFailsTheJob) {
  v1::JobAssignment a = Assignment();
  a.add_monitors("perf");
  v1::SpooledJob job = Run(kTwoLines, a);
  ASSERT_EQ(job.complete().status(), v1::JOB_STATUS_SUCCEEDED) << job.complete().error();
  // Whatever this machine supports: every counter is either a sample or a note.
  int perf_samples = 0;
  for (const v1::Sample& s : job.samples()) perf_samples += s.metric().rfind("perf_", 0) == 0;
  int perf_notes = 0;
  for (const std::string& n : notes_) perf_notes += n.rfind("perf: ", 0) == 0;
  EXPECT_GE(perf_samples + perf_notes, 4) << perf_samples << " samples, " << perf_notes << " notes";
}

TEST_F(JobTest, CeilingIsRestoredAfterAFailedWorkloadToo) {
  root_.WriteFile(kCeilingPath, "33\n");
  v1::JobAssignment a = Assignment();
  a.set_ceiling("1");
  v1::SpooledJob job = Run("exit 1", a);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_EQ(*ReadCeiling(root_), 33);
}

TEST_F(JobTest, InvalidCeilingFails) {
  root_.WriteFile(kCeilingPath, "33\n");
  v1::JobAssignment a = Assignment();
  a.set_ceiling("lots");
  v1::SpooledJob job = Run(kTwoLines, a);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_NE(job.complete().error().find("invalid ceiling 'lots'"), std::string::npos);
}

}  // namespace
}  // namespace tlbfleet::agent
