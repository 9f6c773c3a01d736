// Nightly work in the microVM lab (CTest label "vm"): boot entries as arms on real Debian
// kernels, a bisection over a catalogue of entries, a nightly schedule on a file clock, and a
// bisection that survives a kill -9 of the controller. One TCG guest (deploy/vm-lab/lab)
// whose agent has one boot entry per catalogue entry (/init writes them: select with
// /sbin/tlbfleet-boot-entry, expect the entry's release and command line); the controller
// asks it to reboot into an entry, QEMU exits at the reboot (-no-reboot) and the lab's
// supervisor boots the entry the guest asked for.
//
// Each test is its own CTest test (--gtest_filter), RUN_SERIAL: they share the lab directory.
// A TCG boot takes about 10 s; the bisection and the schedule must find pti=on, which under
// TCG makes a page fault's kernel entry about 2.5x dearer (pft; LAB-NOTES.md, docs/vm-lab.md).
// The guest's console, the supervisor's log and the controller's log are printed on failure.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "controller/nightly/series_label.h"
#include "tests/integration/harness.h"
#include "tests/integration/http_client.h"
#include "tlbfleet/v1/nightly.grpc.pb.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

std::string LabScript() { return std::string(TLBFLEET_SOURCE_DIR) + "/deploy/vm-lab/lab"; }
std::string LabDir() { return TLBFLEET_VM_NIGHTLY_DIR; }

std::string Tail(const std::string& s, size_t n) {
  return s.size() > n ? s.substr(s.size() - n) : s;
}

int Lab(std::vector<std::string> args, std::string* output) {
  std::vector<std::string> argv = {"/bin/bash", LabScript()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--out", LabDir(), "--cache", TLBFLEET_VM_LAB_CACHE, "--agent",
                           BinPath("tlbfleet-agent")});
  return RunCommand(argv, output, /*merge_stderr=*/true);
}

// `name release boot image cmdline...` lines of the lab's resolved catalogue.
std::map<std::string, std::string> Releases() {
  std::map<std::string, std::string> releases;
  std::istringstream in(ReadWholeFile(LabDir() + "/catalogue"));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name, release;
    if (words >> name >> release) releases[name] = release;
  }
  return releases;
}

// A controller on 127.0.0.1:`port` ("0": any) over the database in `dir`, restartable on the
// same port (the guest dials the port it was booted with).
class Controller {
 public:
  Controller(std::string dir, std::vector<std::string> extra) : dir_(dir), extra_(extra) {}

  bool Start(const std::string& port) {
    const std::string ready = dir_ + "/controller.ready";
    std::filesystem::remove(ready);
    std::vector<std::string> argv = {BinPath("tlbfleet-controller"),
                                     "--grpc-listen",
                                     "127.0.0.1:" + port,
                                     "--http-listen",
                                     "127.0.0.1:0",
                                     "--db",
                                     db(),
                                     "--ready-file",
                                     ready};
    argv.insert(argv.end(), extra_.begin(), extra_.end());
    process_ = std::make_unique<Process>(argv, dir_ + "/controller.log");
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
    std::smatch http;
    if (std::regex_search(text, http, std::regex("\"http_port\":(\\d+)"))) {
      http_port_ = std::stoi(http[1]);
    }
    auto channel = grpc::CreateChannel("127.0.0.1:" + port_, grpc::InsecureChannelCredentials());
    fleet_ = v1::FleetService::NewStub(channel);
    nightly_ = v1::NightlyService::NewStub(channel);
    return true;
  }
  void Kill9() {
    process_->Signal(SIGKILL);
    process_->Wait(10s);
  }

  std::string db() const { return dir_ + "/fleet.db"; }
  const std::string& port() const { return port_; }
  int http_port() const { return http_port_; }
  std::string Log() const { return process_ ? Tail(process_->Log(), 6000) : ""; }
  v1::FleetService::Stub& fleet() { return *fleet_; }
  v1::NightlyService::Stub& nightly() { return *nightly_; }

 private:
  std::string dir_;
  std::vector<std::string> extra_;
  std::unique_ptr<Process> process_;
  std::string port_;
  int http_port_ = 0;
  std::unique_ptr<v1::FleetService::Stub> fleet_;
  std::unique_ptr<v1::NightlyService::Stub> nightly_;
};

template <typename Call>
grpc::Status Rpc(Call call) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  return call(&ctx);
}

class VmNightlyTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (lab_up_) {
      std::string out;
      Lab({"down"}, &out);
    }
  }

  // Resolves `catalogue` (text of a lab catalogue file), starts a controller and one guest on
  // entry `first`, and waits for its agent to report `entries` boot entries.
  void Boot(const std::string& catalogue, const std::string& first, size_t entries,
            std::vector<std::string> controller_args = {}) {
    catalogue_ = dir_.path() + "/test.catalogue";
    std::ofstream(catalogue_) << catalogue;
    std::string out;
    ASSERT_EQ(Lab({"catalogue", catalogue_}, &out), 0) << out;
    controller_ = std::make_unique<Controller>(dir_.path(), controller_args);
    ASSERT_TRUE(controller_->Start("0")) << controller_->Log();
    lab_up_ = true;
    // One vCPU: pipetest's two processes then switch on one CPU instead of waking each other
    // across TCG threads, which on a busy host costs milliseconds and hides pti's cost.
    ASSERT_EQ(Lab({"up", "1", "--controller-port", controller_->port(), "--catalogue", catalogue_,
                   "--entry", first, "--smp", "1"},
                  &out),
              0)
        << out;
    ASSERT_TRUE(WaitFor(
        [&] {
          std::optional<v1::Host> h = Host();
          return h && static_cast<size_t>(h->info().boot_entries_size()) == entries &&
                 h->info().boot_entry() == first;
        },
        180s))
        << Diagnostics();
  }

  std::optional<v1::Host> Host() {
    v1::ListHostsResponse response;
    if (!Rpc([&](grpc::ClientContext* c) {
           return controller_->fleet().ListHosts(c, v1::ListHostsRequest(), &response);
         }).ok()) {
      return std::nullopt;
    }
    for (const v1::Host& h : response.hosts()) {
      if (h.connected() && h.info().hostname() == "vm1") return h;
    }
    return std::nullopt;
  }

  std::string Diagnostics() {
    const std::string run = LabDir() + "/run";
    return "\n--- supervisor log ---\n" + Tail(ReadWholeFile(run + "/vm1.supervisor.log"), 3000) +
           "\n--- console (tail) ---\n" + Tail(ReadWholeFile(run + "/vm1.log"), 3000) +
           "\n--- controller (tail) ---\n" + (controller_ ? controller_->Log() : "");
  }

  // Every series with its points (estimate [low, high] per run), for failure messages.
  v1::ListSeriesResponse AllSeries() {
    v1::ListSeriesRequest request;
    request.set_with_points(true);
    v1::ListSeriesResponse response;
    Rpc([&](grpc::ClientContext* c) {
      return controller_->nightly().ListSeries(c, request, &response);
    });
    return response;
  }

  std::string SeriesPoints() {
    std::string out = "\n--- series ---\n";
    const v1::ListSeriesResponse all = AllSeries();
    for (const v1::Series& series : all.series()) {
      out += series.key().ShortDebugString() + "\n";
      for (const v1::SeriesPoint& p : series.points()) {
        out += "  run " + p.run_id() + ": " + std::to_string(p.estimate()) + " [" +
               std::to_string(p.low()) + ", " + std::to_string(p.high()) + "]\n";
      }
    }
    return out;
  }

  // The series as CSV for `tlbfleet changepoints --from-csv` (order = the point's position).
  std::string SeriesCsv() {
    std::string out = "series,order,value,low,high\n";
    const v1::ListSeriesResponse all = AllSeries();
    for (const v1::Series& series : all.series()) {
      for (int i = 0; i < series.points_size(); ++i) {
        const v1::SeriesPoint& p = series.points(i);
        out += series.key().metric() + "," + std::to_string(i) + "," +
               std::to_string(p.estimate()) + "," + std::to_string(p.low()) + "," +
               std::to_string(p.high()) + "\n";
      }
    }
    return out;
  }

  // Moves the file clock to night `night` (1-based) of the schedule added before and waits for
  // its run to finish; its id, or "" after a failed assertion.
  std::string RunNight(const std::string& clock, int64_t day0, int night) {
    std::ofstream(clock, std::ios::trunc) << day0 + (night - 1) * 86400 + 2 * 3600 + 30 << "\n";
    std::string run_id;
    EXPECT_TRUE(WaitFor(
        [&] {
          v1::ListSchedulesResponse list;
          Rpc([&](grpc::ClientContext* c) {
            return controller_->nightly().ListSchedules(c, v1::ListSchedulesRequest(), &list);
          });
          if (list.schedules_size() != 1 ||
              list.schedules(0).runs() != static_cast<uint32_t>(night))
            return false;
          run_id = list.schedules(0).last_run_id();
          return !run_id.empty();
        },
        60s))
        << "night " << night << Diagnostics();
    if (run_id.empty()) return "";
    v1::Run run;
    EXPECT_TRUE(WaitForRunEnd(run_id, 300s, &run)) << "night " << night << Diagnostics();
    EXPECT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.ShortDebugString() << Diagnostics();
    return run.state() == v1::RUN_STATE_SUCCEEDED ? run_id : "";
  }

  // Waits until run `id` has ended (succeeded, failed or cancelled); false on timeout. `run`
  // holds its last state either way.
  bool WaitForRunEnd(const std::string& id, std::chrono::seconds timeout, v1::Run* run) {
    return WaitFor(
        [&] {
          *run = GetRun(id);
          return run->state() == v1::RUN_STATE_SUCCEEDED || run->state() == v1::RUN_STATE_FAILED ||
                 run->state() == v1::RUN_STATE_CANCELLED;
        },
        timeout);
  }

  v1::Run GetRun(const std::string& id) {
    v1::GetRunRequest request;
    request.set_run_id(id);
    v1::Run run;
    Rpc([&](grpc::ClientContext* c) { return controller_->fleet().GetRun(c, request, &run); });
    return run;
  }

  std::vector<v1::Sample> Samples(const std::string& run_id) {
    v1::GetResultsRequest request;
    request.set_run_id(run_id);
    v1::GetResultsResponse response;
    Rpc([&](grpc::ClientContext* c) {
      return controller_->fleet().GetResults(c, request, &response);
    });
    return {response.samples().begin(), response.samples().end()};
  }

  v1::GetBisectResponse GetBisect(const std::string& id) {
    v1::GetBisectRequest request;
    request.set_id(id);
    v1::GetBisectResponse response;
    Rpc([&](grpc::ClientContext* c) {
      return controller_->nightly().GetBisect(c, request, &response);
    });
    return response;
  }

  // Every sample of `run_id` ran on a boot of the entry it names, whose command line is that
  // entry's (tlbfleet.entry=E) and has pti=on exactly when E's index is `first_pti` or later.
  void ExpectSamplesOnTheirEntries(const std::string& run_id, int first_pti) {
    const std::vector<v1::Sample> samples = Samples(run_id);
    EXPECT_FALSE(samples.empty()) << run_id;
    for (const v1::Sample& s : samples) {
      ASSERT_EQ(s.boot_entry().rfind("e", 0), 0u) << s.ShortDebugString();
      const int index = std::stoi(s.boot_entry().substr(1));
      const std::string& cmdline = s.kernel_cmdline();
      EXPECT_NE(cmdline.find("tlbfleet.entry=" + s.boot_entry()), std::string::npos) << cmdline;
      EXPECT_NE(cmdline.find(index >= first_pti ? "pti=on" : "pti=off"), std::string::npos)
          << s.boot_entry() << ": " << cmdline;
    }
  }

  TempDir dir_;
  std::string catalogue_;
  std::unique_ptr<Controller> controller_;
  bool lab_up_ = false;
};

// Eight entries on one kernel; from e5 on with pti=on.
constexpr int kFirstPti = 5;
std::string PtiCatalogue() {
  std::string text = "# e0..e4 pti=off, e5..e7 pti=on (tests/vm/vm_nightly_test.cc)\n";
  for (int i = 0; i < 8; ++i) {
    text += "e" + std::to_string(i) + "  linux-image-6.1.0-*-amd64  " +
            (i >= kFirstPti ? "pti=on" : "pti=off") + "\n";
  }
  return text;
}

// skip_endpoint_check: the endpoints differ by construction, and a step 0 would add 4 boots.
// max_boots_per_step: the product's default, 8. pft, not pipetest: pipetest's pti step under
// TCG (about 1.7x) is the size of the guests' swings, and a CI run stopped as "ambiguous" at
// e5 at 4 boots per step (+42 % [-6 %, +115 %] against good); a fault costs about 2.5x with
// pti=on (docs/vm-lab.md, "Noise").
constexpr char kBisectYaml[] = R"(entries: [e0, e1, e2, e3, e4, e5, e6, e7]
good: e0
bad: e7
boots_per_round: 2
max_boots_per_step: 8
skip_endpoint_check: true
run:
  name: vm-bisect
  benchmark: pft
  params: {size_mb: 32}
  iterations: 3
)";

std::string StartBisect(Controller& controller) {
  v1::StartBisectRequest request;
  request.set_spec_yaml(kBisectYaml);
  request.set_source_name("vm-bisect.yaml");
  v1::BisectState state;
  grpc::Status s = Rpc(
      [&](grpc::ClientContext* c) { return controller.nightly().StartBisect(c, request, &state); });
  EXPECT_TRUE(s.ok()) << s.error_message();
  return state.id();
}

// The bisection's answer, and what a run of it measured, checked alike by both bisect tests.
void ExpectFoundFirstPti(VmNightlyTest* test, const v1::GetBisectResponse& done,
                         const std::string& diagnostics) {
  ASSERT_EQ(done.state().status(), v1::BISECT_FOUND) << done.report() << diagnostics;
  EXPECT_EQ(done.state().first_bad(), "e" + std::to_string(kFirstPti)) << done.report();
  EXPECT_NE(done.report().find("first bad: e5"), std::string::npos) << done.report();
  // 0..7: tested e3 (good), e5 (bad), e4 (good).
  ASSERT_EQ(done.state().steps_size(), 3) << done.report();
  EXPECT_EQ(done.state().steps(0).tested(), "e3");
  EXPECT_EQ(done.state().steps(0).verdict(), v1::LIKE_GOOD) << done.report();
  EXPECT_EQ(done.state().steps(1).tested(), "e5");
  EXPECT_EQ(done.state().steps(1).verdict(), v1::LIKE_BAD) << done.report();
  EXPECT_EQ(done.state().steps(2).tested(), "e4");
  EXPECT_EQ(done.state().steps(2).verdict(), v1::LIKE_GOOD) << done.report();
  (void)test;
}

// (b) A bisection between the first and the last entry names the first entry with pti=on.
TEST_F(VmNightlyTest, BisectNamesTheFirstEntryWithPti) {
  ASSERT_NO_FATAL_FAILURE(Boot(PtiCatalogue(), "e0", 8));
  const std::string id = StartBisect(*controller_);
  ASSERT_FALSE(id.empty());
  v1::GetBisectResponse done;
  ASSERT_TRUE(WaitFor(
      [&] {
        done = GetBisect(id);
        return done.state().status() != v1::BISECT_RUNNING &&
               done.state().status() != v1::BISECT_STATUS_UNSPECIFIED;
      },
      1200s))
      << done.report() << Diagnostics();
  ASSERT_NO_FATAL_FAILURE(ExpectFoundFirstPti(this, done, Diagnostics()));
  for (const v1::BisectStep& step : done.state().steps()) {
    for (const v1::BisectRound& round : step.rounds()) {
      ExpectSamplesOnTheirEntries(round.run_id(), kFirstPti);
    }
  }
  std::printf("%s\n", done.report().c_str());
}

// (d) A kill -9 of the controller in the middle of a bisection: the restarted controller
// resumes it (the run in flight is awaited, not submitted again) and reaches the same answer.
TEST_F(VmNightlyTest, BisectSurvivesAKill9OfTheController) {
  ASSERT_NO_FATAL_FAILURE(Boot(PtiCatalogue(), "e0", 8));
  const std::string id = StartBisect(*controller_);
  ASSERT_FALSE(id.empty());
  // Mid-bisection: step 0 decided, step 1's run submitted and measuring.
  v1::GetBisectResponse mid;
  ASSERT_TRUE(WaitFor(
      [&] {
        mid = GetBisect(id);
        return mid.state().steps_size() >= 2 && !mid.state().pending_run_id().empty() &&
               !Samples(mid.state().pending_run_id()).empty();
      },
      900s))
      << mid.report() << Diagnostics();
  const std::string in_flight = mid.state().pending_run_id();
  controller_->Kill9();
  const std::string port = controller_->port();
  ASSERT_TRUE(controller_->Start(port)) << controller_->Log();

  v1::GetBisectResponse done;
  ASSERT_TRUE(WaitFor(
      [&] {
        done = GetBisect(id);
        return done.state().status() != v1::BISECT_RUNNING &&
               done.state().status() != v1::BISECT_STATUS_UNSPECIFIED;
      },
      1200s))
      << done.report() << Diagnostics();
  ASSERT_NO_FATAL_FAILURE(ExpectFoundFirstPti(this, done, Diagnostics()));
  // The run in flight at the kill is step 1's round, and every round is a run of its own:
  // nothing was submitted twice.
  ASSERT_GE(done.state().steps(1).rounds_size(), 1);
  EXPECT_EQ(done.state().steps(1).rounds(0).run_id(), in_flight);
  std::set<std::string> rounds;
  for (const v1::BisectStep& step : done.state().steps()) {
    for (const v1::BisectRound& round : step.rounds()) rounds.insert(round.run_id());
  }
  EXPECT_EQ(QueryInt(controller_->db(), "SELECT COUNT(*) FROM runs"),
            static_cast<int64_t>(rounds.size()));
}

// (a) Two arms on two real Debian kernels (the newest 6.1 and 6.12), two boots each,
// interleaved A B B A: every sample ran on its arm's entry and kernel, and the comparison of
// the run gives each arm a verdict.
TEST_F(VmNightlyTest, TwoRealKernelsAsArms) {
  ASSERT_NO_FATAL_FAILURE(
      Boot("old  linux-image-6.1.0-*-amd64\n"
           "new  linux-image-6.12.*+deb12-amd64\n",
           "old", 2));
  const std::map<std::string, std::string> releases = Releases();
  ASSERT_EQ(releases.at("old").rfind("6.1.", 0), 0u);
  ASSERT_EQ(releases.at("new").rfind("6.12.", 0), 0u);
  v1::SubmitRunRequest request;
  request.set_spec_yaml(R"(name: vm-two-kernels
benchmark: pipetest
params: {loops: 5000}
iterations: 3
boots: 2
arms:
  - {name: linux61, boot_entry: old}
  - {name: linux612, boot_entry: new}
)");
  request.set_source_name("two-kernels.yaml");
  v1::SubmitRunResponse submitted;
  grpc::Status s = Rpc([&](grpc::ClientContext* c) {
    return controller_->fleet().SubmitRun(c, request, &submitted);
  });
  ASSERT_TRUE(s.ok()) << s.error_message();
  const std::string run_id = submitted.run_id();
  v1::Run run;
  ASSERT_TRUE(WaitForRunEnd(run_id, 900s, &run)) << Diagnostics();
  ASSERT_EQ(run.state(), v1::RUN_STATE_SUCCEEDED) << run.ShortDebugString() << Diagnostics();

  const std::map<std::string, std::string> entry_of = {{"linux61", "old"}, {"linux612", "new"}};
  std::vector<std::string> boot_order;  // the entry of each boot, in the order they ran
  std::set<std::string> boots;
  const std::vector<v1::Sample> samples = Samples(run_id);
  ASSERT_FALSE(samples.empty());
  for (const v1::Sample& sample : samples) {
    const std::string& entry = entry_of.at(sample.arm());
    EXPECT_EQ(sample.boot_entry(), entry) << sample.ShortDebugString();
    EXPECT_EQ(sample.kernel_release(), releases.at(entry)) << sample.ShortDebugString();
    if (boots.insert(sample.boot_id()).second) boot_order.push_back(entry);
  }
  EXPECT_EQ(boot_order, (std::vector<std::string>{"old", "new", "new", "old"}));

  std::string out;
  ASSERT_EQ(RunCommand({BinPath("tlbfleet"), "--controller", "127.0.0.1:" + controller_->port(),
                        "compare", run_id, "--format", "json"},
                       &out),
            0)
      << out;
  // The calibrated verdict of the 6.12 arm against the 6.1 one on the primary metric.
  EXPECT_TRUE(std::regex_search(
      out, std::regex("\"arm\": *\"linux612\",[^}]*\"metric\": *\"usecs_per_op\",[^}]*"
                      "\"verdict\": *\"(better|worse|same|unknown)\"")))
      << out;
  std::string text;
  RunCommand(
      {BinPath("tlbfleet"), "--controller", "127.0.0.1:" + controller_->port(), "compare", run_id},
      &text);
  std::printf("%s\n", text.c_str());
}

// (c) A nightly schedule on a file clock over one entry whose kernel command line changes
// behind its name after night 5 (pti=off, then pti=on: the lab's catalogue is rebuilt, as a
// distribution's kernel update would): the regression is flagged at night 6's run, and not
// before. The benchmark is pft, not pipetest: under TCG a page fault's kernel entry costs
// about 2.5x with pti=on, well above the guests' minute-to-minute swings, while pipetest's
// pti step (about 1.7x) is their size (docs/vm-lab.md, "Noise"). Ten nights with the
// Student-t detector at max_p 0.001: the default permutation test cannot reach its p threshold
// on so short a series (docs/nightly.md, "How many nights").
TEST_F(VmNightlyTest, NightlyScheduleFlagsTheSwitchAndNothingBefore) {
  const std::string clock = dir_.path() + "/clock";
  const int64_t day0 = 1767225600;  // 2026-01-01T00:00:00Z
  std::ofstream(clock) << day0 << "\n";
  auto catalogue = [](bool pti) {
    return std::string("nightly  linux-image-6.1.0-*-amd64  ") + (pti ? "pti=on" : "pti=off") +
           "\n";
  };
  ASSERT_NO_FATAL_FAILURE(Boot(catalogue(false), "nightly", 1, {"--nightly-clock-file", clock}));

  v1::AddScheduleRequest add;
  add.set_spec_yaml(R"(name: vm-nightly
cron: "0 2 * * *"
run:
  name: faults
  benchmark: pft
  params: {size_mb: 32}
  iterations: 4
  arms: [{name: lab, boot_entry: nightly}]
on_regression: alert
detect: {test: student-t, max_p: 0.001}
)");
  add.set_source_name("vm-nightly.yaml");
  v1::Schedule schedule;
  grpc::Status s = Rpc([&](grpc::ClientContext* c) {
    return controller_->nightly().AddSchedule(c, add, &schedule);
  });
  ASSERT_TRUE(s.ok()) << s.error_message();

  constexpr int kNights = 10;
  constexpr int kSwitch = 6;  // the first night on pti=on
  std::vector<std::string> runs;
  for (int night = 1; night <= kNights; ++night) {
    if (night == kSwitch) {
      std::ofstream(catalogue_, std::ios::trunc) << catalogue(true);
      std::string out;
      ASSERT_EQ(Lab({"catalogue", catalogue_}, &out), 0) << out;
    }
    // The night's run, finished, and its point in the series.
    const std::string run_id = RunNight(clock, day0, night);
    ASSERT_FALSE(run_id.empty()) << "night " << night;
    runs.push_back(run_id);
    for (const v1::Sample& sample : Samples(run_id)) {
      EXPECT_NE(sample.kernel_cmdline().find(night >= kSwitch ? "pti=on" : "pti=off"),
                std::string::npos)
          << "night " << night << ": " << sample.kernel_cmdline();
    }
    v1::ListSeriesRequest series_request;
    series_request.set_benchmark("pft");
    series_request.set_metric("faults_per_sec");
    series_request.set_with_points(true);
    ASSERT_TRUE(WaitFor(
        [&] {
          v1::ListSeriesResponse series;
          Rpc([&](grpc::ClientContext* c) {
            return controller_->nightly().ListSeries(c, series_request, &series);
          });
          return series.series_size() == 1 && series.series(0).points_size() == night;
        },
        60s))
        << "night " << night << Diagnostics();
  }
  // Every change the detector ever confirmed is a row, and every row is at the switch: nothing
  // was flagged before it (the series are searched after each night's point is appended).
  // Faults per second and the wall time must be among them; pft's CPU-time metrics may be.
  v1::ListRegressionsResponse regressions;
  std::map<std::string, v1::Regression> by_metric;
  ASSERT_TRUE(WaitFor(
      [&] {
        Rpc([&](grpc::ClientContext* c) {
          return controller_->nightly().ListRegressions(c, v1::ListRegressionsRequest(),
                                                        &regressions);
        });
        by_metric.clear();
        for (const v1::Regression& r : regressions.regressions()) {
          by_metric[r.series().metric()] = r;
        }
        return by_metric.count("faults_per_sec") == 1 && by_metric.count("wall_seconds") == 1;
      },
      60s))
      << regressions.ShortDebugString() << SeriesPoints() << Diagnostics();
  ASSERT_EQ(static_cast<size_t>(regressions.regressions_size()), by_metric.size())
      << "one row per series: " << regressions.ShortDebugString();
  for (const v1::Regression& r : regressions.regressions()) {
    EXPECT_EQ(r.first_bad_run(), runs[kSwitch - 1]) << r.ShortDebugString() << SeriesPoints();
    EXPECT_EQ(r.last_good_run(), runs[kSwitch - 2]) << r.ShortDebugString();
    EXPECT_EQ(r.index(), static_cast<uint32_t>(kSwitch - 1));
    EXPECT_EQ(r.series().boot_entry(), "nightly");
    EXPECT_EQ(r.status(), v1::REGRESSION_OPEN);
  }
  const v1::Regression& throughput = by_metric["faults_per_sec"];
  const v1::Regression& latency = by_metric["wall_seconds"];
  EXPECT_LT(throughput.relative().estimate(), 0) << "faults_per_sec went down";
  EXPECT_GT(latency.relative().estimate(), 0) << "wall_seconds went up";
  std::printf("%s\n%s\n", throughput.DebugString().c_str(), SeriesPoints().c_str());

  // The same regressions over HTTP, and as the gauge Prometheus alerts on (development mode:
  // the controller is on loopback and holds no token).
  const int http = controller_->http_port();
  HttpResult listed = HttpCall(http, "GET", "/api/v1/regressions?statuses=open");
  ASSERT_EQ(listed.status, 200) << listed.body;
  for (const v1::Regression* r : {&latency, &throughput}) {
    EXPECT_NE(listed.body.find("\"id\":\"" + r->id() + "\""), std::string::npos) << listed.body;
  }
  auto gauge = [](const v1::Regression& r) {
    return "tlbfleet_nightly_regressions_open{series=\"" + nightly::SeriesLabel(r.series()) +
           "\"} 1";
  };
  HttpResult metrics = HttpCall(http, "GET", "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find(gauge(latency)), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find(gauge(throughput)), std::string::npos) << metrics.body;

  // Acknowledged: that series' gauge goes, the other stays; fixed: none is left.
  auto set_status = [&](const v1::Regression& r, const std::string& status) {
    return HttpCall(http, "POST", "/api/v1/regressions/" + r.id(),
                    {{"Content-Type", "application/json"}}, "{\"status\": \"" + status + "\"}");
  };
  HttpResult acknowledged = set_status(latency, "REGRESSION_ACKNOWLEDGED");
  ASSERT_EQ(acknowledged.status, 200) << acknowledged.body;
  metrics = HttpCall(http, "GET", "/metrics");
  EXPECT_EQ(metrics.body.find(gauge(latency)), std::string::npos) << metrics.body;
  EXPECT_NE(metrics.body.find(gauge(throughput)), std::string::npos) << metrics.body;
  for (const v1::Regression& r : regressions.regressions()) {
    if (r.id() == latency.id()) continue;
    HttpResult fixed = set_status(r, "REGRESSION_FIXED");
    ASSERT_EQ(fixed.status, 200) << fixed.body;
  }
  metrics = HttpCall(http, "GET", "/metrics");
  EXPECT_EQ(metrics.body.find("tlbfleet_nightly_regressions_open{"), std::string::npos)
      << metrics.body;
}

// A measurement, not a check CTest runs (docs/nightly.md, "The lab's own nights"): the same
// schedule as (c) for TLBFLEET_LAB_NIGHTS nights with nothing changed, the series printed as
// CSV (to TLBFLEET_LAB_SERIES_CSV when set) for `tlbfleet changepoints --from-csv`, which
// reports its AR(1) coefficient. Run by hand on a quiet machine:
//   TLBFLEET_LAB_NIGHTS=30 TLBFLEET_LAB_SERIES_CSV=/tmp/lab.csv build/tests/vm_nightly_test
//     --gtest_filter=VmNightlyTest.LabNightsWithNothingChanged
// With nothing changed the default detector must open no regression.
TEST_F(VmNightlyTest, LabNightsWithNothingChanged) {
  const char* nights_env = std::getenv("TLBFLEET_LAB_NIGHTS");
  if (nights_env == nullptr) GTEST_SKIP() << "a measurement: set TLBFLEET_LAB_NIGHTS to run it";
  const int nights = std::atoi(nights_env);
  ASSERT_GE(nights, 2) << "TLBFLEET_LAB_NIGHTS=" << nights_env;
  const std::string clock = dir_.path() + "/clock";
  const int64_t day0 = 1767225600;  // 2026-01-01T00:00:00Z
  std::ofstream(clock) << day0 << "\n";
  ASSERT_NO_FATAL_FAILURE(Boot("nightly  linux-image-6.1.0-*-amd64  pti=off\n", "nightly", 1,
                               {"--nightly-clock-file", clock}));
  v1::AddScheduleRequest add;
  add.set_spec_yaml(R"(name: lab-quiet
cron: "0 2 * * *"
run:
  name: faults
  benchmark: pft
  params: {size_mb: 32}
  iterations: 4
  arms: [{name: lab, boot_entry: nightly}]
on_regression: alert
)");
  add.set_source_name("lab-quiet.yaml");
  v1::Schedule schedule;
  grpc::Status s = Rpc([&](grpc::ClientContext* c) {
    return controller_->nightly().AddSchedule(c, add, &schedule);
  });
  ASSERT_TRUE(s.ok()) << s.error_message();
  for (int night = 1; night <= nights; ++night) {
    ASSERT_FALSE(RunNight(clock, day0, night).empty()) << "night " << night;
    std::fprintf(stderr, "night %d of %d done\n", night, nights);
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        v1::ListSeriesRequest request;
        request.set_benchmark("pft");
        request.set_metric("faults_per_sec");
        request.set_with_points(true);
        v1::ListSeriesResponse series;
        Rpc([&](grpc::ClientContext* c) {
          return controller_->nightly().ListSeries(c, request, &series);
        });
        return series.series_size() == 1 && series.series(0).points_size() == nights;
      },
      60s))
      << Diagnostics();
  const std::string csv = SeriesCsv();
  if (const char* path = std::getenv("TLBFLEET_LAB_SERIES_CSV")) {
    std::ofstream(path) << csv;
  }
  std::printf("%s", csv.c_str());
  v1::ListRegressionsResponse regressions;
  Rpc([&](grpc::ClientContext* c) {
    return controller_->nightly().ListRegressions(c, v1::ListRegressionsRequest(), &regressions);
  });
  EXPECT_EQ(regressions.regressions_size(), 0) << regressions.ShortDebugString();
}

}  // namespace
}  // namespace tlbfleet::testing
