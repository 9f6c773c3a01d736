// The nightly unit over a store whose reads or writes fail (NightlyStore::SetFaultsForTest), as
// on a full disk, then work again: nothing is lost, nothing is recorded twice, a failed read
// is never taken for "nothing there", and every failure is logged with its ids and counted.
#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include "controller/nightly/nightly.h"
#include "controller/nightly/nightly_fixture_for_test.h"
#include "controller/store/sqlite.h"
#include "gmock/gmock.h"

namespace tlbfleet::nightly {
namespace {

using ::testing::HasSubstr;

absl::Status DiskFull() {
  return store::StorageFailure(absl::StatusCode::kResourceExhausted, "database or disk is full");
}

// Fails the store methods named in it (reads or writes) while it is not empty; counts the
// calls that failed.
class Faults {
 public:
  explicit Faults(store::NightlyStore& store) {
    store.SetFaultsForTest([this](std::string_view method, bool) -> absl::Status {
      absl::MutexLock lock(&mu_);
      if (methods_.count(std::string(method)) == 0) return absl::OkStatus();
      ++failed_[std::string(method)];
      return DiskFull();
    });
  }
  void Fail(std::set<std::string> methods) {
    absl::MutexLock lock(&mu_);
    methods_ = std::move(methods);
  }
  void Clear() { Fail({}); }
  int Failed(const std::string& method) {
    absl::MutexLock lock(&mu_);
    return failed_[method];
  }

 private:
  absl::Mutex mu_;
  std::set<std::string> methods_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> failed_ ABSL_GUARDED_BY(mu_);
};

class NightlyFaultsTest : public NightlyTest {
 protected:
  v1::Schedule Schedule() { return nightly_->ListSchedules()->schedules(0); }
  std::vector<v1::Series> AllSeries() {
    v1::ListSeriesRequest r;
    r.set_with_points(true);
    absl::StatusOr<v1::ListSeriesResponse> list = nightly_->ListSeries(r);
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return {};
    return std::vector<v1::Series>(list->series().begin(), list->series().end());
  }
  // Points of `run_id` over every series.
  int PointsOf(const std::string& run_id) {
    int n = 0;
    for (const v1::Series& s : AllSeries()) {
      for (const v1::SeriesPoint& p : s.points()) n += p.run_id() == run_id ? 1 : 0;
    }
    return n;
  }
  std::vector<v1::Run> Runs() {
    v1::ListRunsRequest all;
    all.set_limit(1000);
    absl::StatusOr<v1::ListRunsResponse> runs = controller_->runs().ListRuns(all);
    EXPECT_TRUE(runs.ok()) << runs.status();
    if (!runs.ok()) return {};
    return std::vector<v1::Run>(runs->runs().begin(), runs->runs().end());
  }
  bool Succeeded(const std::string& run_id) {
    absl::StatusOr<v1::Run> run = controller_->runs().GetRun(run_id);
    return run.ok() && run->state() == v1::RUN_STATE_SUCCEEDED;
  }
  bool Seen(const std::string& run_id) {
    absl::StatusOr<bool> seen = nightly_store_->RunSeen(run_id);
    return seen.ok() && *seen;
  }
  // Passes of the nightly unit, the lab and the core, whatever they do.
  void Passes(int n) {
    for (int i = 0; i < n; ++i) {
      nightly_->RunPendingForTest();
      lab_.Drive();
      controller_->DeliverObserverCallsForTest();
    }
  }
  // Every run the controller knows is named by exactly one round of the bisection.
  void ExpectEveryRunInOneRound(const v1::BisectState& state) {
    std::multiset<std::string> rounds;
    for (const v1::BisectStep& step : state.steps()) {
      for (const v1::BisectRound& round : step.rounds()) rounds.insert(round.run_id());
    }
    const std::vector<v1::Run> runs = Runs();
    EXPECT_EQ(rounds.size(), runs.size());
    for (const v1::Run& run : runs) EXPECT_EQ(rounds.count(run.id()), 1u) << "run " << run.id();
  }
};

// A finished run whose points cannot be stored stays queued; once writes work its points are
// appended once, and the next night's go on the same series.
TEST_F(NightlyFaultsTest, AFinishedRunWhosePointsCannotBeStoredIsAppendedOnceWritesWork) {
  ASSERT_TRUE(nightly_->AddSchedule(kScheduleYaml, "s.yaml").ok());
  clock_.Set(Utc(2026, 1, 1, 2));
  Settle([&] { return Schedule().runs() == 1; });
  const std::string run_id = Schedule().last_run_id();
  ASSERT_FALSE(run_id.empty());
  nightly_store_->FailWritesForTest(DiskFull());
  Settle([&] { return Succeeded(run_id); });
  ASSERT_TRUE(Succeeded(run_id));
  Passes(5);
  EXPECT_FALSE(Seen(run_id));
  EXPECT_TRUE(AllSeries().empty());
  EXPECT_GE(nightly_->StoreErrors().writes, 5u) << "every attempt counted";
  EXPECT_THAT(Log(), HasSubstr(absl::StrCat("nightly: store write failed: appending the points "
                                            "of run ",
                                            run_id, ": RESOURCE_EXHAUSTED")));

  nightly_store_->FailWritesForTest(absl::OkStatus());
  Settle([&] { return Seen(run_id); });
  ASSERT_TRUE(Seen(run_id));
  Passes(3);
  const std::vector<v1::Series> series = AllSeries();
  ASSERT_EQ(series.size(), 1u);
  ASSERT_EQ(series[0].points_size(), 1);
  EXPECT_EQ(series[0].points(0).run_id(), run_id);
  EXPECT_EQ(series[0].points(0).schedule_id(), Schedule().id());

  clock_.Set(Utc(2026, 1, 2, 2));
  Settle([&] { return Schedule().runs() == 2 && Seen(Schedule().last_run_id()); });
  EXPECT_EQ(AllSeries()[0].points_size(), 2);
  EXPECT_EQ(PointsOf(run_id), 1);
  EXPECT_EQ(Runs().size(), 2u);
}

// Whose run it is cannot be read: the run is not taken for one submitted by hand (a
// bisection's measurement must never enter the history); it waits until it can be read. (The
// bisection itself moves on meanwhile: it learns of its runs' ends from its own state.)
TEST_F(NightlyFaultsTest, ARunWhoseOwnerCannotBeReadIsNotTakenForARunByHand) {
  Faults faults(*nightly_store_);
  absl::StatusOr<v1::BisectState> started = nightly_->StartBisect(kBisectYaml, "b.yaml");
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string first = Bisect(started->id()).pending_run_id();
  ASSERT_FALSE(first.empty());
  faults.Fail({"SubmissionOfRun", "SubmissionNamed"});
  Settle([&] { return Succeeded(first); });
  ASSERT_TRUE(Succeeded(first));
  Passes(3);
  EXPECT_GT(faults.Failed("SubmissionOfRun"), 0);
  EXPECT_TRUE(AllSeries().empty()) << "a bisection's run entered the history";
  EXPECT_FALSE(Seen(first));
  EXPECT_GT(nightly_->StoreErrors().reads, 0u);
  EXPECT_THAT(Log(), HasSubstr(absl::StrCat("nightly: store read failed: run ", first,
                                            ": whose run is it?")));

  faults.Clear();
  Settle([&] { return Bisect(started->id()).status() != v1::BISECT_RUNNING; });
  const v1::BisectState state = Bisect(started->id());
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason();
  EXPECT_EQ(state.first_bad(), "e5");
  EXPECT_TRUE(AllSeries().empty());
  ExpectEveryRunInOneRound(state);
}

// The run of a slot is submitted but cannot be recorded: it is found by its name and recorded
// later, still the schedule's (its series point says so, the schedule counts it once), and
// never submitted twice.
TEST_F(NightlyFaultsTest, ASlotsRunThatCannotBeRecordedIsRecordedLaterAndStaysTheSchedules) {
  Faults faults(*nightly_store_);
  ASSERT_TRUE(nightly_->AddSchedule(kScheduleYaml, "s.yaml").ok());
  faults.Fail({"RecordSubmission"});
  clock_.Set(Utc(2026, 1, 1, 2));
  Settle([&] { return Runs().size() == 1 && Succeeded(Runs()[0].id()); });
  ASSERT_EQ(Runs().size(), 1u);
  const std::string run_id = Runs()[0].id();
  ASSERT_TRUE(Succeeded(run_id));
  Passes(3);
  EXPECT_GT(faults.Failed("RecordSubmission"), 0);
  EXPECT_EQ(Schedule().runs(), 0u);
  EXPECT_FALSE(Seen(run_id)) << "handled before it was known whose it is";
  EXPECT_TRUE(AllSeries().empty());

  faults.Clear();
  Settle([&] { return Seen(run_id); });
  ASSERT_TRUE(Seen(run_id));
  Passes(3);
  EXPECT_EQ(Schedule().runs(), 1u);
  EXPECT_EQ(Schedule().last_run_id(), run_id);
  ASSERT_EQ(AllSeries().size(), 1u);
  ASSERT_EQ(AllSeries()[0].points_size(), 1);
  EXPECT_EQ(AllSeries()[0].points(0).schedule_id(), Schedule().id());
  EXPECT_EQ(Runs().size(), 1u) << "submitted twice";
}

// A slot that cannot be taken is not lost: it fires, once, when writes work again.
TEST_F(NightlyFaultsTest, ASlotThatCannotBeTakenFiresOnceWhenWritesWork) {
  ASSERT_TRUE(nightly_->AddSchedule(kScheduleYaml, "s.yaml").ok());
  nightly_store_->FailWritesForTest(DiskFull());
  clock_.Set(Utc(2026, 1, 1, 2));
  Passes(3);
  EXPECT_TRUE(Runs().empty());
  EXPECT_THAT(Log(), HasSubstr("nightly: store write failed: schedule 1 (pipetest-nightly) slot "
                               "2026-01-01T02:00Z: taking the slot for run pipetest-nightly-s1-"
                               "20260101T0200"));
  nightly_store_->FailWritesForTest(absl::OkStatus());
  Settle([&] { return Schedule().runs() == 1 && Seen(Schedule().last_run_id()); });
  Passes(3);
  EXPECT_EQ(Runs().size(), 1u);
  EXPECT_EQ(Schedule().runs(), 1u);
  EXPECT_EQ(AllSeries()[0].points_size(), 1);
}

// A bisection's step whose writes fail (each of them in turn, or all at once, as on a full
// disk) is redone when they work: the same answer, every run in exactly one round.
class NightlyBisectFaultsTest : public NightlyFaultsTest,
                                public ::testing::WithParamInterface<std::set<std::string>> {};

TEST_P(NightlyBisectFaultsTest, AStepThatCannotBeStoredIsRedoneNotLostNorSubmittedTwice) {
  Faults faults(*nightly_store_);
  absl::StatusOr<v1::BisectState> started = nightly_->StartBisect(kBisectYaml, "b.yaml");
  ASSERT_TRUE(started.ok()) << started.status();
  // Step 1's measurement under way when the writes start to fail.
  Settle([&] {
    const v1::BisectState s = Bisect(started->id());
    return s.steps_size() >= 2 && !s.pending_run_id().empty();
  });
  const std::string pending = Bisect(started->id()).pending_run_id();
  ASSERT_FALSE(pending.empty());
  faults.Fail(GetParam());
  Settle([&] { return Succeeded(pending); });
  ASSERT_TRUE(Succeeded(pending));
  Passes(5);
  int failed = 0;
  for (const std::string& method : GetParam()) failed += faults.Failed(method);
  EXPECT_GT(failed, 0);
  EXPECT_GT(nightly_->StoreErrors().writes, 0u);

  faults.Clear();
  Settle([&] { return Bisect(started->id()).status() != v1::BISECT_RUNNING; });
  const v1::BisectState state = Bisect(started->id());
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason();
  EXPECT_EQ(state.first_bad(), "e5");
  EXPECT_EQ(state.steps(1).rounds(0).run_id(), pending);
  for (const v1::BisectStep& step : state.steps()) EXPECT_EQ(step.rounds_size(), 1);
  ExpectEveryRunInOneRound(state);
  EXPECT_TRUE(AllSeries().empty());
  Passes(3);
  for (const v1::Run& run : Runs()) EXPECT_TRUE(Seen(run.id())) << "run " << run.id() << " lost";
}

INSTANTIATE_TEST_SUITE_P(
    EachWrite, NightlyBisectFaultsTest,
    ::testing::Values(std::set<std::string>{"SaveBisect"}, std::set<std::string>{"BeginSubmission"},
                      std::set<std::string>{"RecordSubmission"}, std::set<std::string>{"AppendRun"},
                      std::set<std::string>{"SaveBisect", "BeginSubmission", "RecordSubmission",
                                            "AppendRun", "CreateBisect"}),
    [](const ::testing::TestParamInfo<std::set<std::string>>& info) {
      return info.param.size() > 1 ? std::string("AllWrites") : *info.param.begin();
    });

// A regression found while it cannot be recorded is recorded at the next pass, not a night
// later; its bisection, which cannot be started at first, starts once writes work, once; and
// the bisection's outcome reaches the regression's note although its first write failed.
TEST_F(NightlyFaultsTest, ARegressionThatCannotBeRecordedIsRecordedAndBisectedOnce) {
  Faults faults(*nightly_store_);
  lab_.releases["nightly"] = "6.1.0-2-amd64";
  const std::string yaml = std::string(kScheduleYaml) +
                           "on_regression: {action: bisect, entries: [e0, e1, e2, e3, e4, e5, "
                           "e6, e7], boots_per_round: 1, max_boots_per_step: 2}\n"
                           "detect: {test: student-t, min_segment: 3}\n";
  ASSERT_TRUE(nightly_->AddSchedule(yaml, "s.yaml").ok());
  faults.Fail({"AddRegression", "CreateBisect"});
  int night = 0;
  for (; night < 10 && faults.Failed("AddRegression") == 0; ++night) {
    switched_ = night >= 3;
    if (switched_) lab_.releases["nightly"] = "6.1.0-6-amd64";
    clock_.Set(Utc(2026, 1, 1 + night, 2));
    Settle([&] {
      const v1::Schedule s = Schedule();
      return s.runs() == static_cast<uint32_t>(night + 1) && Seen(s.last_run_id());
    });
  }
  ASSERT_GT(faults.Failed("AddRegression"), 0) << "no regression was found";
  EXPECT_TRUE(Regressions().empty());
  EXPECT_THAT(Log(), HasSubstr("nightly: store write failed: series 1: recording the regression "
                               "at run "));

  // Recorded at the next passes, without another night.
  faults.Fail({"CreateBisect"});
  const uint32_t nights = Schedule().runs();
  Passes(3);
  std::vector<v1::Regression> found = Regressions();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(Schedule().runs(), nights);
  EXPECT_TRUE(found[0].bisect_id().empty());
  EXPECT_TRUE(found[0].note().empty()) << found[0].note();
  EXPECT_GT(faults.Failed("CreateBisect"), 0);
  EXPECT_TRUE(nightly_->ListBisects(0)->bisects().empty());

  // Nor while its first state cannot be stored with the regression's note.
  faults.Fail({"SaveBisectAndNoteRegression"});
  Passes(3);
  EXPECT_TRUE(nightly_->ListBisects(0)->bisects().empty());
  EXPECT_TRUE(Regressions()[0].note().empty()) << Regressions()[0].note();

  // It starts once writes work.
  faults.Clear();
  Settle([&] { return !Regressions()[0].bisect_id().empty(); });
  found = Regressions();
  ASSERT_EQ(found.size(), 1u);
  ASSERT_FALSE(found[0].bisect_id().empty());
  EXPECT_THAT(found[0].note(), HasSubstr("started"));

  // Its end cannot be stored with the note at first: the last run is handled again.
  const int before = faults.Failed("SaveBisectAndNoteRegression");
  faults.Fail({"SaveBisectAndNoteRegression"});
  Settle([&] { return faults.Failed("SaveBisectAndNoteRegression") > before; });
  ASSERT_GT(faults.Failed("SaveBisectAndNoteRegression"), before);
  Passes(3);
  EXPECT_EQ(Bisect(found[0].bisect_id()).status(), v1::BISECT_RUNNING);
  faults.Clear();
  Settle([&] { return Bisect(found[0].bisect_id()).status() != v1::BISECT_RUNNING; });
  const v1::BisectState state = Bisect(found[0].bisect_id());
  ASSERT_EQ(state.status(), v1::BISECT_FOUND) << state.reason();
  EXPECT_EQ(state.first_bad(), "e5");
  EXPECT_EQ(state.spec().regression_id(), found[0].id());
  EXPECT_THAT(Regressions()[0].note(), HasSubstr("first bad e5"));
  EXPECT_EQ(Regressions().size(), 1u);
  EXPECT_EQ(nightly_->ListBisects(0)->bisects_size(), 1);
}

// A user's operation whose write fails is told so (and it is counted); nothing changed.
TEST_F(NightlyFaultsTest, AUsersWriteThatFailsIsReturnedAndCounted) {
  absl::StatusOr<v1::BisectState> started = nightly_->StartBisect(kBisectYaml, "b.yaml");
  ASSERT_TRUE(started.ok()) << started.status();
  nightly_store_->FailWritesForTest(DiskFull());
  EXPECT_EQ(nightly_->CancelBisect(started->id()).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(nightly_->AddSchedule(kScheduleYaml, "s.yaml").status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(nightly_->StartBisect(kBisectYaml, "b.yaml").status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(nightly_->StoreErrors().writes, 3u);
  nightly_store_->FailWritesForTest(absl::OkStatus());
  EXPECT_EQ(Bisect(started->id()).status(), v1::BISECT_RUNNING);
  EXPECT_EQ(nightly_->ListBisects(0)->bisects_size(), 1) << "a refused start left a bisection";
  EXPECT_TRUE(nightly_->ListSchedules()->schedules().empty());
  ASSERT_TRUE(nightly_->CancelBisect(started->id()).ok());
  EXPECT_EQ(Bisect(started->id()).status(), v1::BISECT_CANCELLED);
}

}  // namespace
}  // namespace tlbfleet::nightly
