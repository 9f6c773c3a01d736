// The microVM lab end to end (CTest label "vm"): Debian's own kernel in a QEMU (TCG) guest,
// the agent in its initramfs dialling a controller on this host through QEMU user networking
// (10.0.2.2 = the host's 127.0.0.1), a real ceiling write and a real tlb:tlb_flush profile.
//
//   1. `deploy/vm-lab/lab build` (kernel package cached) and a controller on 127.0.0.1:0;
//   2. `lab up 1 --controller-port P`; wait for the guest's agent (ListHosts);
//   3. its HostInfo: the lab kernel's release, ceiling readable + writable, value 33;
//   4. tlbflush (Alex Shi's munmap loop: 64 munmaps of 128 pages, one reader thread) with
//      arms `ceiling: 1`, `ceiling: 1024` and `ceiling: default`, `monitors: [flush_profile]`;
//   5. from the SQLite file: every sample says ceiling_applied=1 and ceiling_observed=1 with
//      its arm's value (default: 33, what the boot started with). The flush profile holds
//      only the workload's processes, so it is checked against the 64 unmaps exactly: under
//      ceiling 1 each unmap is one full local flush (reason 3, pages=-1) and none is ranged;
//      under 1024 each is one ranged local flush of at least 128 pages (when an unmap frees
//      a page table the range grows back to that table's 2 MiB block: up to 639 pages, so
//      under a ceiling of 512 about one unmap in four became a full flush, measured) and the
//      full ones are only the workload's own setup and exit; a few dozen flushes of exec and
//      setup are the only slack.
//      The kprobes time every call: a cost per size bucket, for at least the 64 unmaps;
//   6. the controller is restarted on the same port, the agent reconnects and re-reports its
//      HostInfo: same boot_id as the samples (no reboot in between) and ceiling 33 again.
//
// The guest's console log is printed on failure; TLBFLEET_KEEP_TEST_DIRS=1 keeps the
// controller's directory (database, log).

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string LabScript() { return std::string(TLBFLEET_SOURCE_DIR) + "/deploy/vm-lab/lab"; }

std::string LabDir() {
  const char* env = std::getenv("TLBFLEET_VM_LAB_TEST_DIR");
  return env != nullptr ? env : TLBFLEET_VM_LAB_DIR;
}

std::string Tail(const std::string& text, size_t max_chars) {
  return text.size() <= max_chars ? text : "…" + text.substr(text.size() - max_chars);
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// `lab <args...> --out <lab dir> --cache <kernel cache> --agent <build>/bin/tlbfleet-agent`.
int Lab(std::vector<std::string> args, std::string* output) {
  std::vector<std::string> argv = {"/bin/bash", LabScript()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--out", LabDir(), "--cache", TLBFLEET_VM_LAB_CACHE, "--agent",
                           BinPath("tlbfleet-agent")});
  return RunCommand(argv, output, /*merge_stderr=*/true);
}

std::string GuestConsole() { return ReadWholeFile(LabDir() + "/run/vm1.log"); }

// Stops the lab's guests however the test ends.
struct LabGuard {
  ~LabGuard() {
    std::string out;
    Lab({"down"}, &out);
  }
};

// A controller process on 127.0.0.1 (port 0 = any, or a fixed port for a restart), with a
// FleetService stub.
class HostController {
 public:
  HostController(const std::string& dir, int port, const std::string& log_name) {
    std::string ready = dir + "/" + log_name + ".ready";
    std::remove(ready.c_str());
    process_ = std::make_unique<Process>(
        std::vector<std::string>{BinPath("tlbfleet-controller"), "--grpc-listen",
                                 "127.0.0.1:" + std::to_string(port), "--http-listen",
                                 "127.0.0.1:0", "--db", dir + "/fleet.db", "--ready-file", ready},
        dir + "/" + log_name + ".log");
    std::string text;
    WaitFor(
        [&] {
          text = ReadWholeFile(ready);
          return text.find('}') != std::string::npos || !process_->Running();
        },
        30s);
    std::smatch m;
    if (std::regex_search(text, m, std::regex("\"grpc_port\":(\\d+)"))) port_ = std::stoi(m[1]);
    stub_ = v1::FleetService::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                                          grpc::InsecureChannelCredentials()));
  }

  int port() const { return port_; }
  Process& process() { return *process_; }
  v1::FleetService::Stub& fleet() { return *stub_; }

  std::optional<v1::Host> ConnectedHost(const std::string& hostname) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    v1::ListHostsResponse response;
    if (!stub_->ListHosts(&ctx, v1::ListHostsRequest(), &response).ok()) return std::nullopt;
    for (const v1::Host& h : response.hosts()) {
      if (h.connected() && h.info().hostname() == hostname &&
          h.info().labels().count("vmlab") == 1) {
        return h;
      }
    }
    return std::nullopt;
  }

  v1::Run GetRun(const std::string& run_id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::GetRunRequest request;
    request.set_run_id(run_id);
    v1::Run run;
    stub_->GetRun(&ctx, request, &run);
    return run;
  }

 private:
  std::unique_ptr<Process> process_;
  int port_ = 0;
  std::unique_ptr<v1::FleetService::Stub> stub_;
};

// Rows of a query, every column as text (NULL as "").
std::vector<std::vector<std::string>> Query(const std::string& db_path, const std::string& sql) {
  std::vector<std::vector<std::string>> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    ADD_FAILURE() << "cannot open " << db_path;
    return rows;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sqlite3_errmsg(db) << " in " << sql;
  } else {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
        const unsigned char* text = sqlite3_column_text(stmt, i);
        row.emplace_back(text != nullptr ? reinterpret_cast<const char*>(text) : "");
      }
      rows.push_back(std::move(row));
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return rows;
}

// 3 arms x 1 iteration of the munmap loop: 32 MiB cut into 128-page pieces = 64 munmaps, a
// flush of 128 (to 639) pages each, above the default ceiling (33) and between the values
// of the two other arms.
constexpr int kUnmaps = 64;
// Full or large flushes of exec, ld.so's mprotects, thread setup and exit: 3 to 13 per job
// in the lab; more would be another process's.
constexpr int kSetupSlack = 40;
constexpr char kCeilingSpec[] = R"(
name: vm-lab-ceiling-1-vs-1024
benchmark: tlbflush
params: {threads: 1, entries: 128, region_mb: 32, flush: munmap}
iterations: 1
arms:
  - {name: ceiling-1,   ceiling: 1}
  - {name: ceiling-1024, ceiling: 1024}
  - {name: default,      ceiling: default}
monitors: [flush_profile]
hosts: {count: 1, labels: {vmlab: "1"}}
)";

// One arm's local mm shootdowns (reason 3: one per flush_tlb_mm_range call of the workload)
// by size, and the calls timed by the cost probes.
struct ArmFigures {
  double full = 0;        // reason=3,pages=-1
  double ranged_big = 0;  // reason=3 in 65-128, 129-256, 257-512, >512
  double timed_calls = 0;
  std::map<std::string, double> series;

  std::string Describe() const {
    std::string s;
    for (const auto& [k, v] : series) s += " " + k + "=" + std::to_string(static_cast<int64_t>(v));
    return s;
  }
};

TEST(VmLab, CeilingIsReallyWrittenAndTheFlushProfileFollowsIt) {
  TempDir dir;
  std::cout << "lab dir " << LabDir() << ", controller dir " << dir.path() << std::endl;

  // 1. The lab (the kernel download is cached; the initramfs follows the agent binary).
  auto t0 = Clock::now();
  std::string out;
  int rc = Lab({"build"}, &out);
  ASSERT_EQ(rc, 0) << "lab build failed:\n" << out;
  double build_s = Seconds(Clock::now() - t0);
  std::string release = ReadWholeFile(LabDir() + "/release");
  while (!release.empty() && std::isspace(static_cast<unsigned char>(release.back()))) {
    release.pop_back();
  }
  ASSERT_FALSE(release.empty()) << "lab build wrote no release file\n" << out;

  auto controller = std::make_unique<HostController>(dir.path(), 0, "controller");
  ASSERT_GT(controller->port(), 0) << controller->process().Log();

  // 2. One guest.
  LabGuard guard;
  Lab({"down"}, &out);  // a guest left over from an interrupted run
  auto boot_start = Clock::now();
  rc = Lab({"up", "1", "--controller-port", std::to_string(controller->port())}, &out);
  ASSERT_EQ(rc, 0) << "lab up failed:\n" << out;
  std::optional<v1::Host> host;
  // Deadlines: the CTest timeout is 600 s and a killed test leaves its guest running (the
  // next run's `lab down` stops it), so build + 180 + 200 + 60 s stay well inside it.
  ASSERT_TRUE(WaitFor([&] { return (host = controller->ConnectedHost("vm1")).has_value(); }, 180s))
      << "the guest's agent did not connect within 180 s\n--- lab up\n"
      << out << "\n--- guest console\n"
      << Tail(GuestConsole(), 6000) << "\n--- controller\n"
      << Tail(controller->process().Log(), 3000);
  double boot_s = Seconds(Clock::now() - boot_start);

  // 3. What the guest says about itself.
  const v1::HostInfo& info = host->info();
  EXPECT_EQ(info.kernel_release(), release);
  EXPECT_EQ(info.labels().at("vmlab"), "1");
  EXPECT_NE(info.kernel_cmdline().find("tlbfleet.controller=10.0.2.2:" +
                                       std::to_string(controller->port())),
            std::string::npos)
      << info.kernel_cmdline();
  ASSERT_TRUE(info.ceiling().readable() && info.ceiling().writable())
      << "ceiling not usable in the guest: " << info.ceiling().reason();
  ASSERT_TRUE(info.ceiling().has_value());
  EXPECT_EQ(info.ceiling().value(), 33);
  const std::string boot_id = info.boot_id();
  const std::string agent_id = host->agent_id();

  // 4. The run.
  std::string run_id;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::SubmitRunRequest request;
    request.set_spec_yaml(kCeilingSpec);
    request.set_source_name("vm-lab-test.yaml");
    v1::SubmitRunResponse response;
    grpc::Status s = controller->fleet().SubmitRun(&ctx, request, &response);
    ASSERT_TRUE(s.ok()) << "submit refused: " << s.error_message();
    EXPECT_EQ(response.jobs(), 3u);
    run_id = response.run_id();
  }
  auto run_start = Clock::now();
  v1::Run run;
  WaitFor(
      [&] {
        run = controller->GetRun(run_id);
        return run.state() == v1::RUN_STATE_SUCCEEDED || run.state() == v1::RUN_STATE_FAILED ||
               run.state() == v1::RUN_STATE_CANCELLED;
      },
      200s);
  double run_s = Seconds(Clock::now() - run_start);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED)
      << "run " << run_id << ": " << run.error() << "\n--- guest console\n"
      << Tail(GuestConsole(), 6000) << "\n--- controller\n"
      << Tail(controller->process().Log(), 3000);

  // 5. The stored samples.
  const std::string db = dir.path() + "/fleet.db";
  const std::string where = "WHERE run_id = " + std::to_string(std::stoll(run_id));
  auto ceilings = Query(db,
                        "SELECT arm, ceiling_applied, IFNULL(ceiling, ''), COUNT(*), "
                        "COUNT(DISTINCT boot_id), MIN(boot_id), MIN(host) FROM samples " +
                            where + " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3");
  std::map<std::string, std::string> expected = {
      {"ceiling-1", "1"}, {"ceiling-1024", "1024"}, {"default", "33"}};
  ASSERT_EQ(ceilings.size(), 3u) << "each arm's samples must carry exactly one ceiling";
  for (const auto& row : ceilings) {
    SCOPED_TRACE("arm " + row[0]);
    ASSERT_TRUE(expected.count(row[0]) == 1);
    EXPECT_EQ(row[1], "1") << "ceiling_applied";
    EXPECT_EQ(row[2], expected[row[0]]) << "the ceiling read back in the guest";
    EXPECT_EQ(row[4], "1");
    EXPECT_EQ(row[5], boot_id);
    EXPECT_EQ(row[6], "vm1");
  }

  auto observed = Query(db, "SELECT arm, MIN(ceiling_observed), COUNT(*) FROM samples " + where +
                                " GROUP BY 1 ORDER BY 1");
  EXPECT_EQ(observed.size(), 3u);
  for (const auto& row : observed) {
    EXPECT_EQ(row[1], "1") << "arm " << row[0] << ": a sample without an observed ceiling";
  }

  std::map<std::string, ArmFigures> arms;
  for (const auto& row : Query(db, "SELECT arm, metric, series, SUM(value) FROM samples " + where +
                                       " AND metric IN ('tlb_flush_events', 'tlb_flush_lost', "
                                       "'tlb_flush_cost_calls', 'tlb_flush_cost_unavailable', "
                                       "'tlb_flush_cost_cycles') GROUP BY 1, 2, 3")) {
    ArmFigures& a = arms[row[0]];
    const double v = std::stod(row[3]);
    a.series[row[1] + "/" + row[2]] = v;
    if (row[1] == "tlb_flush_cost_calls") a.timed_calls += v;
    if (row[1] != "tlb_flush_events") continue;
    if (row[2] == "reason=3,pages=-1") a.full += v;
    for (const char* b : {"65-128", "129-256", "257-512", ">512"}) {
      if (row[2] == std::string("reason=3,pages=") + b) a.ranged_big += v;
    }
  }
  ArmFigures& one = arms["ceiling-1"];
  ArmFigures& many = arms["ceiling-1024"];
  std::cout << "ceiling 1:" << one.Describe() << "\nceiling 1024:" << many.Describe()
            << "\ndefault:" << arms["default"].Describe() << std::endl;
  for (const auto& [arm, a] : arms) {
    SCOPED_TRACE("arm " + arm + ":" + a.Describe());
    EXPECT_EQ(a.series.count("tlb_flush_lost/"), 1u);
    EXPECT_EQ(a.series.count("tlb_flush_lost/") ? a.series.at("tlb_flush_lost/") : -1, 0);
    // Debian's kernel has kprobe events: every unmap's call is timed.
    for (const auto& [k, v] : a.series) {
      EXPECT_NE(k.rfind("tlb_flush_cost_unavailable/", 0), 0u) << k;
    }
    EXPECT_GE(a.timed_calls, kUnmaps);
  }
  {
    SCOPED_TRACE("ceiling 1:" + one.Describe());
    EXPECT_GE(one.full, kUnmaps) << "each unmap must be one full local flush (pages=-1)";
    EXPECT_LE(one.full, kUnmaps + kSetupSlack) << "more full flushes than the workload made";
    EXPECT_EQ(one.ranged_big, 0) << "no ranged flush above the ceiling of 1";
    EXPECT_GT(one.series["tlb_flush_cost_cycles/pages=-1,stat=mean"], 0);
    EXPECT_GE(one.series["tlb_flush_cost_calls/pages=-1"], kUnmaps);
  }
  {
    SCOPED_TRACE("ceiling 1024:" + many.Describe());
    EXPECT_GE(many.ranged_big, kUnmaps) << "each unmap must be one ranged local flush";
    EXPECT_LE(many.ranged_big, kUnmaps + kSetupSlack);
    EXPECT_LE(many.full, 10) << "full local flushes beyond the workload's setup and exit";
    EXPECT_GE(many.series["tlb_flush_cost_calls/pages=65-128"], 1);
    EXPECT_GT(many.series["tlb_flush_cost_cycles/pages=65-128,stat=mean"], 0);
  }

  // 6. The ceiling after the run. The agent reports HostInfo (with a fresh probe of the
  // ceiling) when it connects, so restart the controller on the same port and database.
  const int port = controller->port();
  controller->process().Signal(SIGTERM);
  ASSERT_NE(controller->process().Wait(30s), -1) << "controller did not stop on SIGTERM";
  controller = std::make_unique<HostController>(dir.path(), port, "controller-restarted");
  ASSERT_EQ(controller->port(), port) << controller->process().Log();
  ASSERT_TRUE(WaitFor([&] { return (host = controller->ConnectedHost("vm1")).has_value(); }, 60s))
      << "the guest's agent did not reconnect\n--- guest console\n"
      << Tail(GuestConsole(), 4000);
  EXPECT_EQ(host->agent_id(), agent_id);
  EXPECT_EQ(host->info().boot_id(), boot_id)
      << "the guest rebooted: the check below would prove nothing";
  ASSERT_TRUE(host->info().ceiling().has_value()) << host->info().ceiling().reason();
  EXPECT_EQ(host->info().ceiling().value(), 33) << "the guest's ceiling was not restored";

  std::printf(
      "vm-lab timings: lab build %.1f s, boot to agent connected %.1f s, "
      "3-job tlbflush run %.1f s\n",
      build_s, boot_s, run_s);
  ::testing::Test::RecordProperty("lab_build_seconds", std::to_string(build_s));
  ::testing::Test::RecordProperty("boot_to_connected_seconds", std::to_string(boot_s));
  ::testing::Test::RecordProperty("run_seconds", std::to_string(run_s));
}

// Adaptive boots with real reboots: at least 2 boots (so at least one reboot of the guest),
// at most 3; a 0.01 % target that ebizzy on TCG never reaches, so the run stops either when
// the verdict settles after 2 boots or at the maximum of 3.
constexpr char kBootsSpec[] = R"(
name: vm-lab-boots
benchmark: ebizzy
params: {threads: 1, seconds: 1}
iterations: 2
boots: {min: 2, max: 3, target_ci: 0.01%}
arms:
  - {name: ceiling-1,   ceiling: 1}
  - {name: ceiling-512, ceiling: 512}
hosts: {count: 1, labels: {vmlab: "1"}}
)";

TEST(VmLab, RunsWithSeveralBootsRebootTheGuestBetweenThem) {
  TempDir dir;
  std::string out;
  ASSERT_EQ(Lab({"build"}, &out), 0) << "lab build failed:\n" << out;
  auto controller = std::make_unique<HostController>(dir.path(), 0, "controller");
  ASSERT_GT(controller->port(), 0) << controller->process().Log();
  LabGuard guard;
  Lab({"down"}, &out);
  ASSERT_EQ(Lab({"up", "1", "--controller-port", std::to_string(controller->port())}, &out), 0)
      << "lab up failed:\n"
      << out;
  std::optional<v1::Host> host;
  ASSERT_TRUE(WaitFor([&] { return (host = controller->ConnectedHost("vm1")).has_value(); }, 180s))
      << "the guest's agent did not connect within 180 s\n--- guest console\n"
      << Tail(GuestConsole(), 6000);
  ASSERT_TRUE(host->info().can_reboot()) << "the lab's agent runs with --reboot-command syscall";
  const std::string first_boot = host->info().boot_id();

  std::string run_id;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::SubmitRunRequest request;
    request.set_spec_yaml(kBootsSpec);
    request.set_source_name("vm-lab-boots.yaml");
    v1::SubmitRunResponse response;
    grpc::Status s = controller->fleet().SubmitRun(&ctx, request, &response);
    ASSERT_TRUE(s.ok()) << "submit refused: " << s.error_message();
    EXPECT_EQ(response.jobs(), 8u) << "2 boots x 2 iterations x 2 arms planned up front";
    run_id = response.run_id();
  }
  auto run_start = Clock::now();
  v1::Run run;
  WaitFor(
      [&] {
        run = controller->GetRun(run_id);
        return run.state() == v1::RUN_STATE_SUCCEEDED || run.state() == v1::RUN_STATE_FAILED ||
               run.state() == v1::RUN_STATE_CANCELLED;
      },
      420s);
  const double run_s = Seconds(Clock::now() - run_start);
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED)
      << "run " << run_id << " (" << v1::RunState_Name(run.state()) << "): " << run.error()
      << "\n--- guest console\n"
      << Tail(GuestConsole(), 6000) << "\n--- controller\n"
      << Tail(controller->process().Log(), 4000);
  std::cout << "run " << run_id << " stopped after " << run_s << " s: " << run.stop_reason()
            << std::endl;
  EXPECT_GE(run.boots(), 2u);
  EXPECT_LE(run.boots(), 3u);
  EXPECT_EQ(run.adaptive_rounds(), run.boots() - 2);
  EXPECT_TRUE(run.stop_reason().find("verdicts settled") != std::string::npos ||
              run.stop_reason().find("maximum reached (2 iterations x 3 boots") !=
                  std::string::npos ||
              run.stop_reason().find("target reached") != std::string::npos)
      << run.stop_reason();

  // Every boot is a real boot of the guest: one boot_id per boot, the first being the boot
  // the guest was on, and each boot holds both arms' 2 iterations, each with its ceiling.
  const std::string db = dir.path() + "/fleet.db";
  const std::string where = "WHERE run_id = " + std::to_string(std::stoll(run_id)) +
                            " AND metric = 'records_per_sec' AND series = ''";
  auto per_boot = Query(db,
                        "SELECT boot_id, arm, COUNT(*), MIN(ceiling_applied), MIN(ceiling), "
                        "MIN(source_id) FROM samples " +
                            where + " GROUP BY 1, 2 ORDER BY 6");
  std::set<std::string> boots;
  for (const auto& row : per_boot) {
    SCOPED_TRACE("boot " + row[0] + " arm " + row[1]);
    boots.insert(row[0]);
    EXPECT_EQ(row[2], "2") << "iterations of this arm in this boot";
    EXPECT_EQ(row[3], "1") << "ceiling_applied";
    EXPECT_EQ(row[4], row[1] == "ceiling-1" ? "1" : "512");
  }
  EXPECT_EQ(boots.size(), run.boots()) << "one real boot per planned boot";
  EXPECT_EQ(per_boot.size(), 2 * boots.size());
  ASSERT_FALSE(per_boot.empty());
  EXPECT_EQ(per_boot.front()[0], first_boot) << "boot 1 runs on the boot the guest was on";

  // The guest came back after the last reboot and its agent still answers.
  ASSERT_TRUE(WaitFor([&] { return (host = controller->ConnectedHost("vm1")).has_value(); }, 60s));
  EXPECT_EQ(host->info().ceiling().value(), 33);

  // The comparison sees the boots as a level.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  v1::CompareRequest request;
  request.set_run_id(run_id);
  v1::CompareResponse response;
  ASSERT_TRUE(controller->fleet().Compare(&ctx, request, &response).ok());
  std::cout << response.text() << std::endl;
  EXPECT_EQ(response.text().find("one boot"), std::string::npos)
      << "the comparison should see several boots:\n"
      << response.text();
  std::printf("vm-lab boots: %u boots, %.1f s for the run\n", run.boots(), run_s);
  ::testing::Test::RecordProperty("boots_run_seconds", std::to_string(run_s));
}

}  // namespace
}  // namespace tlbfleet::testing
