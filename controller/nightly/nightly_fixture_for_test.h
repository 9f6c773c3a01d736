#pragma once
// The fixture of the nightly unit's tests (tests only): a real core (in process, real SQLite,
// a real artifact store) with a simulated host (sim_lab_for_test.h), the nightly unit on a fake
// clock driven by hand, and the log captured. A test that sets `git_` (in its constructor, before
// SetUp) gets a host that also builds and boots the kernels of that history, and the nightly
// unit's QueryGit answered from it (SimRunService).

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "common/clock.h"
#include "controller/artifacts/artifact_store.h"
#include "controller/core/controller_impl.h"
#include "controller/nightly/nightly.h"
#include "controller/nightly/sim_lab_for_test.h"
#include "controller/store/store.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace tlbfleet::nightly {

inline absl::Time Utc(int y, int m, int d, int h = 0) {
  return absl::FromCivil(absl::CivilHour(y, m, d, h), absl::UTCTimeZone());
}

inline std::vector<std::string> Entries() {
  std::vector<std::string> e;
  for (int i = 0; i < 8; ++i) e.push_back(absl::StrCat("e", i));
  return e;
}

// The simulated host's entries: e0..e7 and the one the nightly schedule measures.
inline std::vector<std::string> HostEntries() {
  std::vector<std::string> e = Entries();
  e.push_back("nightly");
  return e;
}

inline constexpr int kFirstBad = 5;

// pipetest's µs/op: entries from e5 on are 20 % slower (as pti=on makes them in the lab).
inline double EntryValue(const std::string& entry) {
  if (entry.size() == 2 && entry[0] == 'e') return entry[1] - '0' >= kFirstBad ? 12.0 : 10.0;
  return 10.0;
}

inline constexpr char kBisectYaml[] = R"(
entries: [e0, e1, e2, e3, e4, e5, e6, e7]
good: e0
bad: e7
# Two boots per entry: a verdict needs more than one boot of each arm (docs/statistics.md),
# so one boot per round would cost every step a second round.
boots_per_round: 2
max_boots_per_step: 2
run:
  name: ignored
  benchmark: pipetest
  params: {loops: 1000}
  iterations: 3
)";

class NightlyTest : public ::testing::Test {
 protected:
  NightlyTest()
      : clock_(Utc(2026, 1, 1)), lab_(HostEntries(), [this](const std::string& e) {
          if (e == "nightly") return switched_ ? 12.0 : 10.0;
          return EntryValue(e);
        }) {}

  void SetUp() override {
    log_sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    spdlog::default_logger()->sinks().push_back(log_sink_);
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-nightly-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Open();
  }
  void TearDown() override {
    Close();
    std::filesystem::remove_all(dir_);
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), log_sink_), sinks.end());
  }

  // Everything logged since the test started.
  std::string Log() const { return log_.str(); }

  std::string Db() const { return (dir_ / "fleet.db").string(); }

  void Open() {
    // Synchronous writes, as the core's own unit tests: the sim lab drives the controller
    // from this thread and expects each assignment within the call that causes it.
    store_ = *store::Store::Open(Db(), {.writer_thread = false});
    nightly_store_ = *store::NightlyStore::Open(Db());
    artifacts_ = *artifacts::ArtifactStore::Open((dir_ / "fleet.db.artifacts").string(), {});
    core::ControllerOptions controller_options;
    controller_options.artifacts = artifacts_.get();
    controller_ = std::make_unique<core::ControllerImpl>(*store_, controller_options, clock_);
    runs_ = std::make_unique<SimRunService>(controller_->runs(), &git_);
    NightlyOptions options;
    options.clock = &clock_;
    // The tests drive every pass by hand: work a failure left is redone at the next one.
    options.retry_min = absl::ZeroDuration();
    options.retry_max = absl::ZeroDuration();
    nightly_ = std::make_unique<Nightly>(*runs_, *nightly_store_, options);
    controller_->AddObserver(nightly_.get());
    lab_.git = git_.commits.empty() ? nullptr : &git_;
    lab_.artifacts = artifacts_.get();
    lab_.Connect(LabHub());
  }
  // The hub the sim lab talks to: the core's, unless a test puts something between them.
  virtual core::AgentHub& LabHub() { return controller_->agents(); }
  // As a kill -9 would leave it: whatever was only in memory is gone.
  void Close() {
    controller_.reset();
    nightly_.reset();
    runs_.reset();
    nightly_store_.reset();
    store_.reset();
    lab_.artifacts = nullptr;
    artifacts_.reset();
  }

  // Lets the lab, the core and the nightly unit work until `done` (or a bound).
  void Settle(const std::function<bool()>& done = [] { return false; }) {
    for (int i = 0; i < 400 && !done(); ++i) {
      nightly_->RunPendingForTest();
      lab_.Drive();
      controller_->DeliverObserverCallsForTest();
    }
  }

  v1::BisectState Bisect(const std::string& id) { return nightly_->GetBisect(id)->state(); }

  std::vector<v1::Regression> Regressions() {
    absl::StatusOr<v1::ListRegressionsResponse> list = nightly_->ListRegressions({});
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return {};
    return std::vector<v1::Regression>(list->regressions().begin(), list->regressions().end());
  }

  std::ostringstream log_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> log_sink_;
  FakeClock clock_;
  bool switched_ = false;
  SimLab lab_;
  SimGit git_;  // no commits: the lab builds nothing and QueryGit is the core's
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<store::NightlyStore> nightly_store_;
  std::unique_ptr<artifacts::ArtifactStore> artifacts_;
  std::unique_ptr<core::ControllerImpl> controller_;
  std::unique_ptr<SimRunService> runs_;
  std::unique_ptr<Nightly> nightly_;
};

inline constexpr char kScheduleYaml[] = R"(
name: pipetest-nightly
cron: "0 2 * * *"
run:
  name: pipetest-nightly
  benchmark: pipetest
  params: {loops: 1000}
  iterations: 3
  arms: [{name: nightly, boot_entry: nightly}]
)";

}  // namespace tlbfleet::nightly
