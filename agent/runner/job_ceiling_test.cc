// Every sample states the ceiling it was measured under, or the job fails: RunJob against a
// fake sysroot whose "kernel" keeps another value than the one written, workloads (shell
// scripts) that rewrite the ceiling mid-job, and two agents racing on one host.
#include "agent/runner/job_ceiling.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "agent/kernel/ceiling.h"
#include "agent/kernel/ceiling_control.h"
#include "agent/kernel/ceiling_health.h"
#include "agent/kernel/ceiling_lock.h"
#include "agent/kernel/fake_sysroot_for_test.h"
#include "agent/runner/job.h"
#include "common/files.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::agent {
namespace {

using namespace std::chrono_literals;

constexpr char kMetric[] =
    R"(echo '{"metric":"records_per_sec","value":100,"unit":"records/s","better":"higher"}')";

v1::JobAssignment Assignment(const std::string& ceiling, const std::string& lease = "j1a1") {
  v1::JobAssignment a;
  a.set_lease_id(lease);
  a.set_job_id(1);
  a.set_run_id("7");
  a.set_benchmark("ebizzy");
  a.set_arm("arm");
  a.set_iteration(1);
  a.set_timeout_seconds(30);
  a.set_ceiling(ceiling);
  return a;
}

HostContext Host() {
  HostContext h;
  h.agent_id = "agent-a";
  h.host.set_hostname("host");
  h.host.set_boot_id("boot-1");
  return h;
}

// Waits (polling, there is no event) until `path` exists or `timeout` passes.
bool FileAppears(const std::string& path, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (::access(path.c_str(), F_OK) != 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// A shell loop that waits for `path` (at most 20 s, then fails).
std::string WaitInShell(const std::string& path) {
  return "i=0; while [ ! -e " + path +
         " ]; do i=$((i+1)); [ $i -gt 400 ] && exit 9; sleep 0.05; "
         "done; ";
}

class JobCeilingTest : public ::testing::Test {
 protected:
  void SetUp() override { root_.WriteFile(kCeilingPath, "33\n"); }

  // One agent's job: its own state directory (journal, degraded marker), the shared host.
  v1::SpooledJob Run(const v1::JobAssignment& a, const std::string& script,
                     const std::string& state = "a") {
    const std::string dir = dir_.path() + "/" + state;
    (void)MakeDirs(dir);
    JobOptions options;
    options.sysroot = &root_;
    options.ceiling_journal = dir + "/ceiling-journal";
    options.ceiling_degraded = marker_.empty() ? dir + "/ceiling-degraded" : marker_;
    options.argv_for = [script](const v1::JobAssignment&) {
      return std::vector<std::string>{"/bin/sh", "-c", script};
    };
    return RunJob(a, Host(), options, nullptr);
  }
  std::string Marker(const std::string& state = "a") const {
    return dir_.path() + "/" + state + "/ceiling-degraded";
  }
  int64_t Ceiling() const { return *ReadCeiling(root_); }
  // The kernel swaps a tunable's value atomically; a shell `>` truncates first, so the
  // "workload" writes a temp file and renames it.
  std::string Write(int64_t v) const {
    const std::string path = root_.Path(kCeilingPath);
    return "echo " + std::to_string(v) + " > " + path + ".new && mv " + path + ".new " + path +
           "; ";
  }

  TempDir dir_;
  FakeSysroot root_{dir_};
  std::string marker_;  // the degraded marker's path, when not the state directory's
};

TEST_F(JobCeilingTest, ObservedCeilingIsOnEverySampleOfAJobThatSetsNone) {
  v1::SpooledJob job = Run(Assignment(""), std::string(kMetric) + "; " + kMetric);
  ASSERT_EQ(job.complete().status(), v1::JOB_STATUS_SUCCEEDED) << job.complete().error();
  ASSERT_EQ(job.samples_size(), 2);
  for (const v1::Sample& s : job.samples()) {
    EXPECT_FALSE(s.ceiling_applied());
    EXPECT_TRUE(s.ceiling_observed());
    EXPECT_EQ(s.ceiling(), 33);
  }
}

TEST_F(JobCeilingTest, UnreadableCeilingIsNotClaimed) {
  root_.FailOpen(kCeilingPath, O_RDONLY, EPERM);  // lockdown
  v1::SpooledJob job = Run(Assignment(""), kMetric);
  ASSERT_EQ(job.complete().status(), v1::JOB_STATUS_SUCCEEDED) << job.complete().error();
  EXPECT_FALSE(job.samples(0).ceiling_observed());
  EXPECT_FALSE(job.samples(0).ceiling_applied());
}

TEST_F(JobCeilingTest, SetCeilingIsObservedThroughout) {
  v1::SpooledJob job = Run(Assignment("512"), kMetric);
  ASSERT_EQ(job.complete().status(), v1::JOB_STATUS_SUCCEEDED) << job.complete().error();
  EXPECT_TRUE(job.samples(0).ceiling_applied());
  EXPECT_TRUE(job.samples(0).ceiling_observed());
  EXPECT_EQ(job.samples(0).ceiling(), 512);
  EXPECT_EQ(Ceiling(), 33);
}

// The kernel holds 500 after a write of 512 (as one that clamps would): the job must not
// run, let alone claim 512.
TEST_F(JobCeilingTest, ReadBackThatDiffersFromTheWriteFailsBeforeTheWorkload) {
  root_.StoreOnWrite(kCeilingPath, "512\n", "500\n");
  const std::string ran = dir_.path() + "/ran";
  v1::SpooledJob job = Run(Assignment("512"), "touch " + ran + "; " + kMetric);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_EQ(job.complete().error(), "cannot set the flush ceiling to 512: wrote 512 to " +
                                        root_.Path(kCeilingPath) + " but it reads back 500");
  EXPECT_EQ(::access(ran.c_str(), F_OK), -1) << "the workload ran anyway";
  EXPECT_EQ(job.samples_size(), 0);
  EXPECT_EQ(Ceiling(), 33) << "restored";
  EXPECT_EQ(::access(Marker().c_str(), F_OK), -1) << "the restore worked: not degraded";
}

TEST_F(JobCeilingTest, WorkloadRewritingTheCeilingFailsTheJobWithBothValues) {
  v1::SpooledJob job = Run(Assignment("512"), Write(7) + kMetric);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  const std::string& e = job.complete().error();
  EXPECT_NE(e.find("the flush ceiling changed while the workload ran: set to 512, it read 7"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("7 after the workload"), std::string::npos) << e;
  ASSERT_EQ(job.samples_size(), 1);
  EXPECT_FALSE(job.samples(0).ceiling_observed());
  EXPECT_EQ(Ceiling(), 33) << "the original is restored all the same";
}

// Changed and put back before the workload ends: only the watcher sees it.
TEST_F(JobCeilingTest, ChangeUndoneBeforeTheEndIsStillCaught) {
  v1::SpooledJob job = Run(Assignment("512"), Write(7) + "sleep 0.6; " + Write(512) + kMetric);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_NE(job.complete().error().find("set to 512, it read 7"), std::string::npos)
      << job.complete().error();
  EXPECT_NE(job.complete().error().find("512 after the workload"), std::string::npos)
      << job.complete().error();
}

TEST_F(JobCeilingTest, ObserveOnlyJobFailsWhenTheCeilingChanges) {
  v1::SpooledJob job = Run(Assignment(""), Write(1) + kMetric);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_NE(job.complete().error().find("read as 33 before the workload, it read 1"),
            std::string::npos)
      << job.complete().error();
}

// The restore reads back another value: the job fails, the host is degraded, ceiling jobs
// are refused (observe-only jobs still run and say what they saw) until the operator names
// the good value.
TEST_F(JobCeilingTest, FailedRestoreFailsTheJobAndDegradesTheHostUntilTheOperatorSaysSo) {
  root_.StoreOnWrite(kCeilingPath, "33\n", "34\n");
  v1::SpooledJob job = Run(Assignment("512"), kMetric);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_NE(job.complete().error().find("cannot restore the flush ceiling to 33: wrote 33"),
            std::string::npos)
      << job.complete().error();
  EXPECT_NE(job.complete().error().find("takes no ceiling jobs"), std::string::npos);
  std::optional<CeilingDegraded> d = ReadCeilingDegraded(Marker(), "boot-1");
  ASSERT_TRUE(d.has_value());
  EXPECT_NE(d->reason.find("reads back 34"), std::string::npos) << d->reason;
  EXPECT_NE(d->reason.find("lease=j1a1"), std::string::npos) << d->reason;

  const std::string ran = dir_.path() + "/ran";
  v1::SpooledJob refused = Run(Assignment("default", "j2a1"), "touch " + ran + "; " + kMetric);
  EXPECT_EQ(refused.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_NE(refused.complete().error().find("this host's flush ceiling is degraded"),
            std::string::npos)
      << refused.complete().error();
  EXPECT_EQ(::access(ran.c_str(), F_OK), -1);

  v1::SpooledJob observed = Run(Assignment("", "j3a1"), kMetric);
  ASSERT_EQ(observed.complete().status(), v1::JOB_STATUS_SUCCEEDED);
  EXPECT_EQ(observed.samples(0).ceiling(), 34);
  EXPECT_TRUE(observed.samples(0).ceiling_observed());

  const std::string journal = dir_.path() + "/a/ceiling-journal";
  // The "kernel" still keeps 34: the operator's word is checked, and changes nothing.
  EXPECT_FALSE(DeclareCeilingKnownGood(root_, journal, Marker(), 33).ok());
  EXPECT_TRUE(ReadCeilingDegraded(Marker(), "boot-1").has_value());
  root_.StoreOnWrite(kCeilingPath, "33\n", "");
  ASSERT_TRUE(DeclareCeilingKnownGood(root_, journal, Marker(), 33).ok());
  EXPECT_FALSE(ReadCeilingDegraded(Marker(), "boot-1").has_value());
  EXPECT_EQ(::access(journal.c_str(), F_OK), -1);
  v1::SpooledJob again = Run(Assignment("default", "j4a1"), kMetric);
  ASSERT_EQ(again.complete().status(), v1::JOB_STATUS_SUCCEEDED) << again.complete().error();
  EXPECT_EQ(again.samples(0).ceiling(), 33);
}

// The restore fails and the degraded marker cannot be written (its directory is gone, as on a
// state disk that failed): the job says so, the log names the lease and the path, and ceiling
// jobs are still refused this boot, until the operator names the good value.
TEST_F(JobCeilingTest, AMarkerThatCannotBeWrittenStillKeepsCeilingJobsOffThisBoot) {
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  spdlog::default_logger()->sinks().push_back(sink);
  marker_ = dir_.path() + "/gone/ceiling-degraded";
  const std::string journal = dir_.path() + "/a/ceiling-journal";
  root_.StoreOnWrite(kCeilingPath, "33\n", "34\n");
  v1::SpooledJob job = Run(Assignment("512"), kMetric);
  auto& sinks = spdlog::default_logger()->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  const std::string& e = job.complete().error();
  EXPECT_NE(e.find("cannot restore the flush ceiling to 33"), std::string::npos) << e;
  EXPECT_NE(e.find("the degraded marker " + marker_ + " cannot be written"), std::string::npos)
      << e;
  EXPECT_EQ(::access(marker_.c_str(), F_OK), -1);
  EXPECT_NE(log.str().find("cannot write the degraded-ceiling marker " + marker_),
            std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("lease=j1a1"), std::string::npos) << log.str();
  std::optional<CeilingDegraded> d = ReadJobCeilingDegraded(marker_, journal, "boot-1");
  ASSERT_TRUE(d.has_value());
  EXPECT_NE(d->reason.find("reads back 34"), std::string::npos) << d->reason;
  EXPECT_FALSE(ReadJobCeilingDegraded(marker_, journal, "boot-2").has_value()) << "a reboot";

  const std::string ran = dir_.path() + "/ran";
  v1::SpooledJob refused = Run(Assignment("default", "j2a1"), "touch " + ran + "; " + kMetric);
  EXPECT_EQ(refused.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_NE(refused.complete().error().find("this host's flush ceiling is degraded"),
            std::string::npos)
      << refused.complete().error();
  EXPECT_EQ(::access(ran.c_str(), F_OK), -1) << "a ceiling job ran on a degraded host";
  v1::SpooledJob observed = Run(Assignment("", "j3a1"), kMetric);
  ASSERT_EQ(observed.complete().status(), v1::JOB_STATUS_SUCCEEDED);
  EXPECT_EQ(observed.samples(0).ceiling(), 34);

  root_.StoreOnWrite(kCeilingPath, "33\n", "");
  ASSERT_TRUE(DeclareCeilingKnownGood(root_, journal, marker_, 33).ok());
  EXPECT_FALSE(ReadJobCeilingDegraded(marker_, journal, "boot-1").has_value());
  v1::SpooledJob again = Run(Assignment("default", "j4a1"), kMetric);
  ASSERT_EQ(again.complete().status(), v1::JOB_STATUS_SUCCEEDED) << again.complete().error();
  EXPECT_EQ(again.samples(0).ceiling(), 33);
}

// The boot's value is unknown (a corrupt journal) and the marker cannot be written: the next
// ceiling job is refused as on a degraded host, not merely failed again.
TEST_F(JobCeilingTest, AnUnknownBootValueWhoseMarkerCannotBeWrittenStillDegradesTheHost) {
  marker_ = dir_.path() + "/gone/ceiling-degraded";
  ASSERT_TRUE(MakeDirs(dir_.path() + "/a").ok());
  ASSERT_TRUE(WriteFileAtomic(dir_.path() + "/a/ceiling-journal", "boot_id boot-1\norig").ok());
  v1::SpooledJob job = Run(Assignment("default"), kMetric);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_NE(job.complete().error().find("the value this boot started with is unknown"),
            std::string::npos)
      << job.complete().error();
  EXPECT_NE(job.complete().error().find("the degraded marker " + marker_ + " cannot be written"),
            std::string::npos)
      << job.complete().error();
  v1::SpooledJob refused = Run(Assignment("512", "j2a1"), kMetric);
  EXPECT_EQ(refused.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_NE(refused.complete().error().find("this host's flush ceiling is degraded"),
            std::string::npos)
      << refused.complete().error();
}

TEST_F(JobCeilingTest, CorruptJournalMeansTheBootsValueIsUnknown) {
  ASSERT_TRUE(MakeDirs(dir_.path() + "/a").ok());
  ASSERT_TRUE(WriteFileAtomic(dir_.path() + "/a/ceiling-journal", "boot_id boot-1\norig").ok());
  root_.WriteFile(kCeilingPath, "512\n");  // left by whoever wrote that journal
  v1::SpooledJob job = Run(Assignment("default"), kMetric);
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_NE(job.complete().error().find("the value this boot started with is unknown"),
            std::string::npos)
      << job.complete().error();
  EXPECT_TRUE(ReadCeilingDegraded(Marker(), "boot-1").has_value());
  EXPECT_EQ(Ceiling(), 512) << "nothing written on a guess";
}

// Two agents on one host (two state directories, one /run): while one job holds the
// ceiling at 1, the other agent's ceiling job and its observe-only job are refused at once,
// naming the holder, and neither runs its workload. Afterwards the host is back at 33.
TEST_F(JobCeilingTest, TwoAgentsRacingOnOneHostNeverInterleave) {
  const std::string started = dir_.path() + "/a-started";
  const std::string release = dir_.path() + "/release";
  const std::string seen = dir_.path() + "/a-seen";
  v1::SpooledJob first;
  std::thread agent_a([&] {
    first = Run(Assignment("1"),
                "cat " + root_.Path(kCeilingPath) + " > " + seen + "; touch " + started + "; " +
                    WaitInShell(release) + "cat " + root_.Path(kCeilingPath) + " >> " + seen +
                    "; " + kMetric,
                "a");
  });
  ASSERT_TRUE(FileAppears(started, 20s));
  const std::string b_ran = dir_.path() + "/b-ran";
  v1::SpooledJob second = Run(Assignment("512", "b1"), "touch " + b_ran + "; " + kMetric, "b");
  v1::SpooledJob third = Run(Assignment("", "b2"), "touch " + b_ran + "; " + kMetric, "b");
  ASSERT_TRUE(WriteFileAtomic(release, "go").ok());
  agent_a.join();

  ASSERT_EQ(first.complete().status(), v1::JOB_STATUS_SUCCEEDED) << first.complete().error();
  EXPECT_EQ(first.samples(0).ceiling(), 1);
  EXPECT_EQ(*ReadFile(seen), "1\n1\n") << "agent a's workload saw only its own value";
  for (const v1::SpooledJob* j : {&second, &third}) {
    EXPECT_EQ(j->complete().status(), v1::JOB_STATUS_FAILED);
    EXPECT_NE(j->complete().error().find("/run/tlbfleet-ceiling.lock is held by pid " +
                                         std::to_string(::getpid()) + " journal " + dir_.path() +
                                         "/a/ceiling-journal"),
              std::string::npos)
        << j->complete().error();
  }
  EXPECT_EQ(::access(b_ran.c_str(), F_OK), -1) << "agent b measured while a held the ceiling";
  EXPECT_EQ(Ceiling(), 33);
  // And with the lock free again, agent b's ceiling job runs.
  v1::SpooledJob later = Run(Assignment("512", "b3"), kMetric, "b");
  EXPECT_EQ(later.complete().status(), v1::JOB_STATUS_SUCCEEDED) << later.complete().error();
}

// An agent died holding the lock with the ceiling changed: another agent may not take the
// current value for the boot's, until the dead agent's journal is resolved.
TEST_F(JobCeilingTest, DeadHoldersChangeIsNotMistakenForTheBootsValue) {
  ASSERT_TRUE(MakeDirs(dir_.path() + "/a").ok());
  const std::string journal_a = dir_.path() + "/a/ceiling-journal";
  ASSERT_TRUE(WriteCeilingJournal(journal_a, {"boot-1", 33}).ok());
  root_.WriteFile(kCeilingPath, "1\n");
  root_.WriteFile(kCeilingLockPath, FormatCeilingLockHolder(99999, journal_a));
  v1::SpooledJob job = Run(Assignment("default", "b1"), kMetric, "b");
  EXPECT_EQ(job.complete().status(), v1::JOB_STATUS_FAILED);
  EXPECT_NE(job.complete().error().find("left changed by another agent"), std::string::npos)
      << job.complete().error();
  EXPECT_NE(job.complete().error().find("started with 33"), std::string::npos);
  EXPECT_EQ(Ceiling(), 1) << "nothing written";
  // Agent a restarts and recovers (under the lock, as its own holder): then b may go.
  CeilingRecovery r = RecoverCeiling(root_, journal_a, "boot-1");
  EXPECT_EQ(r.outcome, CeilingRecovery::Outcome::kRestored) << r.detail;
  v1::SpooledJob again = Run(Assignment("default", "b2"), kMetric, "b");
  ASSERT_EQ(again.complete().status(), v1::JOB_STATUS_SUCCEEDED) << again.complete().error();
  EXPECT_EQ(again.samples(0).ceiling(), 33);
}

}  // namespace
}  // namespace tlbfleet::agent
