// Faults in the microVM lab (CTest label "vm"), the two that need a real kernel
// (docs/reliability.md, "Faults"):
//
//   AgentKilledMidJobRestoresTheCeilingAndKeepsItsSlot: two guests; a run of one slot whose
//     arms set the ceiling; `kill -9` of the agent holding the slot while its job has the
//     arm's value in the guest's ceiling file; busybox init restarts it on the same state dir.
//     The restarted agent puts back the value the ceiling had before the job (its journal),
//     the job runs again once on the same agent, the other guest never takes the slot, no
//     agent ever holds two leases, and the run ends with exactly its samples.
//   GuestResetMidBootMeasuresThatBootAgainOnOneBootId: a run with `boots: 2`; the guest is
//     reset hard (`lab reset`: its QEMU killed, its supervisor boots it again) in the middle of
//     the first boot. It comes back with the same agent id and a new boot id; the first boot's
//     jobs are measured again on the new boot, what the cut-short boot measured is kept and
//     left out, and the report says so.
//   ControllerKilledWhileTheGuestRebootsLosesNothing: a run with `boots: 2`; `kill -9` of the
//     controller once the guest is rebooting between the boots, restart on the same database
//     and port before the guest is back. The run ends with exactly its samples, boot 1's
//     samples are the ones taken before the reboot, nothing ran twice.
//
// The tests act inside a guest through the lab's control channel (`lab exec N CMD`, a command
// loop on the guest's second serial port). Guests have one vCPU (two guests on the machine's
// two cores). Each test is its own CTest test (--gtest_filter), RUN_SERIAL: they share the
// lab directory. The consoles and the controller's log are printed on failure.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr char kCeilingFile[] = "/sys/kernel/debug/x86/tlb_single_page_flush_ceiling";
constexpr char kJournalFile[] = "/var/lib/tlbfleet-agent/ceiling-journal";

std::string LabScript() { return std::string(TLBFLEET_SOURCE_DIR) + "/deploy/vm-lab/lab"; }
std::string LabDir() { return TLBFLEET_VM_FAULTS_DIR; }

std::string Tail(const std::string& s, size_t n) {
  return s.size() > n ? s.substr(s.size() - n) : s;
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(0, 1);
  return s;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

int Lab(std::vector<std::string> args, std::string* output, bool merge_stderr = true) {
  std::vector<std::string> argv = {"/bin/bash", LabScript()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--out", LabDir(), "--cache", TLBFLEET_VM_LAB_CACHE, "--agent",
                           BinPath("tlbfleet-agent")});
  return RunCommand(argv, output, merge_stderr);
}

// `lab exec N CMD`: CMD's output (trimmed) in guest vmN, or "exec failed: ..." with the exit
// status when the command failed or the guest did not answer.
std::string Exec(int guest, const std::string& command) {
  std::string out;
  int rc = Lab({"exec", std::to_string(guest), "--timeout", "30", command}, &out,
               /*merge_stderr=*/false);
  return rc == 0 ? Trim(out) : "exec failed: status " + std::to_string(rc) + ": " + out;
}

std::string Console(int guest) {
  return ReadWholeFile(LabDir() + "/run/vm" + std::to_string(guest) + ".log");
}

// A controller on 127.0.0.1:`port` ("0": any) over the database in `dir`, restartable on the
// same port (the guests dial the port they were booted with).
class Controller {
 public:
  explicit Controller(std::string dir) : dir_(std::move(dir)) {}

  bool Start(const std::string& port) {
    const std::string ready = dir_ + "/controller.ready";
    std::filesystem::remove(ready);
    process_ = std::make_unique<Process>(
        std::vector<std::string>{BinPath("tlbfleet-controller"), "--grpc-listen",
                                 "127.0.0.1:" + port, "--http-listen", "127.0.0.1:0", "--db", db(),
                                 "--ready-file", ready},
        dir_ + "/controller.log");
    std::smatch m;
    std::string text;
    if (!WaitFor(
            [&] {
              text = ReadWholeFile(ready);
              return std::regex_search(text, m, std::regex("\"grpc_port\":(\\d+)"));
            },
            30s)) {
      return false;
    }
    port_ = m[1];
    fleet_ = v1::FleetService::NewStub(
        grpc::CreateChannel("127.0.0.1:" + port_, grpc::InsecureChannelCredentials()));
    return true;
  }
  void Kill9() {
    process_->Signal(SIGKILL);
    process_->Wait(10s);
  }
  void Signal(int sig) { process_->Signal(sig); }

  std::string db() const { return dir_ + "/fleet.db"; }
  const std::string& port() const { return port_; }
  std::string Log() const { return ReadWholeFile(dir_ + "/controller.log"); }

  // Connected lab hosts by hostname.
  std::map<std::string, v1::Host> Hosts() {
    std::map<std::string, v1::Host> hosts;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    v1::ListHostsResponse response;
    if (!fleet_->ListHosts(&ctx, v1::ListHostsRequest(), &response).ok()) return hosts;
    for (const v1::Host& h : response.hosts()) {
      if (h.connected() && h.info().labels().count("vmlab") == 1) hosts[h.info().hostname()] = h;
    }
    return hosts;
  }

  grpc::Status Submit(const std::string& yaml, std::string* run_id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::SubmitRunRequest request;
    request.set_spec_yaml(yaml);
    request.set_source_name("vm-faults-test.yaml");
    v1::SubmitRunResponse response;
    grpc::Status s = fleet_->SubmitRun(&ctx, request, &response);
    *run_id = response.run_id();
    return s;
  }

  v1::Run WaitForRunEnd(const std::string& run_id, std::chrono::milliseconds timeout) {
    v1::Run run;
    WaitFor(
        [&] {
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + 10s);
          v1::GetRunRequest request;
          request.set_run_id(run_id);
          v1::Run r;
          if (fleet_->GetRun(&ctx, request, &r).ok()) run = r;
          return run.state() == v1::RUN_STATE_SUCCEEDED || run.state() == v1::RUN_STATE_FAILED ||
                 run.state() == v1::RUN_STATE_CANCELLED;
        },
        timeout);
    return run;
  }

 private:
  std::string dir_;
  std::unique_ptr<Process> process_;
  std::string port_;
  std::unique_ptr<v1::FleetService::Stub> fleet_;
};

// Polls the controller's database every 20 ms for as long as it lives: an agent holding two
// rows of jobs in state 'leased' at once, and which agents ever held a lease of `run_id`.
class LeaseWatcher {
 public:
  explicit LeaseWatcher(std::string db_path) : db_path_(std::move(db_path)) {
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        auto two = QueryRows(db_path_,
                             "SELECT agent_id, group_concat(lease_id) FROM jobs WHERE state = "
                             "'leased' GROUP BY agent_id HAVING COUNT(*) > 1");
        std::string run;
        {
          std::lock_guard<std::mutex> lock(mu_);
          run = run_id_;
          for (const auto& row : two) two_leases_ += row[0] + " held " + row[1] + "; ";
        }
        if (!run.empty()) {
          auto holders =
              QueryRows(db_path_, "SELECT DISTINCT agent_id FROM jobs WHERE run_id = " + run +
                                      " AND state = 'leased'");
          std::lock_guard<std::mutex> lock(mu_);
          for (const auto& row : holders) holders_.insert(row[0]);
        }
        std::this_thread::sleep_for(20ms);
      }
    });
  }
  ~LeaseWatcher() {
    stop_.store(true);
    thread_.join();
  }
  void WatchRun(const std::string& run_id) {
    std::lock_guard<std::mutex> lock(mu_);
    run_id_ = run_id;
  }
  // Empty when no agent ever held two leases.
  std::string TwoLeases() {
    std::lock_guard<std::mutex> lock(mu_);
    return two_leases_;
  }
  std::set<std::string> Holders() {
    std::lock_guard<std::mutex> lock(mu_);
    return holders_;
  }

 private:
  std::string db_path_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::string run_id_;             // guarded by mu_
  std::string two_leases_;         // guarded by mu_
  std::set<std::string> holders_;  // guarded by mu_
};

class VmFaultTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (controller_) controller_->Signal(SIGCONT);  // a test that failed while it was stopped
    if (lab_up_) {
      std::string out;
      Lab({"down"}, &out);
    }
  }

  // Builds the lab (kernel cached), starts a controller on port 0 and `guests` one-vCPU
  // guests, and waits for every guest's agent.
  void Boot(int guests) {
    std::string out;
    ASSERT_EQ(Lab({"build"}, &out), 0) << "lab build failed:\n" << out;
    controller_ = std::make_unique<Controller>(dir_.path());
    ASSERT_TRUE(controller_->Start("0")) << controller_->Log();
    Lab({"down"}, &out);  // guests left over from an interrupted run
    lab_up_ = true;
    ASSERT_EQ(
        Lab({"up", std::to_string(guests), "--smp", "1", "--controller-port", controller_->port()},
            &out),
        0)
        << out;
    ASSERT_TRUE(
        WaitFor([&] { return controller_->Hosts().size() == static_cast<size_t>(guests); }, 180s))
        << "the guests' agents did not connect within 180 s" << Diagnostics(guests);
  }

  // Guest number of an agent id (run/vmN.agent-id), 0 when none.
  int GuestOf(const std::string& agent_id) {
    for (int n = 1; n <= 9; ++n) {
      if (Trim(ReadWholeFile(LabDir() + "/run/vm" + std::to_string(n) + ".agent-id")) == agent_id) {
        return n;
      }
    }
    return 0;
  }

  std::string Diagnostics(int guests) {
    std::string text;
    for (int n = 1; n <= guests; ++n) {
      text += "\n--- console of vm" + std::to_string(n) + " (tail) ---\n" + Tail(Console(n), 4000);
    }
    return text + "\n--- controller (tail) ---\n" +
           (controller_ ? Tail(controller_->Log(), 4000) : "");
  }

  int64_t Q(const std::string& sql) { return QueryInt(controller_->db(), sql); }

  TempDir dir_;
  std::unique_ptr<Controller> controller_;
  bool lab_up_ = false;
};

// One slot, two arms that set the ceiling, jobs of 6 s (about 8 s in a TCG guest) to kill in.
// ebizzy stores records_per_sec and one per-thread figure: 2 samples per job at 1 thread.
constexpr char kKillSpec[] = R"(
name: vm-faults-agent-kill
benchmark: ebizzy
params: {threads: 1, seconds: 6}
iterations: 1
arms:
  - {name: ceiling-512, ceiling: 512}
  - {name: ceiling-1,   ceiling: 1}
hosts: {count: 1, labels: {vmlab: "1"}}
)";
constexpr int kSamplesPerJob = 2;
// What the ceiling holds before the run: neither the kernel's default (33) nor an arm's value,
// so a restore to the default would not pass for a restore of the journal.
constexpr int kBefore = 77;

TEST_F(VmFaultTest, AgentKilledMidJobRestoresTheCeilingAndKeepsItsSlot) {
  const auto t0 = Clock::now();
  ASSERT_NO_FATAL_FAILURE(Boot(2));
  const std::string set_before =
      "echo " + std::to_string(kBefore) + " > " + kCeilingFile + " && cat " + kCeilingFile;
  ASSERT_EQ(Exec(1, set_before), std::to_string(kBefore));
  ASSERT_EQ(Exec(2, set_before), std::to_string(kBefore));

  LeaseWatcher watcher(controller_->db());
  std::string run_id;
  grpc::Status submitted = controller_->Submit(kKillSpec, &run_id);
  ASSERT_TRUE(submitted.ok()) << submitted.error_message();
  watcher.WatchRun(run_id);
  const std::string r = " WHERE run_id = " + run_id;

  // Mid-job: the slot's holder has a lease and the guest's ceiling file holds its arm's value.
  std::string holder, lease, arm_value;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto rows = QueryRows(controller_->db(), "SELECT agent_id, lease_id, arm FROM jobs" + r +
                                                     " AND state = 'leased'");
        if (rows.size() != 1) return false;
        holder = rows[0][0];
        lease = rows[0][1];
        arm_value = rows[0][2] == "ceiling-512" ? "512" : "1";
        return true;
      },
      60s))
      << Diagnostics(2);
  const int victim = GuestOf(holder);
  ASSERT_NE(victim, 0) << "no guest has agent id " << holder;
  const int other = victim == 1 ? 2 : 1;
  std::string seen;
  ASSERT_TRUE(WaitFor(
      [&] { return (seen = Exec(victim, std::string("cat ") + kCeilingFile)) == arm_value; }, 30s))
      << "vm" << victim << "'s ceiling file never showed the arm's " << arm_value
      << " during lease " << lease << "; last read: " << seen << Diagnostics(2);
  // The agent journaled the value the job found.
  EXPECT_NE(
      Exec(victim, std::string("cat ") + kJournalFile).find("original " + std::to_string(kBefore)),
      std::string::npos);
  ASSERT_EQ(Q("SELECT COUNT(*) FROM jobs WHERE lease_id = '" + lease + "' AND state = 'leased'"), 1)
      << "the job ended before the kill: make it longer";

  // Hold the controller (SIGSTOP) from just before the kill until the restarted agent is past
  // its start-up, so no job can write the ceiling again before it is read. Shorter than the
  // 10 s keepalive timeout, so the other guest's stream survives.
  const std::string console_before = Console(victim);
  const size_t starts_before = Count(console_before, "state recovering -> connecting");
  controller_->Signal(SIGSTOP);
  const auto stopped = Clock::now();
  EXPECT_EQ(Exec(victim, "kill -9 $(pidof tlbfleet-agent)"), "");
  const bool restarted = WaitFor(
      [&] { return Count(Console(victim), "state recovering -> connecting") > starts_before; }, 8s);
  const std::string after = Exec(victim, std::string("cat ") + kCeilingFile);
  const std::string journal =
      Exec(victim, std::string("test -e ") + kJournalFile + " && echo kept");
  controller_->Signal(SIGCONT);
  const double held_s = Seconds(Clock::now() - stopped);
  ASSERT_TRUE(restarted) << "the agent was not restarted within 8 s of the kill" << Diagnostics(2);
  EXPECT_EQ(after, std::to_string(kBefore))
      << "the restarted agent did not put back the ceiling the job found" << Diagnostics(2);
  EXPECT_NE(journal, "kept") << "the journal outlived the restore";
  EXPECT_NE(Console(victim).find("flush ceiling restored to " + std::to_string(kBefore) +
                                 " after an unclean stop in this boot"),
            std::string::npos);

  v1::Run run = controller_->WaitForRunEnd(run_id, 150s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED)
      << run_id << ": " << run.error() << Diagnostics(2);
  // Exact samples: 2 jobs, each once.
  EXPECT_EQ(Q("SELECT COUNT(*) FROM jobs" + r), 2);
  EXPECT_EQ(Q("SELECT COUNT(*) FROM samples" + r), 2 * kSamplesPerJob);
  EXPECT_EQ(run.samples(), static_cast<uint64_t>(2 * kSamplesPerJob));
  EXPECT_EQ(Q("SELECT COUNT(*) FROM (SELECT 1 FROM samples" + r +
              " GROUP BY arm, iteration, job_id, metric, series HAVING COUNT(*) > 1)"),
            0);
  // The killed job ran again once, on the same agent; the other job once.
  EXPECT_EQ(Q("SELECT attempts FROM jobs WHERE lease_id IS NOT NULL AND id = (SELECT id FROM jobs" +
              r + " AND arm = '" + (arm_value == "512" ? "ceiling-512" : "ceiling-1") + "')"),
            2);
  EXPECT_EQ(Q("SELECT MAX(attempts) FROM jobs" + r), 2);
  EXPECT_EQ(Q("SELECT COUNT(*) FROM jobs" + r + " AND attempts = 1"), 1);
  // One agent per slot: the other guest never took it.
  EXPECT_EQ(Q("SELECT COUNT(DISTINCT agent_id) FROM samples" + r), 1);
  EXPECT_EQ(Q("SELECT COUNT(*) FROM samples" + r + " AND agent_id = '" + holder + "'"),
            2 * kSamplesPerJob);
  EXPECT_EQ(watcher.Holders(), std::set<std::string>{holder});
  EXPECT_EQ(watcher.TwoLeases(), "") << "an agent held two leases";
  EXPECT_NE(controller_->Log().find("the agent came back without it; re-queued"),
            std::string::npos);
  // Every sample says its arm's ceiling was applied.
  for (const auto& row : QueryRows(controller_->db(),
                                   "SELECT arm, MIN(ceiling_applied), MIN(ceiling), MAX(ceiling) "
                                   "FROM samples" +
                                       r + " GROUP BY arm")) {
    const std::string want = row[0] == "ceiling-512" ? "512" : "1";
    EXPECT_EQ(row[1], "1") << row[0];
    EXPECT_EQ(row[2], want) << row[0];
    EXPECT_EQ(row[3], want) << row[0];
  }
  // Afterwards both guests hold the value they had before the run.
  EXPECT_EQ(Exec(victim, std::string("cat ") + kCeilingFile), std::to_string(kBefore));
  EXPECT_EQ(Exec(other, std::string("cat ") + kCeilingFile), std::to_string(kBefore));

  const double total_s = Seconds(Clock::now() - t0);
  std::printf("vm-faults agent kill: controller held %.1f s, whole test %.1f s\n", held_s, total_s);
  ::testing::Test::RecordProperty("seconds", std::to_string(total_s));
}

// Two boots, one arm pair, one iteration: 4 jobs, 2 per boot, one reboot between the boots.
constexpr char kBootsSpec[] = R"(
name: vm-faults-controller-kill
benchmark: ebizzy
params: {threads: 1, seconds: 1}
iterations: 1
boots: 2
arms:
  - {name: ceiling-512, ceiling: 512}
  - {name: ceiling-1,   ceiling: 1}
hosts: {count: 1, labels: {vmlab: "1"}}
)";

TEST_F(VmFaultTest, ControllerKilledWhileTheGuestRebootsLosesNothing) {
  const auto t0 = Clock::now();
  ASSERT_NO_FATAL_FAILURE(Boot(1));
  const std::string first_boot = controller_->Hosts()["vm1"].info().boot_id();
  ASSERT_FALSE(first_boot.empty());

  LeaseWatcher watcher(controller_->db());
  std::string run_id;
  grpc::Status submitted = controller_->Submit(kBootsSpec, &run_id);
  ASSERT_TRUE(submitted.ok()) << submitted.error_message();
  watcher.WatchRun(run_id);
  const std::string r = " WHERE run_id = " + run_id;
  ASSERT_EQ(Q("SELECT COUNT(*) FROM jobs" + r), 4);

  // The guest reboots between the boots: its console says so.
  const size_t ups = Count(Console(1), "tlbfleet-vm: vm1 up at");
  ASSERT_EQ(ups, 1u);
  ASSERT_TRUE(WaitFor(
      [&] { return Console(1).find("reboot: Restarting system") != std::string::npos; }, 150s))
      << "the guest did not reboot" << Diagnostics(1);
  // Boot 1's samples, as they were before the reboot, and the stored reboot request.
  const auto boot1 = QueryRows(
      controller_->db(), "SELECT source_id, seq, boot_id, arm, metric, value FROM samples" + r +
                             " ORDER BY source_id, seq");
  EXPECT_EQ(boot1.size(), 2u * kSamplesPerJob);
  for (const auto& row : boot1) EXPECT_EQ(row[2], first_boot);
  EXPECT_EQ(Q("SELECT COUNT(*) FROM reboot_requests WHERE run_id = " + run_id), 1);

  controller_->Kill9();
  ASSERT_TRUE(controller_->Start(controller_->port())) << controller_->Log();
  // The controller was back before the guest.
  EXPECT_EQ(Count(Console(1), "tlbfleet-vm: vm1 up at"), 1u)
      << "the guest came back before the controller: the restart proved nothing";

  v1::Run run = controller_->WaitForRunEnd(run_id, 180s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED)
      << run_id << ": " << run.error() << Diagnostics(1);
  EXPECT_EQ(Count(Console(1), "tlbfleet-vm: vm1 up at"), 2u) << "one reboot";
  EXPECT_EQ(run.boots(), 2u);
  EXPECT_EQ(Q("SELECT COUNT(*) FROM samples" + r), 4 * kSamplesPerJob);
  EXPECT_EQ(run.samples(), static_cast<uint64_t>(4 * kSamplesPerJob));
  EXPECT_EQ(Q("SELECT MAX(attempts) FROM jobs" + r), 1) << "a job ran twice";
  EXPECT_EQ(Q("SELECT COUNT(*) FROM (SELECT 1 FROM samples" + r +
              " GROUP BY arm, iteration, job_id, metric, series HAVING COUNT(*) > 1)"),
            0);
  EXPECT_EQ(watcher.TwoLeases(), "") << "an agent held two leases";
  EXPECT_EQ(Q("SELECT COUNT(*) FROM reboot_requests"), 0);
  // Boot 1's samples are kept as they were; boot 2's come from another boot of the guest.
  const auto all = QueryRows(controller_->db(),
                             "SELECT source_id, seq, boot_id, arm, metric, value FROM samples" + r +
                                 " ORDER BY source_id, seq");
  ASSERT_EQ(all.size(), 4u * kSamplesPerJob);
  for (size_t i = 0; i < boot1.size(); ++i) EXPECT_EQ(all[i], boot1[i]) << "sample " << i;
  std::set<std::string> later_boots;
  for (size_t i = boot1.size(); i < all.size(); ++i) later_boots.insert(all[i][2]);
  EXPECT_EQ(later_boots.size(), 1u);
  EXPECT_EQ(later_boots.count(first_boot), 0u) << "boot 2 ran on boot 1's boot_id";
  // Each boot holds both arms, each with its ceiling.
  for (const auto& row :
       QueryRows(controller_->db(),
                 "SELECT boot_id, arm, COUNT(*), MIN(ceiling_applied), MIN(ceiling) "
                 "FROM samples" +
                     r + " GROUP BY 1, 2")) {
    EXPECT_EQ(row[2], std::to_string(kSamplesPerJob)) << row[0] << " " << row[1];
    EXPECT_EQ(row[3], "1");
    EXPECT_EQ(row[4], row[1] == "ceiling-512" ? "512" : "1");
  }

  const double total_s = Seconds(Clock::now() - t0);
  std::printf("vm-faults controller kill during a reboot: whole test %.1f s\n", total_s);
  ::testing::Test::RecordProperty("seconds", std::to_string(total_s));
}

// Two boots of two arms, two iterations each: 8 jobs, 4 per boot. The guest is reset (its QEMU
// killed, its supervisor boots it again) once the first boot has finished a job.
constexpr char kResetSpec[] = R"(
name: vm-faults-guest-reset
benchmark: ebizzy
params: {threads: 1, seconds: 2}
iterations: 2
boots: 2
arms:
  - {name: ceiling-512, ceiling: 512}
  - {name: ceiling-1,   ceiling: 1}
hosts: {count: 1, labels: {vmlab: "1"}}
on_host_lost: {action: wait}
)";

TEST_F(VmFaultTest, GuestResetMidBootMeasuresThatBootAgainOnOneBootId) {
  const auto t0 = Clock::now();
  ASSERT_NO_FATAL_FAILURE(Boot(1));
  const std::string first_boot = controller_->Hosts()["vm1"].info().boot_id();
  ASSERT_FALSE(first_boot.empty());
  std::string run_id;
  grpc::Status submitted = controller_->Submit(kResetSpec, &run_id);
  ASSERT_TRUE(submitted.ok()) << submitted.error_message();
  const std::string r = " WHERE run_id = " + run_id;
  // Mid-boot: a job of the first boot done, the next one running.
  ASSERT_TRUE(WaitFor(
      [&] {
        return Q("SELECT COUNT(*) FROM jobs" + r + " AND state = 'succeeded'") >= 1 &&
               Q("SELECT COUNT(*) FROM jobs" + r + " AND state = 'leased'") == 1;
      },
      240s))
      << Diagnostics(1);
  std::string out;
  ASSERT_EQ(Lab({"reset", "1"}, &out), 0) << out;
  const auto reset_at = Clock::now();

  v1::Run run = controller_->WaitForRunEnd(run_id, 480s);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED)
      << run_id << ": " << run.error() << Diagnostics(1);
  // The cut-short boot is recorded and said so.
  ASSERT_EQ(run.abandoned_size(), 1) << Diagnostics(1);
  EXPECT_EQ(run.abandoned(0).boot_index(), 0);
  EXPECT_EQ(run.abandoned(0).boot_id(), first_boot);
  EXPECT_GE(run.abandoned(0).jobs(), 1u);
  EXPECT_NE(run.stop_reason().find("not as planned: boot 1 of slot 0"), std::string::npos)
      << run.stop_reason();
  // Every counted boot index comes from one boot id, none of them the cut-short one; the
  // cut-short boot's samples are kept, all of that boot.
  const std::string counted =
      " FROM samples s JOIN jobs j ON j.id = s.job_id WHERE s.run_id = " + run_id +
      " AND j.abandoned = ''";
  EXPECT_EQ(Q("SELECT COUNT(*)" + counted), 8 * kSamplesPerJob);
  const auto per_index = QueryRows(controller_->db(),
                                   "SELECT j.boot_index, COUNT(DISTINCT "
                                   "s.boot_id), MIN(s.boot_id)" +
                                       counted + " GROUP BY j.boot_index");
  ASSERT_EQ(per_index.size(), 2u);
  for (const auto& row : per_index) {
    EXPECT_EQ(row[1], "1") << "boot index " << row[0] << " spans boots";
    EXPECT_NE(row[2], first_boot) << "boot index " << row[0];
  }
  EXPECT_NE(per_index[0][2], per_index[1][2]);
  EXPECT_EQ(Q("SELECT COUNT(*) FROM samples s JOIN jobs j ON j.id = s.job_id WHERE s.run_id = " +
              run_id + " AND j.abandoned <> '' AND s.boot_id <> '" + first_boot + "'"),
            0);
  EXPECT_GE(Q("SELECT COUNT(*) FROM samples s JOIN jobs j ON j.id = s.job_id WHERE s.run_id = " +
              run_id + " AND j.abandoned <> ''"),
            kSamplesPerJob);
  // The report says what it left out.
  std::string text;
  ASSERT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", "127.0.0.1:" + controller_->port(),
                        "compare", run_id},
                       &text, true),
            0)
      << text;
  EXPECT_NE(text.find("left out: "), std::string::npos) << text;
  EXPECT_NE(text.find("measured again on boot_id"), std::string::npos) << text;

  std::printf(
      "vm-faults guest reset mid-boot: back and done %.1f s after the reset, whole test "
      "%.1f s\n",
      Seconds(Clock::now() - reset_at), Seconds(Clock::now() - t0));
  ::testing::Test::RecordProperty("seconds", std::to_string(Seconds(Clock::now() - t0)));
}

}  // namespace
}  // namespace tlbfleet::testing
